"""Writes the stack acknowledged and a tier does not hold yet, read from the outbox.

The bus's consumer lag says nothing of an acknowledged write that is not on the bus: the
embedded broker keeps its log in memory, so after it (or the whole stack) restarts, the
writes it held wait in the outbox until the supervisor publishes them again. A CI run of the
chaos test met that: a search right after a restart hit a file deleted 61 s before while
the freshness answer said lag 0 (the new broker held nothing, so nothing was pending).
Freshness therefore also asks the outbox for this repository's oldest entries not yet
marked applied, and checks each against the tiers (the supervisor marks entries applied
every 30 s, so most of them are in fact held).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from patchstream.producers.outbox import REPLAY_DUE_SINCE
from patchstream.schemas.events import view_ref
from patchstream.stores.graph.base import GraphStore
from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.stores.vector.search_mirror import SearchMirror

T = TypeVar("T")
OWED_CHECKED = 32  # entries checked per answer, oldest first: the oldest decides the lag
# Asked of Milvus Lite itself (no search copy), a file's record costs a query that walks the
# files collection in Python (tens of ms at 30k records): the first few entries only. The
# history bench's context p99 went from 0.7 to 5.5 s when every answer asked 64 of them.
OWED_ASKED_OF_MILVUS = 4


@dataclass(frozen=True)
class UnmarkedEntry:
    """An outbox entry of one repository the supervisor has not yet seen both tiers hold."""

    ref: str  # the view it is read through (``main~agent-42`` for a workspace's write)
    path: str
    version: int
    created_at: float


def unmarked_entries(
    outbox: Path, tenant: str, repo: str, limit: int = OWED_CHECKED
) -> list[UnmarkedEntry]:
    """The oldest ``limit`` entries of ``repo`` not marked applied; none without an outbox.

    Read-only (the query service never writes the outbox), and a busy or missing file
    answers nothing rather than failing a read."""
    rows = _read(
        outbox,
        lambda db: db.execute(
            "SELECT ref, workspace, path, version, created_at FROM outbox WHERE applied = 0 "
            "AND tenant = ? AND repo = ? ORDER BY id LIMIT ?",
            (tenant, repo, limit),
        ).fetchall(),
    )
    return [UnmarkedEntry(view_ref(ref, workspace), path, int(version), float(created))
            for ref, workspace, path, version, created in rows or []]  # fmt: skip


HeldVersion = Callable[[str, str], int | None]  # (ref, path) -> the version a tier holds


def owed_since(
    entries: list[UnmarkedEntry], tiers: dict[str, HeldVersion]
) -> dict[str, float | None]:
    """Per tier, when the oldest entry it does not hold was acknowledged (None: it holds all
    of them). A tier that cannot be asked holds nothing for this answer: the lag it then
    reports is the honest upper bound, not a zero."""
    since: dict[str, float | None] = {}
    for tier, held in tiers.items():
        since[tier] = None
        for entry in entries:
            try:
                version = held(entry.ref, entry.path)
            except Exception:  # a store restarting: the write is not known to be there
                version = None
            if version is None or version < entry.version:
                since[tier] = entry.created_at
                break
    return since


def unverified_since(outbox: Path, tenant: str, repo: str) -> float | None:
    """While the supervisor's replay after a restart has not run, the oldest write the
    outbox keeps of ``repo`` (when it was acknowledged): until the replay checks them, any
    of those a store lost (Milvus Lite is not crash-safe; FalkorDB may lose its last second;
    the broker keeps nothing) may be missing from answers. None when no replay waits."""

    def oldest(db: sqlite3.Connection) -> float | None:
        if db.execute("SELECT 1 FROM meta WHERE name = ?", (REPLAY_DUE_SINCE,)).fetchone() is None:
            return None
        found = db.execute("SELECT min(created_at) FROM outbox WHERE tenant = ? AND repo = ?",
                           (tenant, repo)).fetchone()  # fmt: skip
        return float(found[0]) if found and found[0] is not None else None

    return _read(outbox, oldest)


def _read(outbox: Path, query: Callable[[sqlite3.Connection], T]) -> T | None:
    """``query`` over the outbox opened read-only (the query service never writes it); None
    without an outbox, or when it is busy or unreadable: a read is never failed by it."""
    if not outbox.exists():
        return None
    with contextlib.suppress(sqlite3.Error):
        db = sqlite3.connect(f"{outbox.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
        try:
            return query(db)
        finally:
            db.close()
    return None


def owed_by_tier(
    outbox: Path, graph: GraphStore | None, vectors: MilvusVectorStore, tenant: str, repo: str,
    chain: list[str], copy: SearchMirror | None = None,
) -> dict[str, float | None]:  # fmt: skip
    """Per tier, when the oldest acknowledged write of the view (``chain``: its layers) that
    the tier lacks was written; None when it lacks none of those checked. While a replay
    after a restart waits, every write the outbox keeps of the repository counts as owed
    (``unverified_since``): the answer may lack any of them. Without ``graph``, its tier is
    not asked (None)."""
    unverified = unverified_since(outbox, tenant, repo)
    if unverified is not None:
        return {"graph": unverified if graph is not None else None, "vector": unverified}
    entries = [e for e in unmarked_entries(outbox, tenant, repo) if e.ref in chain]

    def in_graph(ref: str, path: str) -> int | None:
        assert graph is not None
        fence = graph.file_version(tenant, repo, ref, path)
        return fence.version if fence is not None else None

    asked = 0

    def in_vectors(ref: str, path: str) -> int | None:
        nonlocal asked
        with contextlib.suppress(LookupError):
            if copy is not None:  # the search copy's stamps: no Milvus round trip
                return copy.file_version(tenant, repo, ref, path)
        asked += 1
        if asked > OWED_ASKED_OF_MILVUS:  # not asked: counted as owed, an upper bound
            raise TimeoutError("enough of Milvus for one freshness answer")
        return vectors.file_version(tenant, repo, ref, path)

    if graph is None:
        return {"graph": None, **owed_since(entries, {"vector": in_vectors})}
    return owed_since(entries, {"graph": in_graph, "vector": in_vectors})
