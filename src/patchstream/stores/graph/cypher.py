"""The openCypher every graph adapter shares, and the apply algorithm built on it.

Model (one graph per tenant on FalkorDB, one database on Memgraph; every node carries
``tenant`` either way):

- ``(:Symbol {uid, id, tenant, repo, ref, path, file_uid, kind, ..., rkey, fp})`` where
  ``uid = scope|id`` and ``rkey`` is the key references use to find it (see ``keys``).
- Edges inside a file are typed relationships without ``via``.
- A reference out of the file is ``(s)-[:REFERS {type, dst}]->(:Want {uid: key})`` for each
  candidate key; when a symbol with that ``rkey`` exists the typed edge is materialized as
  ``(s)-[:TYPE {via: dst}]->(t)``. Deleting ``t`` (DETACH) drops the materialized edge and
  leaves the ``REFERS``: the reference is unresolved again, never dangling.
- Cross-file overrides are materialized as ``OVERRIDES {via: '<inherit>'}``.
- ``(:Fence {uid: file_uid, version, applied_at, deleted})`` holds each file's applied
  version; it stays after a delete so late, older deliveries are still refused.

Apply reads what the store holds for the file and diffs it against the delta's complete
state, so the result is the same whatever order or how often deltas arrive.
"""

from __future__ import annotations

import abc
import json
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from patchstream.parsing.hashing import hash_bytes
from patchstream.schemas.graph import Edge, EdgeType, Reference, Symbol, SymbolKind
from patchstream.schemas.state import FileDelta, FileFlags, FileState
from patchstream.stores.graph.base import (
    ApplyResult,
    FileVersion,
    GraphSnapshot,
    GraphStore,
    Neighbor,
    RepoVersion,
    SessionWrite,
    StoredSymbol,
)
from patchstream.stores.graph.keys import reference_keys, scope_of, symbol_key

Statement = tuple[str, dict[str, Any]]

INHERITED = "<inherit>"
REF_TYPES = (EdgeType.CALLS, EdgeType.IMPORTS, EdgeType.INHERITS_FROM, EdgeType.INSTANTIATES)
INDEXES = (
    ("Symbol", "uid"),
    ("Symbol", "file_uid"),
    ("Symbol", "rkey"),
    ("Symbol", "parent_uid"),
    ("Symbol", "name"),
    ("Symbol", "qualified_name"),
    ("Want", "uid"),
    ("Fence", "uid"),
    ("Fence", "scope"),
)
_MAX_DEPTH = 5
_ROWS_PER_STATEMENT = 500

