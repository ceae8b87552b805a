"""The apply planner: pure, no I/O. What the store holds for a file plus the file's delta ->
the statements that make the store hold exactly the delta's state.

The planner diffs against what is stored (not against the delta's base), so the result is
the same whatever order or how often deltas arrive.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from patchstream.parsing.hashing import hash_bytes
from patchstream.parsing.prose import is_virtual
from patchstream.schemas.events import view_ref
from patchstream.schemas.graph import CallResolution, Edge, EdgeType, Symbol, SymbolKind
from patchstream.schemas.state import FileDelta
from patchstream.stores.graph.base import ApplyResult
from patchstream.stores.graph.history_statements import HISTORY_STATEMENTS, history_statements
from patchstream.stores.graph.keys import (
    owner_key,
    reference_keys,
    scope_of,
    shadowed,
    symbol_key,
)
from patchstream.stores.graph.statements import (
    ADD_CALL_REFERS,
    ADD_INHERITED_OVERRIDES,
    ADD_REFERS,
    CALL_TYPES,
    DELETE_REFERS,
    DELETE_SYMBOLS,
    DROP_INHERITED_OVERRIDES,
    DROP_ORPHAN_WANTS,
    DROP_RESOLVED_INTO,
    DROP_RUNTIME_EDGES,
    INHERITED,
    LIST_PARAMS,
    MARK_TAILS,
    REF_TYPES,
    RUNTIME,
    UPSERT_FENCES,
    UPSERT_OVERLAY,
    UPSERT_SYMBOLS,
    Statement,
    add_local,
    delete_local,
    delete_resolved,
    resolve_in,
    resolve_out,
)


@dataclass(frozen=True)
class FenceRow:
    """What the store's fence says about a file."""

    version: int | None
    deleted: bool
    module: str | None
    content_hash: str | None = None


# An edge as the planner diffs it: (src id, type, dst, resolution). The resolution is part
# of the identity, so a call that becomes certain (or a guess) is rewritten.
EdgeRow = tuple[str, str, str, str | None]


def edge_resolution(edge_type: str, stored: str | None) -> str | None:
    """A stored edge's resolution: call edges written before resolutions existed are exact."""
    if edge_type not in CALL_TYPES:
        return None
    return stored or CallResolution.EXACT.value


def edge_row(edge: Edge) -> EdgeRow:
    value = edge.resolution.value if edge.resolution is not None else None
    return (edge.src, edge.type.value, edge.dst, edge_resolution(edge.type.value, value))


@dataclass(frozen=True)
class Stored:
    fingerprints: dict[str, tuple[str, str | None]]  # id -> (fp, rkey)
    local_edges: set[EdgeRow]  # dst: a symbol id
    ref_edges: dict[EdgeRow, set[str]]  # dst: a reference string -> want keys


def fingerprint(symbol: Symbol, rkey: str | None) -> str:
    return hash_bytes(f"{symbol.model_dump_json()}|{rkey}".encode())


def module_of(delta: FileDelta, stored_module: str | None) -> str:
    for symbol in delta.symbols:
        if symbol.kind is SymbolKind.MODULE:
            return symbol.qualified_name
    return stored_module or delta.path


EMPTY = Stored({}, set(), {})


@dataclass
class Plan:
    statements: list[Statement] = field(default_factory=list)
    result: ApplyResult = field(default_factory=lambda: ApplyResult(applied=False))


def with_tombstone(fence: FenceRow | None, dropped_at: int | None) -> FenceRow | None:
    """A file's fence, raised to its ref's drop: a delta no newer than the drop is stale, and
    a newer one (the ref made again) starts from nothing."""
    if dropped_at is None or (fence is not None and (fence.version or 0) >= dropped_at):
        return fence
    return FenceRow(dropped_at, True, None)


