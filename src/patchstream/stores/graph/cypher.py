"""The graph store over openCypher: reads, walks and the apply adapter every backend shares.

Statements live in ``statements``; what to write for a delta is planned, without I/O, by
``planner``; this module reads what the store holds, runs the plan and answers queries.

Apply reads what the store holds for the file and diffs it against the delta's complete
state, so the result is the same whatever order or how often deltas arrive. Batches read the
fences of all their files at once and skip the stored-state reads of files the store does not
hold yet (a cold index reads one row per file).
"""

from __future__ import annotations

import abc
import json
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from patchstream.schemas.graph import CallResolution, Edge, EdgeType, Reference, Symbol
from patchstream.schemas.state import FileDelta, FileFlags, FileState
from patchstream.stores.graph.base import (
    ApplyResult,
    GraphSnapshot,
    GraphStore,
    Neighbor,
    StoredSymbol,
    capped_definers,
)
from patchstream.stores.graph.fence_reads import FenceReads
from patchstream.stores.graph.history_reads import HistoryReads
from patchstream.stores.graph.history_statements import READ_SNAPSHOT, READ_SNAPSHOT_HEADS
from patchstream.stores.graph.keys import scope_of
from patchstream.stores.graph.planner import (
    EMPTY,
    EdgeRow,
    FenceRow,
    Stored,
    edge_resolution,
    merge_plans,
    plan_apply,
    with_tombstone,
)
from patchstream.stores.graph.runtime_edges import RuntimeEdges
from patchstream.stores.graph.statements import (
    INDEXES,
    MAX_DEPTH,
    READ_FENCES,
    READ_LOCAL_EDGES,
    READ_REF_EDGES,
    READ_SYMBOLS,
    Statement,
    chunked,
    walk_level,
)
from patchstream.stores.graph.view_reads import ViewReads, neighbors, symbol_from_props
from patchstream.stores.graph.walks import Walks

__all__ = ["INDEXES", "CypherGraphStore", "Statement"]