READ_FENCE = "MATCH (f:Fence {uid: $fuid}) RETURN f.version, f.deleted, f.applied_at, f.module"
READ_SYMBOLS = "MATCH (s:Symbol {file_uid: $fuid}) RETURN s.id, s.fp, s.rkey"
READ_LOCAL_EDGES = (
    "MATCH (s:Symbol {file_uid: $fuid})-[r]->(t:Symbol) WHERE r.via IS NULL "
    "RETURN s.id, type(r), t.id"
)
READ_REF_EDGES = (
    "MATCH (s:Symbol {file_uid: $fuid})-[r:REFERS]->(w:Want) RETURN s.id, r.type, r.dst, w.uid"
)
DELETE_SYMBOLS = "UNWIND $uids AS uid MATCH (s:Symbol {uid: uid}) DETACH DELETE s"
UPSERT_SYMBOLS = "UNWIND $rows AS row MERGE (s:Symbol {uid: row.uid}) SET s += row"
DELETE_REFERS = (
    "UNWIND $rows AS row MATCH (s:Symbol {uid: row.src})-[r:REFERS]->(:Want) "
    "WHERE r.type = row.type AND r.dst = row.dst DELETE r"
)
ADD_REFERS = (
    "UNWIND $rows AS row MATCH (s:Symbol {uid: row.src}) UNWIND row.keys AS key "
    "MERGE (w:Want {uid: key}) MERGE (s)-[:REFERS {type: row.type, dst: row.dst}]->(w)"
)
DROP_RESOLVED_INTO = (
    "UNWIND $uids AS uid MATCH (:Symbol)-[r]->(t:Symbol {uid: uid}) "
    "WHERE r.via IS NOT NULL DELETE r"
)
# Each rule is written twice, anchored on either end's indexed ``file_uid``, because an
# OR across both ends makes planners scan every edge of the type.
DROP_INHERITED_OVERRIDES = (
    "MATCH (m:Symbol {file_uid: $fuid})-[r:OVERRIDES]->(:Symbol) WHERE r.via = $via DELETE r",
    "MATCH (:Symbol)-[r:OVERRIDES]->(b:Symbol {file_uid: $fuid}) WHERE r.via = $via DELETE r",
)
ADD_INHERITED_OVERRIDES = (
    "MATCH (c:Symbol {file_uid: $fuid})-[:INHERITS_FROM]->(b:Symbol) "
    "WHERE c.file_uid <> b.file_uid WITH c, b "
    "MATCH (m:Symbol {parent_uid: c.uid}) WITH m, b "
    "MATCH (bm:Symbol {parent_uid: b.uid}) "
    "WHERE m.name = bm.name AND m.kind = 'function' AND bm.kind = 'function' "
    "MERGE (m)-[:OVERRIDES {via: $via}]->(bm)",
    "MATCH (b:Symbol {file_uid: $fuid})<-[:INHERITS_FROM]-(c:Symbol) "
    "WHERE c.file_uid <> b.file_uid WITH c, b "
    "MATCH (m:Symbol {parent_uid: c.uid}) WITH m, b "
    "MATCH (bm:Symbol {parent_uid: b.uid}) "
    "WHERE m.name = bm.name AND m.kind = 'function' AND bm.kind = 'function' "
    "MERGE (m)-[:OVERRIDES {via: $via}]->(bm)",
)
UPSERT_FENCE = "MERGE (f:Fence {uid: $fuid}) SET f += $props"
DROP_ORPHAN_WANTS = (
    "UNWIND $keys AS key MATCH (w:Want {uid: key}) WHERE NOT (w)<-[:REFERS]-() DELETE w"
)


def _delete_local(edge_type: str) -> str:
    return (
        f"UNWIND $rows AS row MATCH (s:Symbol {{uid: row.src}})-[r:{edge_type}]->"
        f"(t:Symbol {{uid: row.dst}}) WHERE r.via IS NULL DELETE r"
    )


def _add_local(edge_type: str) -> str:
    return (
        f"UNWIND $rows AS row MATCH (s:Symbol {{uid: row.src}}) "
        f"MATCH (t:Symbol {{uid: row.dst}}) MERGE (s)-[:{edge_type}]->(t)"
    )


def _delete_resolved(edge_type: str) -> str:
    return (
        f"UNWIND $rows AS row MATCH (s:Symbol {{uid: row.src}})-[r:{edge_type}]->(:Symbol) "
        f"WHERE r.via = row.dst DELETE r"
    )


# WITH splits the patterns so planners start from the indexed lookups instead of scanning
# every Symbol (FalkorDB otherwise plans a label scan: 250x slower at 10k symbols).
def _resolve_out(edge_type: str) -> str:
    return (
        f"MATCH (s:Symbol {{file_uid: $fuid}})-[r:REFERS]->(w:Want) WHERE r.type = '{edge_type}' "
        f"WITH s, r, w MATCH (t:Symbol {{rkey: w.uid}}) WHERE t.uid <> s.uid "
        f"MERGE (s)-[:{edge_type} {{via: r.dst}}]->(t)"
    )


def _resolve_in(edge_type: str) -> str:
    return (
        f"UNWIND $keys AS key MATCH (w:Want {{uid: key}})<-[r:REFERS]-(s:Symbol) "
        f"WHERE r.type = '{edge_type}' WITH s, r, key "
        f"MATCH (t:Symbol {{rkey: key}}) WHERE t.uid <> s.uid "
        f"MERGE (s)-[:{edge_type} {{via: r.dst}}]->(t)"
    )