def plan_apply(delta: FileDelta, fence: FenceRow | None, stored: Stored, now: float) -> Plan:
    """The statements that move the store from ``stored`` (what it holds for the file) to
    the delta's complete state; a stale delta plans nothing."""
    scope = scope_of(delta.tenant, delta.repo, delta.ref, delta.workspace)
    fuid = f"{scope}|{delta.path}"
    if fence is not None and fence.version is not None and fence.version >= delta.version:
        return Plan([], ApplyResult(applied=False, reason="stale"))
    stored_module = fence.module if fence is not None else None
    statements: list[Statement] = []
    if delta.op == "delete":
        new_symbols: dict[str, Symbol] = {}
        new_edges: set[Edge] = set()
        module = stored_module or delta.path
    else:
        new_symbols = {s.id: s for s in delta.symbols}
        new_edges = set(delta.edges)
        module = module_of(delta, stored_module)

    def uid(symbol_id: str) -> str:
        return f"{scope}|{symbol_id}"

    hidden = shadowed(new_symbols.values(), delta.language)
    keys = {sid: None if sid in hidden else symbol_key(scope, module, s)
            for sid, s in new_symbols.items()}  # fmt: skip
    module_uid = next((sid for sid, s in new_symbols.items() if s.kind is SymbolKind.MODULE), "")
    rows = []
    for sid, symbol in new_symbols.items():
        fp = fingerprint(symbol, keys[sid])
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
                "okey": owner_key(scope, symbol, module_uid),
                "fp": fp,
            }
        )
    removed_ids = sorted(stored.fingerprints.keys() - new_symbols.keys())
    new_local = {edge_row(e) for e in new_edges if e.ref is None}
    new_refs = {edge_row(e): e for e in new_edges if e.ref is not None}
    local_gone = stored.local_edges - new_local
    local_new = new_local - stored.local_edges
    refs_gone = stored.ref_edges.keys() - new_refs.keys()
    refs_new = new_refs.keys() - stored.ref_edges.keys()

    for edge_type in {t for _, t, _, _ in refs_gone}:
        gone_rows = [{"src": uid(s), "dst": d} for s, t, d, _ in refs_gone if t == edge_type]
        statements.append((delete_resolved(edge_type), {"rows": gone_rows}))
    if refs_gone:
        statements.append(
            (
                DELETE_REFERS,
                {"rows": [{"src": uid(s), "type": t, "dst": d} for s, t, d, _ in refs_gone]},
            )
        )
    for edge_type, group in _by_type(local_gone).items():
        statements.append((delete_local(edge_type), {"rows": _edge_rows(group, uid)}))
    if removed_ids:
        statements.append((DELETE_SYMBOLS, {"uids": [uid(s) for s in removed_ids]}))
    if rows:
        statements.append((UPSERT_SYMBOLS, {"rows": rows}))
    for edge_type, group in _by_type(local_new).items():
        statements.append((add_local(edge_type), {"rows": _edge_rows(group, uid)}))
    if refs_new:
        # Call references carry their resolution in the MERGE itself, and only the few
        # unresolvable method calls mark their Wants' tails: no per-row SETs.
        plain_rows: list[dict[str, Any]] = []
        call_rows: list[dict[str, Any]] = []
        tails: list[dict[str, str | None]] = []
        for key in sorted(refs_new, key=lambda e: (e[0], e[1], e[2], e[3] or "")):
            edge = new_refs[key]
            assert edge.ref is not None
            wanted = reference_keys(scope, edge.ref, delta.language)
            ref_row: dict[str, Any] = {"src": uid(edge.src), "type": edge.type.value,
                                       "dst": edge.dst, "keys": wanted}  # fmt: skip
            if key[3] is None:
                plain_rows.append(ref_row)
            else:
                call_rows.append({**ref_row, "resolution": key[3]})
            if (tail := name_only_tail(scope, edge)) is not None:
                on_result = "()." + tail.rpartition("|")[2]
                tails += [{"key": k, "tail": tail, **_result_tails(k, on_result, tail)}
                          for k in wanted]  # fmt: skip
        if plain_rows:
            statements.append((ADD_REFERS, {"rows": plain_rows}))
        if call_rows:
            statements.append((ADD_CALL_REFERS, {"rows": call_rows}))
        if tails:
            statements.append((MARK_TAILS, {"rows": tails}))
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
            statements.append((resolve_out(edge_type.value), {"fuids": [fuid]}))
            if incoming:
                statements.append((resolve_in(edge_type.value), {"keys": incoming}))
    for query in (*DROP_INHERITED_OVERRIDES, *ADD_INHERITED_OVERRIDES):
        statements.append((query, {"fuids": [fuid], "via": INHERITED}))
    content_changed = fence is None or fence.content_hash != delta.content_hash
    if fence is not None and content_changed:
        for query in DROP_RUNTIME_EDGES:  # traced at content the file no longer has
            statements.append((query, {"fuids": [fuid], "via": RUNTIME}))
    fence_props = {
        "tenant": delta.tenant,
        "repo": delta.repo,
        "ref": delta.ref,
        "scope": scope,
        "path": delta.path,
        "version": delta.version,
        "deleted": delta.op == "delete",
        "applied_at": now,
        "module": module,
        "content_hash": delta.content_hash,
        **({"traced": False} if content_changed else {}),
        "language": delta.language,
        "flags": delta.flags.raised(),
        "source": delta.source,
        "session_id": delta.session_id,
        "occurred_at": delta.occurred_at.timestamp() if delta.occurred_at else None,
        "changed": sorted(r["id"] for r in rows),
        # What ``scope_counts`` sums: counting them in the graph (one REFERS edge per
        # candidate key) timed out at 20k files.
        "references": len({(e.src, e.type, e.dst) for e in new_edges if e.ref is not None}),
    }
    statements.append((UPSERT_FENCES, {"rows": [{"fuid": fuid, "props": fence_props}]}))
    if is_virtual(delta.path):
        statements += history_statements(delta, scope, fuid)
    overlay = overlay_props(delta, now)
    if overlay is not None:
        statements.append((UPSERT_OVERLAY, {"uid": scope, "now": now, "props": overlay}))
    orphan_keys = sorted({k for gone in refs_gone for k in stored.ref_edges[gone]})
    if orphan_keys:
        statements.append((DROP_ORPHAN_WANTS, {"keys": orphan_keys}))
    return Plan(
        statements,
        ApplyResult(
            applied=True,
            symbols_written=len(rows),
            symbols_removed=len(removed_ids),
            edges_written=len(local_new) + len(refs_new),
            edges_removed=len(local_gone) + len(refs_gone),
        ),
    )


