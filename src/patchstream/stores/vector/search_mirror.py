"""The query service's in-process copy of the chunk index, kept in step with Milvus.

Why: Milvus Lite 3.x is pure Python, and each search request walks every row of the tenant's
partition in Python (version dedup, tombstones, filter masks) before it asks its index. A
hybrid search is two such requests: 160 ms at 43k chunks, over 500 ms at 156k, whatever the
filter. The mirror answers from numpy arrays (``search_index``) and returns the winners'
fields it holds, without a Milvus call. Milvus stays the system of record; a tenant's searches
go to Milvus until its mirror has loaded, and whenever the mirror is off or over its size cap.

How it follows Milvus: the files collection holds one record per file listing the ``pk:fp``
of its chunk rows, and a record is written after its rows. A sync reads the records applied
since the last one it saw (less a margin for clocks and writes in flight), diffs each against
what the mirror holds, and reads the rows that are new or changed by key. Syncs run at most
every ``lag_s`` before a search, and ``/v1/wait`` syncs before it reports a write applied,
so a reader that waited sees its write. A reconcile re-reads every record now and then to
drop what a ref deletion in another process removed (this process calls ``forget``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from patchstream.pacing import FetchPacer
from patchstream.stores.graph.keys import scope_of
from patchstream.stores.overlays import View
from patchstream.stores.vector.file_ranker import FileRanker, NamedFiles
from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.stores.vector.milvus_client import lit
from patchstream.stores.vector.milvus_rows import (
    SearchHit,
    file_key,
    search_fields,
    unpack_hit,
)
from patchstream.stores.vector.mirror_state import (
    MirrorState,
    freeze_heap,
    indexed_row,
    scopes_read,
    stamp_of,
)
from patchstream.stores.vector.search_index import TenantIndex

log = logging.getLogger(__name__)

_CLOCK_MARGIN_S = 5.0  # records applied this long before the newest seen are read again
_GET_BATCH = 512
_RETRIES = 5  # reads again of a file whose listed rows Milvus did not return
_RECENT = 4096  # records one incremental sync reads in one request; more go by iterator
_RECORD_FIELDS = ["tenant", "file_uid", "scope", "version", "deleted", "chunk_rows",
                  "chunk_rows_complete", "applied_at"]  # fmt: skip
_STAMP_FIELDS = ["file_uid", "version", "applied_at"]
_ROW_FIELDS = [*search_fields(), "codes"]


class SearchMirror:
    def __init__(
        self,
        store: MilvusVectorStore,
        lag_s: float = 0.5,
        reconcile_s: float = 300.0,
        idle_lag_s: float = 0.0,
        idle_after_s: float = 60.0,
        max_rows: int = 1_000_000,
        freeze_loaded: bool = False,
        freeze_min_rows: int = 1000,
        ready_wait_s: float = 0.0,
        fence_wait_s: float = 2.0,
        ranker: FileRanker | None = None,
    ) -> None:
        self.store = store
        self.ranker = ranker  # orders a search's files (``file_ranker``); None: fused order
        # A search that finds a sync in flight since a ``/v1/wait`` waits this long for it
        # rather than go to Milvus: a Milvus hybrid search builds the BM25 index of every
        # segment of the partition on its first call and keeps it (scipy's 43k rows: +178 MiB,
        # ~4 KiB a row), and ranks differently.
        self.fence_wait_s = fence_wait_s
        self.ready_wait_s = ready_wait_s
        self.freeze_loaded = freeze_loaded
        self.freeze_min_rows = freeze_min_rows
        self.lag_s = lag_s
        # A tenant nothing was written to for ``idle_after_s`` is followed every
        # ``idle_lag_s`` (0: always ``lag_s``): an idle stack's Milvus scanned its file
        # records twice a second for nobody. ``/v1/wait`` still syncs at once.
        self.idle_lag_s = idle_lag_s
        self.idle_after_s = idle_after_s
        self.reconcile_s = reconcile_s
        self.max_rows = max_rows
        self._mirrors: dict[str, MirrorState] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()

    # -- state ----------------------------------------------------------------------------

    def state(self, tenant: str) -> str:
        """``ready``, ``loading N%`` or ``off`` (with why) for a tenant."""
        mirror = self._mirrors.get(tenant)
        if mirror is None:
            return "loading"
        if mirror.disabled:
            return f"off: {mirror.disabled}"
        if mirror.ready:
            return "ready"
        done, total = mirror.load_rows
        return f"loading {100 * done // total}%" if total else "loading"

    def loading(self) -> str | None:
        """``loading N%`` over every tenant still loading (no names: for /healthz); None
        when none is."""
        states = [(m.load_rows, m.ready or bool(m.disabled)) for m in list(self._mirrors.values())]
        waiting = [rows for rows, done in states if not done]
        if not waiting:
            return None
        total = sum(t for _, t in waiting)
        return f"loading {100 * sum(d for d, _ in waiting) // total}%" if total else "loading"

    def warm(self, tenant: str) -> None:
        """Start loading a tenant in the background (a search does this by itself)."""
        self._mirror(tenant)

    def _mirror(self, tenant: str) -> MirrorState:
        with self._lock:
            mirror = self._mirrors.get(tenant)
            if mirror is None:
                mirror = self._mirrors[tenant] = MirrorState(TenantIndex(self.store.embedder.dim))
                threading.Thread(target=self._load, args=(tenant, mirror), daemon=True,
                                 name=f"search-mirror-{tenant}").start()  # fmt: skip
        return mirror

    def _load(self, tenant: str, mirror: MirrorState) -> None:
        """Load the tenant, then follow Milvus every ``lag_s`` until closed (searches never
        wait for a sync). While Milvus fails, syncs back off; after three failures in a row
        the copy is stale beyond its promise and searches go to Milvus until one succeeds."""
        started = time.perf_counter()
        failures = 0
        pause = 0.0
        pacer = FetchPacer(round(1000 * self.lag_s), round(1000 * self.idle_lag_s),
                           self.idle_after_s)  # fmt: skip
        while not self._closed.wait(pause) and not mirror.disabled:
            try:
                changed = self._sync(tenant, mirror, everything=not mirror.ready)
            except Exception as exc:
                failures += 1
                if failures == 3:
                    mirror.ready = False
                    log.warning("event=search_mirror_stale tenant=%s error=%s", tenant, exc)
                pause = min(30.0, max(self.lag_s, 0.1) * 2**failures)
                continue
            if not mirror.ready and not mirror.disabled:
                log.info("event=search_mirror_ready tenant=%s rows=%d files=%d seconds=%.1f",
                         tenant, mirror.index.live, len(mirror.files),
                         time.perf_counter() - started)  # fmt: skip
            mirror.ready = mirror.disabled is None
            if mirror.ready:
                mirror.loaded.set()
            failures, pause = 0, pacer.next_wait_ms(changed) / 1000
            mirror.pause_s = pause
            live = mirror.index.live
            grown = live >= max(self.freeze_min_rows, mirror.frozen_rows * 5 // 4)
            if self.freeze_loaded and grown:
                freeze_heap(tenant)  # geometric steps: a handful of freezes as a tenant grows
                mirror.frozen_rows = live

    def close(self) -> None:
        """Stop following Milvus (the sync threads end at their next wait)."""
        self._closed.set()

    def forget(self, tenant: str, scope: str) -> None:
        """Drop a scope's rows now (``delete_ref`` in this process)."""
        mirror = self._mirrors.get(tenant)
        if mirror is None:
            return
        with mirror.sync_lock, mirror.search_lock:
            for file_uid in [f for f in mirror.stamps if f.startswith(f"{scope}|")]:
                mirror.stamps.pop(file_uid)
                for pk in mirror.files.pop(file_uid, {}):
                    mirror.index.remove(pk)

    def sync(self, tenant: str) -> None:
        """Catch up with Milvus now (``/v1/wait`` calls this before it says "applied"): the
        copy answers again only after a sync that started now, so a reader that waited sees
        its write (while a load is still running, Milvus answers meanwhile). The fence is set
        under the sync lock, so a search that finds it ahead waits on that lock for this sync
        and no other."""
        mirror = self._mirrors.get(tenant)
        if mirror is None:
            return
        if not mirror.ready or mirror.disabled:
            mirror.fence = time.monotonic()
            return
        with mirror.sync_lock:
            mirror.fence = time.monotonic()
            try:
                self._sync(tenant, mirror)
                for _ in range(_RETRIES):  # rows a flush hid from the read: ask again now
                    if not mirror.retry:
                        break
                    time.sleep(0.05)
                    self._sync(tenant, mirror)
            except Exception as exc:  # the fence holds: Milvus answers meanwhile
                log.warning("event=search_mirror_sync_failed tenant=%s error=%s", tenant, exc)

    def last_applied(self, tenant: str, repo: str) -> tuple[int, float | None] | None:
        """``MilvusVectorStore.last_applied`` from the copy's stamps (every file record of the
        tenant, tombstones too, as of the last sync); None while the copy cannot answer.
        Freshness is read at every context request: asked of Milvus Lite, it materialized
        every record of the repository (a ~50-90 ms burst of Milvus CPU once a second)."""
        mirror = self._mirrors.get(tenant)
        if mirror is None or not mirror.ready or mirror.disabled:
            return None
        prefix = f"{tenant}|{repo}|"
        stamps = list(mirror.stamps.items())  # one C-level copy: syncs write the dict meanwhile
        times = [applied for uid, (_, applied) in stamps if uid.startswith(prefix)]
        return (len(times), max(times) if times else None)

    def file_version(self, tenant: str, repo: str, ref: str, path: str) -> int | None:
        """``MilvusVectorStore.file_version`` from the copy's stamps, as of its last sync
        (a deleted file keeps its version); None when the copy holds no record of the file.
        Raises ``LookupError`` while the copy cannot answer."""
        mirror = self._mirrors.get(tenant)
        if mirror is None or not mirror.ready or mirror.disabled:
            raise LookupError(f"the search copy of {tenant!r} is not ready")
        stamp = mirror.stamps.get(f"{scope_of(tenant, repo, ref)}|{path}")
        return stamp[0] if stamp is not None else None

    def chunks_for_symbols(
        self, tenant: str, symbol_ids: Sequence[str], ref: str | None = None
    ) -> list[SearchHit] | None:
        """``MilvusVectorStore.chunks_for_symbols`` from the copy; None while it cannot answer.
        A symbol's id names its file (``repo::path::name``), so only the rows of those paths
        are read. Asked of Milvus Lite, every query builds a mask of the live rows of the
        whole collection: linear in the corpus (at 5k files it was most of a context's time)."""
        mirror = self._mirrors.get(tenant)
        if not tenant or not symbol_ids:
            return []
        if mirror is None or not self._answers(mirror):
            return None
        wanted = set(symbol_ids)
        paths = {parts[1] for sid in wanted if len(parts := sid.split("::", 2)) == 3}
        return self._path_chunks(mirror, paths, ref, lambda symbol_id: symbol_id in wanted)

    def chunks_under(
        self, tenant: str, path: str, prefix: str, ref: str | None = None
    ) -> list[SearchHit] | None:
        """The copy's chunks of ``path`` whose symbol's id starts with ``prefix`` (a class's
        members: ``repo::path::Square.``), in file order; None while it cannot answer. Read
        from the graph instead, a large file's every symbol came back with its docstring
        (~0.25 s a file at scipy), for the two members a question names."""
        mirror = self._mirrors.get(tenant)
        if not tenant:
            return []
        if mirror is None or not self._answers(mirror):
            return None
        return self._path_chunks(mirror, {path}, ref, lambda held: held.startswith(prefix))

    @staticmethod
    def _path_chunks(
        mirror: MirrorState, paths: set[str], ref: str | None, keep: Callable[[str], bool]
    ) -> list[SearchHit]:
        found: list[SearchHit] = []
        with mirror.search_lock:
            index = mirror.index
            for path in paths:
                for row in index.rows_of_path(path):
                    packed = index.payloads[row]
                    if not isinstance(packed, bytes):
                        continue
                    held = unpack_hit(packed, 0.0)
                    if keep(held.symbol_id) and (not ref or held.ref == ref):
                        found.append(held)
        return sorted(found, key=lambda h: (h.path, h.start_line, h.chunk_id))

    # -- search ---------------------------------------------------------------------------

    def search(
        self,
        tenant: str,
        query: str,
        limit: int = 10,
        repo: str | None = None,
        ref: str | None = None,
        path_prefix: str | None = None,
        kind: str | None = None,
        view: View | None = None,
        named_files: Callable[[Mapping[str, Sequence[str]]], NamedFiles] | None = None,
    ) -> list[SearchHit] | None:
        """Like ``MilvusVectorStore.search``; None when the tenant is not served here yet.
        ``named_files`` ranks the files the question names, given the paths held (by file
        name)."""
        if not tenant or not query.strip():
            return []
        mirror = self._mirror(tenant)
        if not mirror.ready and not mirror.disabled and self.ready_wait_s > 0:
            # Right after a start: wait (bounded) for the copy rather than answer from Milvus,
            # which ranks differently; the caller says so when it still had to.
            mirror.loaded.wait(self.ready_wait_s)
        if not self._answers(mirror):
            return None
        vector = self.store.embedder.embed([query])[0]
        with mirror.search_lock:
            index = mirror.index
            scopes = scopes_read(index.scopes.names, tenant, repo, ref, view)
            hidden = [] if view is None else [
                (layer.scope, {p for upper in view.layers[:i] for p in upper.paths})
                for i, layer in enumerate(view.layers)
            ]  # fmt: skip
            keep = index.mask(scopes, kind, path_prefix, hidden)
            named = named_files(index.file_names) if named_files else NamedFiles([], 0)
            ranked = index.search(query, vector, keep, limit, named_files=named.files,
                                  named_explicit=named.explicit, ranker=self.ranker,
                                  definer_weights=named.weights)  # fmt: skip
            return self._hits(index, ranked)

    def _answers(self, mirror: MirrorState) -> bool:
        """Whether the copy may answer now: loaded, on, and synced since the last fence; a
        sync in flight past the fence is waited for (at most ``fence_wait_s``)."""
        if not mirror.ready or mirror.disabled:
            return False
        if mirror.synced_at < mirror.fence and mirror.sync_lock.acquire(timeout=self.fence_wait_s):
            mirror.sync_lock.release()  # the sync that held it has set ``synced_at``
        return mirror.ready and not mirror.disabled and mirror.synced_at >= mirror.fence

    @staticmethod
    def _hits(index: TenantIndex, ranked: list[tuple[str, float]]) -> list[SearchHit]:
        """The winners as the copy holds them: no Milvus call on the read path (reading
        them by key was the largest stage of a search, and waited on Milvus's CPU bursts)."""
        found = []
        for pk, score in ranked:
            packed = index.payload(pk)
            if isinstance(packed, bytes):
                found.append(unpack_hit(packed, score))
        return found

    # -- following Milvus ----------------------------------------------------------------

    def _sync(self, tenant: str, mirror: MirrorState, everything: bool = False) -> bool:
        """Whether it found anything new."""
        with mirror.sync_lock:  # reentrant: ``sync`` holds it already
            now = time.monotonic()
            everything = everything or now - mirror.reconciled_at >= self.reconcile_s
            since = 0.0 if everything else mirror.newest_applied - _CLOCK_MARGIN_S
            # Stamps first (three small fields), whole records by key only where a stamp
            # moved: a quiet tenant's sync re-reads its last few seconds of stamps, not the
            # rows those records list (that made a sync cost ~0.5 s and stall searches).
            stamps = self._records(tenant, since, _STAMP_FIELDS)
            changed = sorted({str(r["file_uid"]) for r in stamps
                              if mirror.stamps.get(str(r["file_uid"])) != stamp_of(r)}
                             | set(mirror.retry))  # fmt: skip
            records = []
            keys = [file_key(file_uid) for file_uid in changed]
            for start in range(0, len(keys), _GET_BATCH):
                records += self.store.client.get(self.store.files,
                                                 ids=keys[start : start + _GET_BATCH],
                                                 output_fields=_RECORD_FIELDS)  # fmt: skip
            listed = {str(r["file_uid"]) for r in stamps} if everything else None
            self._apply_records(tenant, mirror, records, listed)
            mirror.synced_at = now
            if everything:
                mirror.reconciled_at = now
            return bool(changed) or bool(mirror.retry)

    def _records(self, tenant: str, since: float, fields: list[str]) -> list[dict[str, Any]]:
        """``fields`` of the tenant's file records applied at ``since`` or later (every one
        for 0)."""
        where = f"tenant == {lit(tenant)}"
        if since:
            where += f" and applied_at >= {since!r}"
            records = self.store.client.query(
                self.store.files, filter=where, output_fields=fields, limit=_RECENT
            )
            if len(records) < _RECENT:
                return list(records)
        return self.store.query_all(where, fields, self.store.files)

    def _apply_records(
        self, tenant: str, mirror: MirrorState, records: list[dict[str, Any]],
        listed: set[str] | None,
    ) -> None:  # fmt: skip
        """Bring the copy to ``records``; ``listed`` (a full re-read): every file the tenant
        still has, the others are dropped."""
        wanted: dict[str, dict[str, str]] = {}  # file uid -> pk -> fp, where it changed
        # A file's stamp (what freshness reads) moves only once its rows are in the index:
        # set first, a freshness answer read mid-sync said "held" of a file a search beside
        # it did not find (a CI run of test_query).
        stamped: dict[str, tuple[int, float]] = {}
        for record in records:
            if record.get("tenant") != tenant:
                continue
            mirror.newest_applied = max(mirror.newest_applied, float(record["applied_at"]))
            file_uid = str(record["file_uid"])
            stamped[file_uid] = stamp_of(record)
            if record["deleted"]:
                rows: dict[str, str] = {}
            elif record["chunk_rows_complete"]:
                rows = dict(str(item).split(":", 1) for item in record["chunk_rows"])
            else:  # a file of more rows than its record lists: read them
                rows = self.store.file_rows(tenant, file_uid)
            if mirror.files.get(file_uid) != rows:
                wanted[file_uid] = rows
        retried, mirror.retry = mirror.retry, {}
        read = {str(record["file_uid"]) for record in records}
        for file_uid, tries in retried.items():  # its record was not returned either
            if file_uid not in read and tries < _RETRIES:
                mirror.retry[file_uid] = tries + 1
        gone = set(mirror.files) - listed if listed is not None else set()
        for file_uid in set(mirror.stamps) - listed if listed is not None else ():
            mirror.stamps.pop(file_uid)
        fetch = sorted({pk for file_uid, rows in wanted.items() for pk, fp in rows.items()
                        if mirror.files.get(file_uid, {}).get(pk) != fp})  # fmt: skip
        held = mirror.index.live + len(fetch)
        if held > self.max_rows:
            mirror.disabled = f"{held} rows is over the cap of {self.max_rows}"
            log.warning("event=search_mirror_off tenant=%s reason=%r", tenant, mirror.disabled)
            with mirror.search_lock:
                mirror.index = TenantIndex(self.store.embedder.dim)
                mirror.files.clear()
                mirror.stamps.clear()
            return
        with mirror.search_lock:
            for file_uid in gone:
                for pk in mirror.files.pop(file_uid):
                    mirror.index.remove(pk)
            for file_uid, rows in wanted.items():
                for pk in set(mirror.files.get(file_uid, {})) - set(rows):
                    mirror.index.remove(pk)
                if rows:
                    mirror.files[file_uid] = rows
                else:
                    mirror.files.pop(file_uid, None)
            mirror.index.reserve(len(fetch))
        # Batch by batch: a load never holds more than one batch of rows as Python objects.
        first_load = not mirror.ready
        for start in range(0, len(fetch), _GET_BATCH):
            if first_load:
                mirror.load_rows = (start, len(fetch))
            dim = self.store.embedder.dim
            asked = fetch[start : start + _GET_BATCH]
            rows_read = self.store.client.get(self.store.chunks, ids=asked,
                                              output_fields=_ROW_FIELDS)  # fmt: skip
            batch = [indexed_row(row, dim) for row in rows_read]
            with mirror.search_lock:
                for indexed in batch:
                    if indexed is not None:
                        mirror.index.add(indexed)
            missed = set(asked) - {str(row["pk"]) for row in rows_read}
            if missed:
                self._read_again(tenant, mirror, wanted, missed, retried)
        for file_uid, stamp in stamped.items():
            if file_uid not in mirror.retry:  # rows still to read: not held yet
                mirror.stamps[file_uid] = stamp

    @staticmethod
    def _read_again(
        tenant: str, mirror: MirrorState, wanted: dict[str, dict[str, str]], missed: set[str],
        retried: dict[str, int],
    ) -> None:  # fmt: skip
        """Leave the rows a read by key did not return out of the file's listed rows, so that
        the next sync reads the file again and asks for them (at most ``_RETRIES`` times)."""
        with mirror.search_lock:
            for file_uid, rows in wanted.items():
                short = missed.intersection(rows)
                if not short:
                    continue
                held = mirror.files.get(file_uid)
                for pk in short:
                    if held is not None:
                        held.pop(pk, None)
                tries = retried.get(file_uid, 0) + 1
                if tries <= _RETRIES:
                    mirror.retry[file_uid] = tries
                else:
                    log.warning("event=search_rows_missing tenant=%s file=%s rows=%d",
                                tenant, file_uid, len(short))  # fmt: skip
