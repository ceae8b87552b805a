"""Runtime edges: trace events checked against the files' fences and written as
``CALLS {via: '<runtime>', resolution: 'runtime'}``.

A call is kept only while both files have the content it was traced with: the plan checks the
fences it read, and the write checks them again inside the statement (a delta applied in
between wins). A delta that changes either file drops the edge (``DROP_RUNTIME_EDGES``), so an
edit fences a runtime edge out until the code is traced again. Replays are no-ops: edges are
merged, and a stale trace finds no fence with its hash.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from patchstream.schemas.traces import TraceEvent
from patchstream.stores.graph.keys import scope_of
from patchstream.stores.graph.statements import RUNTIME, Statement

TRACE_FENCES = (
    "UNWIND $uids AS uid MATCH (f:Fence {uid: uid}) RETURN f.uid, f.content_hash, f.deleted"
)
EXISTING_SYMBOLS = "UNWIND $uids AS uid MATCH (s:Symbol {uid: uid}) RETURN s.uid"
WRITE_RUNTIME_EDGES = (
    "UNWIND $rows AS row "
    "MATCH (f:Fence {uid: row.sf}) "
    "WHERE f.content_hash = row.sh AND NOT coalesce(f.deleted, false) "
    "MATCH (g:Fence {uid: row.df}) "
    "WHERE g.content_hash = row.dh AND NOT coalesce(g.deleted, false) "
    "MATCH (s:Symbol {uid: row.src}) MATCH (t:Symbol {uid: row.dst}) "
    "MERGE (s)-[r:CALLS {via: $via}]->(t) "
    "SET r.resolution = 'runtime', r.count = row.count, r.command = row.command, "
    "r.traced_at = row.at, r.src_hash = row.sh, r.dst_hash = row.dh, "
    "f.traced = true, g.traced = true"
)
UPSERT_TRACE_MARK = "MERGE (m:TraceMark {uid: $fuid}) SET m += $props"
READ_TRACE_MARKS = (
    "UNWIND $uids AS uid MATCH (m:TraceMark {uid: uid}) "
    "RETURN m.path, m.event_id, m.kept, m.stale, m.unknown"
)


@dataclass(frozen=True)
class TraceOutcome:
    """What became of one trace event's calls."""

    event_id: str
    path: str
    kept: int  # written (or already there)
    stale: int  # a file has changed since it was traced
    unknown: int  # a file or symbol the graph does not hold


def plan_trace(
    event: TraceEvent, hashes: dict[str, str | None], existing: set[str], now: float
) -> tuple[list[Statement], TraceOutcome]:
    """The statements that write ``event``'s calls that still hold, and its outcome.
    ``hashes``: file uid -> content hash of each live file the fences hold; ``existing``:
    the symbol uids the store holds. Pure."""
    scope = scope_of(event.tenant, event.repo, event.ref)
    caller_file = f"{scope}|{event.path}"
    rows: list[dict[str, Any]] = []
    stale = unknown = 0
    for call in event.calls:
        callee_file = f"{scope}|{call.callee_path}"
        src, dst = f"{scope}|{call.caller}", f"{scope}|{call.callee}"
        if caller_file not in hashes or callee_file not in hashes:
            unknown += 1
        elif hashes[caller_file] != event.content_hash or hashes[callee_file] != call.callee_hash:
            stale += 1
        elif src not in existing or dst not in existing:
            unknown += 1
        else:
            rows.append({"sf": caller_file, "sh": event.content_hash, "df": callee_file,
                         "dh": call.callee_hash, "src": src, "dst": dst, "count": call.count,
                         "command": event.command, "at": event.traced_at.timestamp()})  # fmt: skip
    outcome = TraceOutcome(event.event_id, event.path, len(rows), stale, unknown)
    statements: list[Statement] = []
    if rows:
        statements.append((WRITE_RUNTIME_EDGES, {"rows": rows, "via": RUNTIME}))
    mark = {"tenant": event.tenant, "scope": scope, "path": event.path,
            "event_id": event.event_id, "kept": outcome.kept, "stale": stale,
            "unknown": unknown, "applied_at": now}  # fmt: skip
    statements.append((UPSERT_TRACE_MARK, {"fuid": caller_file, "props": mark}))
    return statements, outcome


class RuntimeEdges(abc.ABC):
    """The trace side of a Cypher graph store (a mixin of ``CypherGraphStore``)."""

    @abc.abstractmethod
    def _read(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]: ...

    @abc.abstractmethod
    def _write(self, tenant: str, statements: Sequence[Statement]) -> None: ...

    def apply_traces(self, events: Sequence[TraceEvent]) -> list[TraceOutcome]:
        """Write each event's calls that still hold; one read of fences and symbols and one
        atomic write per tenant."""
        outcomes: list[TraceOutcome] = []
        for tenant in dict.fromkeys(e.tenant for e in events):
            mine = [e for e in events if e.tenant == tenant]
            files: set[str] = set()
            symbols: set[str] = set()
            for event in mine:
                scope = scope_of(event.tenant, event.repo, event.ref)
                files.add(f"{scope}|{event.path}")
                for call in event.calls:
                    files.add(f"{scope}|{call.callee_path}")
                    symbols.update((f"{scope}|{call.caller}", f"{scope}|{call.callee}"))
            hashes = {r[0]: r[1] for r in self._read(tenant, TRACE_FENCES, {"uids": sorted(files)})
                      if not r[2]}  # fmt: skip
            existing = {r[0] for r in self._read(tenant, EXISTING_SYMBOLS,
                                                 {"uids": sorted(symbols)})}  # fmt: skip
            now = time.time()
            statements: list[Statement] = []
            for event in mine:
                planned, outcome = plan_trace(event, hashes, existing, now)
                statements += planned
                outcomes.append(outcome)
            self._write(tenant, statements)
        return outcomes

    def trace_marks(
        self, tenant: str, repo: str, ref: str, paths: Sequence[str]
    ) -> dict[str, TraceOutcome]:
        """The last trace event applied for each of ``paths`` (files traced as callers)."""
        scope = scope_of(tenant, repo, ref)
        rows = self._read(tenant, READ_TRACE_MARKS, {"uids": [f"{scope}|{p}" for p in paths]})
        return {r[0]: TraceOutcome(r[1], r[0], int(r[2]), int(r[3]), int(r[4])) for r in rows}