class CypherGraphStore(ViewReads, FenceReads, RuntimeEdges, HistoryReads, GraphStore):
    """Everything but running Cypher: subclasses provide ``_read``, ``_write`` and the index
    DDL, the only dialect difference between FalkorDB and Memgraph."""

    max_walk_rows = 2000  # symbols one callers/callees/impact walk returns at most

    @abc.abstractmethod
    def _read(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]:
        """Run a read-only query in the tenant's graph; a missing graph reads as empty."""

    @abc.abstractmethod
    def _write(self, tenant: str, statements: Sequence[Statement]) -> None:
        """Run the statements in order as one atomic unit in the tenant's graph."""

    @abc.abstractmethod
    def execute(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]:
        """Run one query that may write, atomically, in the tenant's graph; its rows. The
        agent state store builds compare-and-set on it: one query is one transaction."""

    # -- writes ---------------------------------------------------------------------------

    def apply(self, delta: FileDelta) -> ApplyResult:
        return self.apply_many([delta])[0]

    def apply_many(self, deltas: Sequence[FileDelta]) -> list[ApplyResult]:
        """Apply deltas in order: per tenant, one fence read for the batch, the stored state
        only for files the store holds, and one atomic write per run of distinct files."""
        results: list[ApplyResult] = []
        run: list[FileDelta] = []
        for delta in deltas:
            if run and (delta.tenant != run[0].tenant or _fuid(delta) in {_fuid(d) for d in run}):
                results += self._apply_run(run)
                run = []
            run.append(delta)
        if run:
            results += self._apply_run(run)
        return results

    def _apply_run(self, deltas: list[FileDelta]) -> list[ApplyResult]:
        tenant = deltas[0].tenant
        fences = self._fences(tenant, [_fuid(d) for d in deltas])
        dropped = self.dropped_refs(tenant)
        now = time.time()
        plans: list[list[Statement]] = []
        results = []
        for delta in deltas:
            scope = scope_of(delta.tenant, delta.repo, delta.ref, delta.workspace)
            fence = with_tombstone(fences.get(_fuid(delta)), dropped.get(scope))
            held = fence is not None and not fence.deleted
            stored = self._stored(tenant, _fuid(delta)) if held else EMPTY
            plan = plan_apply(delta, fence, stored, now)
            plans.append(plan.statements)
            results.append(plan.result)
        statements = merge_plans(plans)
        if statements:
            self._write(tenant, list(chunked(statements)))
        return results

    def _fences(self, tenant: str, fuids: list[str]) -> dict[str, FenceRow]:
        rows = self._read(tenant, READ_FENCES, {"uids": fuids})
        return {r[0]: FenceRow(None if r[1] is None else int(r[1]), bool(r[2]), r[3], r[4])
                for r in rows}  # fmt: skip

    def _stored(self, tenant: str, fuid: str) -> Stored:
        params = {"fuid": fuid}
        fingerprints = {
            row[0]: (row[1], row[2]) for row in self._read(tenant, READ_SYMBOLS, params)
        }
        local = {
            (src, edge_type, dst, edge_resolution(edge_type, res))
            for src, edge_type, dst, res in self._read(tenant, READ_LOCAL_EDGES, params)
        }
        refs: dict[EdgeRow, set[str]] = defaultdict(set)
        for src, edge_type, dst, res, key in self._read(tenant, READ_REF_EDGES, params):
            refs[(src, edge_type, dst, edge_resolution(edge_type, res))].add(key)
        return Stored(fingerprints, local, dict(refs))

    def delete_ref(self, tenant: str, repo: str, ref: str) -> int:
        if not tenant:
            return 0
        scope = scope_of(tenant, repo, ref)
        # Through the fences (indexed by scope): every applied file has one.
        by_fence = "MATCH (f:Fence {scope: $scope}) MATCH (s:Symbol {file_uid: f.uid})"
        count = self._read(tenant, f"{by_fence} RETURN count(s)", {"scope": scope})
        self._write(
            tenant,
            [
                (f"{by_fence} DETACH DELETE s", {"scope": scope}),
                ("MATCH (f:Fence {scope: $scope}) DELETE f", {"scope": scope}),
                (
                    "MATCH (w:Want) WHERE w.uid STARTS WITH $prefix DETACH DELETE w",
                    {"prefix": f"{scope}|"},
                ),
            ],
        )
        return int(count[0][0]) if count else 0

    # -- reads ----------------------------------------------------------------------------

    def symbol(self, tenant: str, symbol_id: str, ref: str = "main") -> StoredSymbol | None:
        if not tenant:
            return None
        view = self.view(tenant, _repo_of(symbol_id), ref)
        if view is not None:
            return self.view_symbol(view, symbol_id)
        rows = self._read(
            tenant,
            "MATCH (s:Symbol {uid: $uid}) WHERE s.tenant = $tenant RETURN properties(s)",
            {"uid": f"{scope_of(tenant, _repo_of(symbol_id), ref)}|{symbol_id}", "tenant": tenant},
        )
        return symbol_from_props(rows[0][0]) if rows else None

    def symbols_by_name(
        self, tenant: str, name: str, repo: str | None = None, ref: str | None = None
    ) -> list[StoredSymbol]:
        if not tenant or not name:
            return []
        view = self.view(tenant, repo, ref) if repo and ref else None
        if view is not None:
            return self.view_symbols_by_name(view, name)
        # A plain read never sees an overlay's rows (they carry the base's ``ref`` too).
        rows = self._read(
            tenant,
            "MATCH (s:Symbol) WHERE s.tenant = $tenant "
            "AND (s.name = $name OR s.qualified_name = $name) "
            "AND ($repo IS NULL OR s.repo = $repo) AND ($ref IS NULL OR s.ref = $ref) "
            "AND s.workspace IS NULL "
            "RETURN properties(s) ORDER BY s.id",
            {"tenant": tenant, "name": name, "repo": repo, "ref": ref},
        )
        return [symbol_from_props(r[0]) for r in rows]

    def definers(
        self, tenant: str, names: Sequence[str], repo: str | None = None,
        ref: str | None = None, at_most: int | None = None,
    ) -> dict[str, set[str]]:  # fmt: skip
        found: dict[str, set[str]] = {name: set() for name in names}
        if not tenant or not names or (repo and ref and self.view(tenant, repo, ref)):
            if not names or not tenant:
                return found
            return super().definers(tenant, names, repo, ref, at_most)
        # One query, each side on its own index (an OR of the two reads every symbol); a
        # name's paths collected in the store, and sent only when at most ``$cap`` (at 20k
        # files ``__init__`` alone came back as ~10k rows: ~80 ms of a search).
        where = ("WHERE s.tenant = $tenant AND ($repo IS NULL OR s.repo = $repo) "
                 "AND ($ref IS NULL OR s.ref = $ref) AND s.workspace IS NULL ")  # fmt: skip
        each = (
            "WITH n, collect(DISTINCT s.path) AS paths "
            "RETURN n, size(paths), CASE WHEN size(paths) > $cap THEN [] ELSE paths END"
        )
        cap = at_most if at_most is not None else 2**31
        rows = self._read(
            tenant,
            f"UNWIND $names AS n MATCH (s:Symbol {{name: n}}) {where}{each} "
            f"UNION UNWIND $names AS n MATCH (s:Symbol {{qualified_name: n}}) {where}{each}",
            {"tenant": tenant, "names": list(names), "repo": repo, "ref": ref, "cap": cap},
        )
        over: set[str] = set()  # a side past the cap sent no paths: the name is past it too
        for name, count, paths in rows:
            found.setdefault(str(name), set()).update(str(path) for path in paths or [])
            if int(count) > cap:
                over.add(str(name))
        return capped_definers({n: set() if n in over else p for n, p in found.items()}, at_most)

    def _walks(
        self, tenant: str, symbol_ids: Sequence[str], depth: int, ref: str, types: str,
        inbound: bool, inherited: bool = False, limit: int | None = None,
        weakest: CallResolution = CallResolution.INFERRED,
    ) -> dict[str, list[Neighbor]]:  # fmt: skip
        """Breadth first from each symbol, one query per level for all of them over
        DISTINCT nodes, at most ``max_walk_rows`` symbols each: a fan-out graph costs rows,
        never paths (a path pattern ``*1..5`` over a hub enumerates every path and ran 36 s
        at depth 5 on one 35 KB file)."""
        found: dict[str, list[Neighbor]] = {sid: [] for sid in symbol_ids}
        if not tenant:
            return found
        depth = max(1, min(int(depth), MAX_DEPTH))
        by_repo: dict[str, list[str]] = {}
        for sid in found:
            by_repo.setdefault(_repo_of(sid), []).append(sid)
        cap = min(limit or self.max_walk_rows, self.max_walk_rows)
        query = walk_level(types, inbound, inherited, weakest)
        allowed = CallResolution.at_least(weakest)
        for repo, ids in by_repo.items():
            view, starts = self.view_with(tenant, repo, ref, ids)
            if view is not None:
                walks = self.view_walks(view, ids, depth, tuple(types.split("|")), inbound,
                                        inherited, starts, cap, weakest)  # fmt: skip
            else:
                scope = scope_of(tenant, repo, ref)
                walks = Walks({sid: {"uid": f"{scope}|{sid}"} for sid in ids}, cap)
                for level in range(1, depth + 1):
                    frontier = [p["uid"] for p in walks.frontier()]
                    if not frontier:
                        break
                    room = walks.room()
                    params = {"frontier": frontier, "tenant": tenant, "cap": room,
                              "allowed": allowed}  # fmt: skip
                    rows = self._read(tenant, query, params)
                    if len(rows) >= room and len(parts := walks.parts()) > 1:
                        rows = [row for uids, own in parts for row in self._read(
                            tenant, query, {**params, "frontier": uids, "cap": own})]  # fmt: skip
                    walks.advance(((src, uid, props, res) for srcs, uid, props in rows
                                   for src, res in srcs), level)  # fmt: skip
            for sid, reached in walks.found().items():
                found[sid] = neighbors(reached)
        return found

    def walks(
        self, tenant: str, kind: str, symbol_ids: Sequence[str], depth: int, ref: str = "main",
        limit: int | None = None, weakest: CallResolution = CallResolution.INFERRED,
    ) -> dict[str, list[Neighbor]]:  # fmt: skip
        """``callers``, ``callees`` or ``impact`` of each symbol, read together; at most
        ``limit`` symbols each (nearest first), which bounds the rows read, not just kept."""
        types, max_depth, inbound, inherited = _WALKS[kind]
        return self._walks(tenant, symbol_ids, min(depth, max_depth), ref, types, inbound,
                           inherited, limit, weakest)  # fmt: skip

    def callers(
        self, tenant: str, symbol_id: str, depth: int = 1, ref: str = "main",
        weakest: CallResolution = CallResolution.INFERRED,
    ) -> list[Neighbor]:  # fmt: skip
        return self.walks(tenant, "callers", [symbol_id], depth, ref, weakest=weakest)[symbol_id]

    def callees(
        self, tenant: str, symbol_id: str, depth: int = 1, ref: str = "main",
        weakest: CallResolution = CallResolution.INFERRED,
    ) -> list[Neighbor]:  # fmt: skip
        return self.walks(tenant, "callees", [symbol_id], depth, ref, weakest=weakest)[symbol_id]

    def impact(
        self, tenant: str, symbol_id: str, depth: int = 3, ref: str = "main",
        weakest: CallResolution = CallResolution.INFERRED,
    ) -> list[Neighbor]:  # fmt: skip
        return self.walks(tenant, "impact", [symbol_id], depth, ref, weakest=weakest)[symbol_id]

    def file_symbols(self, tenant: str, repo: str, ref: str, path: str) -> list[StoredSymbol]:
        if not tenant:
            return []
        view = self.view(tenant, repo, ref)
        if view is not None:
            return self.view_file_symbols(view, path)
        rows = self._read(
            tenant,
            "MATCH (s:Symbol {file_uid: $fuid}) WHERE s.tenant = $tenant "
            "RETURN properties(s) ORDER BY s.id",
            {"fuid": f"{scope_of(tenant, repo, ref)}|{path}", "tenant": tenant},
        )
        return [symbol_from_props(r[0]) for r in rows]

    def file_state(
        self, tenant: str, repo: str, ref: str, path: str, workspace: str | None = None
    ) -> FileState | None:
        if not tenant:
            return None
        fuid = f"{scope_of(tenant, repo, ref, workspace)}|{path}"
        fence = self._read(
            tenant,
            "MATCH (f:Fence {uid: $fuid}) RETURN f.version, f.deleted, f.content_hash, "
            "f.language, f.flags",
            {"fuid": fuid},
        )
        if not fence or fence[0][1]:
            return None
        version, _deleted, content_hash, language, flags = fence[0]
        symbol_fields = set(Symbol.model_fields)
        symbols = [
            Symbol.model_validate({k: v for k, v in r[0].items() if k in symbol_fields})
            for r in self._read(
                tenant, "MATCH (s:Symbol {file_uid: $fuid}) RETURN properties(s)", {"fuid": fuid}
            )
        ]
        stored = self._stored(tenant, fuid)
        edges = [Edge(type=EdgeType(t), src=s, dst=d, resolution=_resolution(res))
                 for s, t, d, res in stored.local_edges]  # fmt: skip
        edges += [
            Edge(type=EdgeType(t), src=s, dst=d, ref=Reference.from_dst(d),
                 resolution=_resolution(res))
            for s, t, d, res in stored.ref_edges
        ]  # fmt: skip
        return FileState(
            tenant=tenant,
            repo=repo,
            ref=ref,
            workspace=workspace,
            path=path,
            version=int(version),
            language=language,
            content_hash=content_hash or "",
            size_bytes=0,
            flags=FileFlags(**{name: True for name in flags or []}),
            symbols=tuple(sorted(symbols, key=lambda s: s.id)),
            edges=tuple(sorted(edges, key=Edge.sort_key)),
        )

    def snapshot(self, tenant: str) -> GraphSnapshot:
        snap = GraphSnapshot()
        if not tenant:
            return snap
        params = {"tenant": tenant}
        for (props,) in self._read(
            tenant, "MATCH (s:Symbol) WHERE s.tenant = $tenant RETURN properties(s)", params
        ):
            # fp is a hash over tenant-specific keys; the properties themselves are compared.
            visible = {k: v for k, v in props.items() if k != "fp"}
            snap.symbols.add((props["scope"], props["id"], json.dumps(visible, sort_keys=True)))
        for src, edge_type, dst, res in self._read(
            tenant,
            "MATCH (s:Symbol)-[r]->(t:Symbol) WHERE s.tenant = $tenant "
            "RETURN s.uid, type(r), t.uid, r.resolution",
            params,
        ):
            snap.edges.add((src, edge_type, dst))
            if (value := edge_resolution(edge_type, res)) is not None:
                snap.resolutions.add((src, edge_type, dst, value))
        for src, edge_type, dst, res in self._read(
            tenant,
            "MATCH (s:Symbol)-[r:REFERS]->(w:Want) WHERE s.tenant = $tenant "
            "RETURN s.uid, r.type, r.dst, r.resolution",
            params,
        ):
            snap.edges.add((src, f"REFERS:{edge_type}", dst))
            if (value := edge_resolution(edge_type, res)) is not None:
                snap.resolutions.add((src, f"REFERS:{edge_type}", dst, value))
        for uid, version, deleted in self._read(
            tenant,
            "MATCH (f:Fence) WHERE f.tenant = $tenant RETURN f.uid, f.version, f.deleted",
            params,
        ):
            snap.fences[uid] = (int(version), bool(deleted))
        for scope, sha, parents, changes in self._read(tenant, READ_SNAPSHOT, params):
            touched = sorted(json.dumps(c) for c in changes if c[0] is not None)
            snap.commits.add((scope, sha, json.dumps([parents, touched])))
        for uid, sha in self._read(tenant, READ_SNAPSHOT_HEADS, params):
            snap.heads[uid] = sha
        return snap

    def want_count(self, tenant: str) -> int:
        """Want nodes of a tenant (tests check none is orphaned)."""
        rows = self._read(
            tenant, "MATCH (w:Want) WHERE w.uid STARTS WITH $p RETURN count(w)", {"p": f"{tenant}|"}
        )
        return int(rows[0][0]) if rows else 0


# walk -> (edge types, deepest depth, inbound, through inheritance)
_WALKS = {
    "callers": ("CALLS|INSTANTIATES", 2, True, True),
    "callees": ("CALLS|INSTANTIATES", 2, False, False),
    "impact": ("CALLS|INSTANTIATES|OVERRIDES", MAX_DEPTH, True, False),
}


def _resolution(value: str | None) -> CallResolution | None:
    return CallResolution(value) if value is not None else None


def _repo_of(symbol_id: str) -> str:
    return symbol_id.split("::", 1)[0]


def _fuid(delta: FileDelta) -> str:
    return f"{scope_of(delta.tenant, delta.repo, delta.ref, delta.workspace)}|{delta.path}"