def _phase_order() -> dict[str, int]:
    """Every statement a plan can hold, in the order a file's plan runs them."""
    every = [t.value for t in EdgeType]
    order = [
        *(delete_resolved(t) for t in every), DELETE_REFERS, *(delete_local(t) for t in every),
        DELETE_SYMBOLS, UPSERT_SYMBOLS, *(add_local(t) for t in every), ADD_REFERS,
        ADD_CALL_REFERS, MARK_TAILS, DROP_RESOLVED_INTO,
        *(q for t in REF_TYPES for q in (resolve_out(t.value), resolve_in(t.value))),
        *DROP_INHERITED_OVERRIDES, *ADD_INHERITED_OVERRIDES, *DROP_RUNTIME_EDGES,
        UPSERT_FENCES, *HISTORY_STATEMENTS, UPSERT_OVERLAY, DROP_ORPHAN_WANTS,
    ]  # fmt: skip
    return {query: index for index, query in enumerate(order)}


_PHASES = _phase_order()
PLANNED_STATEMENTS = tuple(_PHASES)  # every query a plan can hold (tests check their plans)


def merge_plans(plans: Iterable[list[Statement]]) -> list[Statement]:
    """The plans of distinct files as one statement per phase: the lists their UNWINDs run
    over are concatenated (keys once each), in phase order. FalkorDB parses, plans and
    replicates each query, so ~20 queries a file become ~20 a batch.

    The result is the store a run of the plans one after another leaves: within a phase the
    files touch distinct symbols and fences; a reference one file's phase would resolve into
    another file's symbols is resolved by a later phase instead (every resolve runs after
    every upsert), by the same idempotent MERGEs; and a Want that one file leaves and
    another refers to survives, as the other file's later MERGE would have remade it."""
    merged: dict[tuple[int, str, str], Statement] = {}
    for statements in plans:
        for query, params in statements:
            name = next((k for k in LIST_PARAMS if k in params), None)
            if name is None:  # one row's statement (an overlay's registration): kept apart
                merged[(_PHASES[query], query, str(len(merged)))] = (query, params)
                continue
            scalars = json.dumps({k: v for k, v in params.items() if k != name}, sort_keys=True)
            key = (_PHASES[query], query, scalars)
            if key in merged:
                merged[key][1][name] += params[name]
            else:
                merged[key] = (query, {**params, name: list(params[name])})
    return [_unique_keys(merged[key]) for key in sorted(merged)]