@dataclass(frozen=True)
class _Stored:
    fingerprints: dict[str, tuple[str, str | None]]  # id -> (fp, rkey)
    local_edges: set[tuple[str, str, str]]  # (src id, type, dst id)
    ref_edges: dict[tuple[str, str, str], set[str]]  # (src id, type, dst) -> want keys


def _fingerprint(symbol: Symbol, rkey: str | None) -> str:
    return hash_bytes(f"{symbol.model_dump_json()}|{rkey}".encode())


def _module_of(delta: FileDelta, stored_module: str | None) -> str:
    for symbol in delta.symbols:
        if symbol.kind is SymbolKind.MODULE:
            return symbol.qualified_name
    return stored_module or delta.path


def _symbol_from_props(props: dict[str, Any]) -> StoredSymbol:
    return StoredSymbol(
        id=props["id"],
        kind=props["kind"],
        name=props["name"],
        qualified_name=props["qualified_name"],
        repo=props["repo"],
        ref=props["ref"],
        path=props["path"],
        start_line=int(props["start_line"]),
        end_line=int(props["end_line"]),
        signature=props.get("signature"),
        doc=props.get("doc"),
        parent_id=props.get("parent_id"),
        language=props.get("language"),
        content_hash=props.get("content_hash"),
    )


class CypherGraphStore(GraphStore):
    """Everything but running Cypher: subclasses provide ``_read``, ``_write`` and the index
    DDL, the only dialect difference between FalkorDB and Memgraph."""

    max_walk_rows = 2000  # symbols one callers/callees/impact walk returns at most

    @abc.abstractmethod
    def _read(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]:
        """Run a read-only query in the tenant's graph; a missing graph reads as empty."""

    @abc.abstractmethod
    def _write(self, tenant: str, statements: Sequence[Statement]) -> None:
        """Run the statements in order as one atomic unit in the tenant's graph."""

    # -- writes ---------------------------------------------------------------------------

    def apply(self, delta: FileDelta) -> ApplyResult:
        scope = scope_of(delta.tenant, delta.repo, delta.ref, delta.workspace)
        fuid = f"{scope}|{delta.path}"
        fence = self._read(delta.tenant, READ_FENCE, {"fuid": fuid})
        if fence and fence[0][0] is not None and int(fence[0][0]) >= delta.version:
            return ApplyResult(applied=False, reason="stale")
        stored = self._stored(delta.tenant, fuid)
        stored_module: str | None = fence[0][3] if fence else None
        statements: list[Statement] = []
        if delta.op == "delete":
            new_symbols: dict[str, Symbol] = {}
            new_edges: set[Edge] = set()
            module = stored_module or delta.path
        else:
            new_symbols = {s.id: s for s in delta.symbols}
            new_edges = set(delta.edges)
            module = _module_of(delta, stored_module)

        def uid(symbol_id: str) -> str:
            return f"{scope}|{symbol_id}"

        keys = {sid: symbol_key(scope, module, s) for sid, s in new_symbols.items()}
        rows = []
        for sid, symbol in new_symbols.items():
            fp = _fingerprint(symbol, keys[sid])
            if stored.fingerprints.get(sid, ("", None))[0] == fp:
                continue
            rows.append(
                {
                    **symbol.model_dump(mode="json"),
                    "uid": uid(sid),
                    "tenant": delta.tenant,
                    "repo": delta.repo,
                    "ref": delta.ref,
                    "workspace": delta.workspace,
                    "scope": scope,
                    "file_uid": fuid,
                    "parent_uid": uid(symbol.parent_id) if symbol.parent_id else None,
                    "module": module,
                    "rkey": keys[sid],
                    "fp": fp,
                }
            )
        removed_ids = sorted(stored.fingerprints.keys() - new_symbols.keys())
        new_local = {(e.src, e.type.value, e.dst) for e in new_edges if e.ref is None}
        new_refs = {(e.src, e.type.value, e.dst): e for e in new_edges if e.ref is not None}
        local_gone = stored.local_edges - new_local
        local_new = new_local - stored.local_edges
        refs_gone = stored.ref_edges.keys() - new_refs.keys()
        refs_new = new_refs.keys() - stored.ref_edges.keys()

        for edge_type in {t for _, t, _ in refs_gone}:
            gone_rows = [{"src": uid(s), "dst": d} for s, t, d in refs_gone if t == edge_type]
            statements.append((_delete_resolved(edge_type), {"rows": gone_rows}))
        if refs_gone:
            statements.append(
                (
                    DELETE_REFERS,
                    {"rows": [{"src": uid(s), "type": t, "dst": d} for s, t, d in refs_gone]},
                )
            )
        for edge_type, group in _by_type(local_gone).items():
            statements.append((_delete_local(edge_type), {"rows": _edge_rows(group, uid)}))
        if removed_ids:
            statements.append((DELETE_SYMBOLS, {"uids": [uid(s) for s in removed_ids]}))
        if rows:
            statements.append((UPSERT_SYMBOLS, {"rows": rows}))
        for edge_type, group in _by_type(local_new).items():
            statements.append((_add_local(edge_type), {"rows": _edge_rows(group, uid)}))
        if refs_new:
            ref_rows = []
            for key in sorted(refs_new):
                edge = new_refs[key]
                assert edge.ref is not None
                ref_rows.append(
                    {
                        "src": uid(edge.src),
                        "type": edge.type.value,
                        "dst": edge.dst,
                        "keys": reference_keys(scope, edge.ref, delta.language),
                    }
                )
            statements.append((ADD_REFERS, {"rows": ref_rows}))
        # Symbols that are new here, or findable under a new key, may complete references
        # other files made before this one arrived.
        rekeyed = [
            sid
            for sid in new_symbols
            if sid in stored.fingerprints and stored.fingerprints[sid][1] != keys[sid]
        ]
        if rekeyed:
            statements.append((DROP_RESOLVED_INTO, {"uids": [uid(s) for s in rekeyed]}))
        incoming = sorted(
            {
                k
                for sid, k in keys.items()
                if k is not None and (sid not in stored.fingerprints or sid in rekeyed)
            }
        )
        if new_symbols:
            for edge_type in REF_TYPES:
                statements.append((_resolve_out(edge_type.value), {"fuid": fuid}))
                if incoming:
                    statements.append((_resolve_in(edge_type.value), {"keys": incoming}))
        for query in (*DROP_INHERITED_OVERRIDES, *ADD_INHERITED_OVERRIDES):
            statements.append((query, {"fuid": fuid, "via": INHERITED}))
        statements.append(
            (
                UPSERT_FENCE,
                {
                    "fuid": fuid,
                    "props": {
                        "tenant": delta.tenant,
                        "repo": delta.repo,
                        "ref": delta.ref,
                        "scope": scope,
                        "path": delta.path,
                        "version": delta.version,
                        "deleted": delta.op == "delete",
                        "applied_at": time.time(),
                        "module": module,
                        "content_hash": delta.content_hash,
                        "language": delta.language,
                        "flags": delta.flags.raised(),
                        "source": delta.source,
                        "session_id": delta.session_id,
                        "occurred_at": delta.occurred_at.timestamp() if delta.occurred_at else None,
                        "changed": sorted(r["id"] for r in rows),
                    },
                },
            )
        )
        orphan_keys = sorted({k for gone in refs_gone for k in stored.ref_edges[gone]})
        if orphan_keys:
            statements.append((DROP_ORPHAN_WANTS, {"keys": orphan_keys}))
        self._write(delta.tenant, list(_chunked(statements)))
        return ApplyResult(
            applied=True,
            symbols_written=len(rows),
            symbols_removed=len(removed_ids),
            edges_written=len(local_new) + len(refs_new),
            edges_removed=len(local_gone) + len(refs_gone),
        )

    def _stored(self, tenant: str, fuid: str) -> _Stored:
        params = {"fuid": fuid}
        fingerprints = {
            row[0]: (row[1], row[2]) for row in self._read(tenant, READ_SYMBOLS, params)
        }
        local = {(r[0], r[1], r[2]) for r in self._read(tenant, READ_LOCAL_EDGES, params)}
        refs: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        for src, edge_type, dst, key in self._read(tenant, READ_REF_EDGES, params):
            refs[(src, edge_type, dst)].add(key)
        return _Stored(fingerprints, local, dict(refs))

    def delete_ref(self, tenant: str, repo: str, ref: str) -> int:
        if not tenant:
            return 0
        scope = scope_of(tenant, repo, ref)
        count = self._read(
            tenant, "MATCH (s:Symbol {scope: $scope}) RETURN count(s)", {"scope": scope}
        )
        self._write(
            tenant,
            [
                ("MATCH (s:Symbol {scope: $scope}) DETACH DELETE s", {"scope": scope}),
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
        rows = self._read(
            tenant,
            "MATCH (s:Symbol {uid: $uid}) WHERE s.tenant = $tenant RETURN properties(s)",
            {"uid": f"{scope_of(tenant, _repo_of(symbol_id), ref)}|{symbol_id}", "tenant": tenant},
        )
        return _symbol_from_props(rows[0][0]) if rows else None

    def symbols_by_name(
        self, tenant: str, name: str, repo: str | None = None, ref: str | None = None
    ) -> list[StoredSymbol]:
        if not tenant or not name:
            return []
        rows = self._read(
            tenant,
            "MATCH (s:Symbol) WHERE s.tenant = $tenant "
            "AND (s.name = $name OR s.qualified_name = $name) "
            "AND ($repo IS NULL OR s.repo = $repo) AND ($ref IS NULL OR s.ref = $ref) "
            "RETURN properties(s) ORDER BY s.id",
            {"tenant": tenant, "name": name, "repo": repo, "ref": ref},
        )
        return [_symbol_from_props(r[0]) for r in rows]

    def _walk(
        self, tenant: str, symbol_id: str, depth: int, ref: str, types: str, inbound: bool
    ) -> list[Neighbor]:
        """Breadth first, one query per level over DISTINCT nodes, at most ``max_walk_rows``
        symbols: a fan-out graph costs rows, never paths (a path pattern ``*1..5`` over a hub
        enumerates every path and ran 36 s at depth 5 on one 35 KB file)."""
        if not tenant:
            return []
        depth = max(1, min(int(depth), _MAX_DEPTH))
        step = f"(t)<-[:{types}]-(n:Symbol)" if inbound else f"(t)-[:{types}]->(n:Symbol)"
        start = f"{scope_of(tenant, _repo_of(symbol_id), ref)}|{symbol_id}"
        seen = {start}
        frontier = [start]
        found: list[Neighbor] = []
        for level in range(1, depth + 1):
            room = self.max_walk_rows - len(found)
            if not frontier or room <= 0:
                break
            rows = self._read(
                tenant,
                f"UNWIND $frontier AS uid MATCH (t:Symbol {{uid: uid}}) MATCH {step} "
                "WHERE n.tenant = $tenant RETURN DISTINCT n.uid, properties(n) LIMIT $cap",
                {"frontier": frontier, "tenant": tenant, "cap": room + len(seen)},
            )
            frontier = []
            for uid, props in rows:
                if uid in seen or len(found) >= self.max_walk_rows:
                    continue
                seen.add(uid)
                frontier.append(uid)
                found.append(Neighbor(_symbol_from_props(props), level))
        return sorted(found, key=lambda n: (n.depth, n.symbol.id))

    def callers(
        self, tenant: str, symbol_id: str, depth: int = 1, ref: str = "main"
    ) -> list[Neighbor]:
        return self._walk(tenant, symbol_id, min(depth, 2), ref, "CALLS|INSTANTIATES", True)

    def callees(
        self, tenant: str, symbol_id: str, depth: int = 1, ref: str = "main"
    ) -> list[Neighbor]:
        return self._walk(tenant, symbol_id, min(depth, 2), ref, "CALLS|INSTANTIATES", False)

    def impact(
        self, tenant: str, symbol_id: str, depth: int = 3, ref: str = "main"
    ) -> list[Neighbor]:
        return self._walk(tenant, symbol_id, depth, ref, "CALLS|INSTANTIATES|OVERRIDES", True)

    def file_symbols(self, tenant: str, repo: str, ref: str, path: str) -> list[StoredSymbol]:
        if not tenant:
            return []
        rows = self._read(
            tenant,
            "MATCH (s:Symbol {file_uid: $fuid}) WHERE s.tenant = $tenant "
            "RETURN properties(s) ORDER BY s.id",
            {"fuid": f"{scope_of(tenant, repo, ref)}|{path}", "tenant": tenant},
        )
        return [_symbol_from_props(r[0]) for r in rows]

    def file_version(self, tenant: str, repo: str, ref: str, path: str) -> FileVersion | None:
        if not tenant:
            return None
        rows = self._read(tenant, READ_FENCE, {"fuid": f"{scope_of(tenant, repo, ref)}|{path}"})
        if not rows:
            return None
        version, deleted, applied_at, _module = rows[0]
        return FileVersion(int(version), _from_epoch(applied_at), bool(deleted))

    def session_files(
        self, tenant: str, session_id: str, repo: str | None = None, limit: int = 5
    ) -> list[SessionWrite]:
        """The files a session wrote most recently, newest first, with the symbols it changed."""
        if not tenant or not session_id:
            return []
        rows = self._read(
            tenant,
            "MATCH (f:Fence) WHERE f.tenant = $tenant AND f.session_id = $session "
            "AND ($repo IS NULL OR f.repo = $repo) "
            "RETURN f.repo, f.ref, f.path, f.version, f.applied_at, f.deleted, f.changed "
            "ORDER BY f.applied_at DESC LIMIT $limit",
            {"tenant": tenant, "session": session_id, "repo": repo, "limit": int(limit)},
        )
        return [
            SessionWrite(
                repo=r[0],
                ref=r[1],
                path=r[2],
                version=int(r[3]),
                applied_at=_from_epoch(r[4]),
                deleted=bool(r[5]),
                changed=tuple(r[6] or ()),
            )
            for r in rows
        ]

    def file_sources(
        self, tenant: str, scope_paths: list[tuple[str, str, str]]
    ) -> dict[tuple[str, str, str], str]:
        """(repo, ref, path) -> the source of the file's last write (github, agent, ...)."""
        if not tenant or not scope_paths:
            return {}
        uids = [f"{scope_of(tenant, repo, ref)}|{path}" for repo, ref, path in scope_paths]
        rows = self._read(
            tenant,
            "UNWIND $uids AS uid MATCH (f:Fence {uid: uid}) RETURN f.repo, f.ref, f.path, f.source",
            {"uids": uids},
        )
        return {(r[0], r[1], r[2]): r[3] or "snapshot" for r in rows}

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
        edges = [Edge(type=EdgeType(t), src=s, dst=d) for s, t, d in stored.local_edges]
        edges += [
            Edge.to_ref(EdgeType(t), s, Reference.from_dst(d)) for s, t, d in stored.ref_edges
        ]
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

    def repo_version(self, tenant: str, repo: str, ref: str) -> RepoVersion:
        if not tenant:
            return RepoVersion(0, 0, None)
        rows = self._read(
            tenant,
            "MATCH (f:Fence {scope: $scope}) WHERE f.deleted = false "
            "RETURN count(f), max(f.version), max(f.applied_at)",
            {"scope": scope_of(tenant, repo, ref)},
        )
        if not rows or not rows[0][0]:
            return RepoVersion(0, 0, None)
        files, version, applied = rows[0]
        return RepoVersion(int(files), int(version), _from_epoch(applied))

    def count_applied(self, tenant: str, repo: str, ref: str, min_version: int) -> int:
        if not tenant:
            return 0
        rows = self._read(
            tenant,
            "MATCH (f:Fence {scope: $scope}) WHERE f.version >= $v RETURN count(f)",
            {"scope": scope_of(tenant, repo, ref), "v": min_version},
        )
        return int(rows[0][0]) if rows else 0

    def scope_counts(self, tenant: str, repo: str, ref: str) -> tuple[int, int, int]:
        """(symbols, edges between symbols, references out of files) of one branch."""
        if not tenant:
            return (0, 0, 0)
        params = {"scope": scope_of(tenant, repo, ref)}
        counts = []
        for query in (
            "MATCH (s:Symbol {scope: $scope}) RETURN count(s)",
            "MATCH (s:Symbol {scope: $scope})-[r]->(:Symbol) RETURN count(r)",
            "MATCH (s:Symbol {scope: $scope})-[r:REFERS]->(:Want) "
            "RETURN count(DISTINCT s.uid + '|' + r.type + '|' + r.dst)",
        ):
            rows = self._read(tenant, query, params)
            counts.append(int(rows[0][0]) if rows else 0)
        return (counts[0], counts[1], counts[2])

    def file_hashes(self, tenant: str, repo: str, ref: str) -> dict[str, str]:
        if not tenant:
            return {}
        rows = self._read(
            tenant,
            "MATCH (f:Fence {scope: $scope}) WHERE f.deleted = false RETURN f.path, f.content_hash",
            {"scope": scope_of(tenant, repo, ref)},
        )
        return {path: content_hash or "" for path, content_hash in rows}

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
        for src, edge_type, dst in self._read(
            tenant,
            "MATCH (s:Symbol)-[r]->(t:Symbol) WHERE s.tenant = $tenant "
            "RETURN s.uid, type(r), t.uid",
            params,
        ):
            snap.edges.add((src, edge_type, dst))
        for src, edge_type, dst in self._read(
            tenant,
            "MATCH (s:Symbol)-[r:REFERS]->(w:Want) WHERE s.tenant = $tenant "
            "RETURN s.uid, r.type, r.dst",
            params,
        ):
            snap.edges.add((src, f"REFERS:{edge_type}", dst))
        for uid, version, deleted in self._read(
            tenant,
            "MATCH (f:Fence) WHERE f.tenant = $tenant RETURN f.uid, f.version, f.deleted",
            params,
        ):
            snap.fences[uid] = (int(version), bool(deleted))
        return snap

    def want_count(self, tenant: str) -> int:
        """Want nodes of a tenant (tests check none is orphaned)."""
        rows = self._read(
            tenant, "MATCH (w:Want) WHERE w.uid STARTS WITH $p RETURN count(w)", {"p": f"{tenant}|"}
        )
        return int(rows[0][0]) if rows else 0


def _chunked(statements: Iterable[Statement]) -> Iterable[Statement]:
    """Split UNWIND lists so no statement carries more than a few hundred rows."""
    for query, params in statements:
        name = next((k for k in ("rows", "uids", "keys") if k in params), None)
        values = params.get(name) if name else None
        if name is None or not isinstance(values, list) or len(values) <= _ROWS_PER_STATEMENT:
            yield query, params
            continue
        for start in range(0, len(values), _ROWS_PER_STATEMENT):
            yield query, {**params, name: values[start : start + _ROWS_PER_STATEMENT]}


def _repo_of(symbol_id: str) -> str:
    return symbol_id.split("::", 1)[0]


def _by_type(edges: Iterable[tuple[str, str, str]]) -> dict[str, list[tuple[str, str, str]]]:
    grouped: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for edge in sorted(edges):
        grouped[edge[1]].append(edge)
    return grouped


def _edge_rows(edges: list[tuple[str, str, str]], uid: Any) -> list[dict[str, str]]:
    return [{"src": uid(src), "dst": uid(dst)} for src, _, dst in edges]


def _from_epoch(value: Any) -> datetime:
    return datetime.fromtimestamp(float(value), tz=UTC)
