"""A tenant's in-process search copy as ``search_mirror`` keeps it: its state, the rows it
indexes, and the scopes a search reads (the following of Milvus stays in ``search_mirror``)."""

from __future__ import annotations

import gc
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from patchstream.stores.overlays import WORKSPACE_MARK, View
from patchstream.stores.vector.dense_codes import decode
from patchstream.stores.vector.milvus_rows import hit_from_row, pack_hit
from patchstream.stores.vector.search_index import IndexedRow, TenantIndex

log = logging.getLogger(__name__)


@dataclass
class MirrorState:
    index: TenantIndex
    files: dict[str, dict[str, str]] = field(default_factory=dict)  # file uid -> pk -> fp
    stamps: dict[str, tuple[int, float]] = field(default_factory=dict)  # -> version, applied
    newest_applied: float = 0.0
    synced_at: float = 0.0  # monotonic: when the last finished sync started reading
    fence: float = 0.0  # a sync must have started after this for the copy to answer
    reconciled_at: float = 0.0
    frozen_rows: int = 0  # live rows when the heap was last frozen
    pause_s: float = 0.0  # the follower's wait before its next sync
    ready: bool = False
    loaded: threading.Event = field(default_factory=threading.Event)  # set once ready
    load_rows: tuple[int, int] = (0, 0)  # the first load's rows: read so far, to read
    disabled: str | None = None  # why this tenant is served by Milvus
    # File uid -> tries: files whose listed rows a read by key did not return. Milvus Lite
    # swaps its memtable out before a flush writes it, and a point read in that window finds
    # a fresh row in neither (measured: 23 of 1,670 reads of just-inserted rows beside
    # flushing writers). The file is read again by key at the next sync, not left short.
    retry: dict[str, int] = field(default_factory=dict)
    search_lock: threading.Lock = field(default_factory=threading.Lock)
    sync_lock: threading.RLock = field(default_factory=threading.RLock)


def freeze_heap(tenant: str) -> None:
    """Move every object alive now into the permanent generation. A full collection walks every
    tracked object, the copy's rows too: ~0.25 s at 40k rows, a pause every request in flight
    waits on, and nothing in the copy is ever cyclic garbage. Frozen rows a later sync replaces
    are freed by their reference counts as before; only a reference cycle alive at this moment
    and dropped later would stay (young collections first, so little is in flight, and the
    copy freezes in geometric steps as it grows, so a handful of times in all)."""
    gc.collect(1)
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    log.info("event=heap_frozen tenant=%s objects=%d", tenant,
             gc.get_freeze_count() - frozen_before)  # fmt: skip


def indexed_row(row: dict[str, Any], dim: int) -> IndexedRow | None:
    """A chunk row as the copy keeps it; None (and a warning) for codes of another embedder's
    dimensions or damaged: the row is left out of search, never the whole copy."""
    try:
        codes = decode(str(row["codes"]), dim)
    except ValueError as exc:
        log.warning("event=search_row_skipped pk=%s reason=%r", row.get("pk"), str(exc))
        return None
    return IndexedRow(str(row["pk"]), str(row["scope"]), str(row["kind"]), str(row["path"]),
                      str(row["text"]), (), payload=pack_hit(hit_from_row(row, 0.0)),
                      codes=codes)  # fmt: skip


def stamp_of(record: dict[str, Any]) -> tuple[int, float]:
    return int(record["version"]), float(record["applied_at"])


def scopes_read(
    known: list[str], tenant: str, repo: str | None, ref: str | None, view: View | None
) -> list[str] | None:
    """The scopes a search reads, by the Milvus path's rules: a view's layers; one branch;
    a repository's scopes (its workspaces too); a ref's plain scopes; or every plain one."""
    if view is not None:
        return view.scopes
    if repo and ref:
        return [f"{tenant}|{repo}|{ref}"]
    parts = [scope.split("|") for scope in known]
    if repo:
        return [s for s, p in zip(known, parts, strict=True) if len(p) == 3 and p[1] == repo]
    plain = [(s, p) for s, p in zip(known, parts, strict=True)
             if len(p) == 3 and WORKSPACE_MARK not in p[2]]  # fmt: skip
    return [s for s, p in plain if p[2] == ref] if ref else [s for s, _ in plain]