def _unique_keys(statement: Statement) -> Statement:
    query, params = statement
    if "keys" in params:  # a key two files want or give is merged or dropped once
        return query, {**params, "keys": list(dict.fromkeys(params["keys"]))}
    return statement


def overlay_props(delta: FileDelta, now: float) -> dict[str, Any] | None:
    """The registration an overlay's write refreshes: a workspace's (over its ref) or a
    branch's (over ``base_ref``); a delete that closes the overlay marks it for the janitor."""
    if delta.workspace is not None:
        name, base, kind = view_ref(delta.ref, delta.workspace), delta.ref, "workspace"
    elif delta.base_ref is not None and delta.base_ref != delta.ref:
        name, base, kind = delta.ref, delta.base_ref, "branch"
    else:
        return None
    props: dict[str, Any] = {"tenant": delta.tenant, "repo": delta.repo, "ref": name,
                             "base": base, "kind": kind, "last_write_at": now}  # fmt: skip
    if delta.closes_overlay:
        props["closed_at"] = now
    return props


def _result_tails(key: str, on_result: str, tail: str) -> dict[str, str | None]:
    """``rtail`` for a key of a call on a function's result (``<f's key>().m``), ``rtail2`` for
    one on a call's result (``<f's key>().g().m``): how many calls the walk joins through."""
    calls = key.count("().") if key.endswith(on_result) else 0
    return {"rtail": tail if calls == 1 else None, "rtail2": tail if calls == 2 else None}


def name_only_tail(scope: str, edge: Edge) -> str | None:
    """``scope|m`` for a method call no file can resolve (``recv.m()`` with ``recv`` of
    unknown type, or ``f().m()`` whose ``f`` may declare no return type): the key a
    name-only walk finds it by when ``m`` is unique in the scope."""
    if edge.type is not EdgeType.CALLS or edge.ref is None:
        return None
    if edge.ref.module is not None and "()." not in edge.ref.name:
        return None
    receiver, dot, method = edge.ref.name.rpartition(".")
    if not dot or not receiver or not method.isidentifier():
        return None
    return f"{scope}|{method}"


def _by_type(edges: Iterable[EdgeRow]) -> dict[str, list[EdgeRow]]:
    grouped: dict[str, list[EdgeRow]] = defaultdict(list)
    for edge in sorted(edges, key=lambda e: (e[0], e[1], e[2], e[3] or "")):
        grouped[edge[1]].append(edge)
    return grouped


def _edge_rows(edges: list[EdgeRow], uid: Any) -> list[dict[str, str | None]]:
    return [{"src": uid(src), "dst": uid(dst), "resolution": res} for src, _, dst, res in edges]
