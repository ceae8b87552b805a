"""Issue #32: Milvus Lite's delete log kept short, and its collections opened before anyone
connects. A real server, the real vector store schema (BM25 function included), real deletes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patchstream.embedded import milvus_rewrite
from patchstream.embedded.milvus_rewrite import (
    OLD_SUFFIX,
    REWRITE_SUFFIX,
    compact_delete_logs,
    delta_file_count,
    finish_interrupted,
)
from patchstream.embedded.milvus_server import open_collections
from patchstream.embedded.services import free_port, start_milvus_lite
from patchstream.embedders.hashing import HashingEmbedder
from patchstream.stores.vector.milvus import MilvusVectorStore
from tests.integration.deltas import delete, upsert

FIELDS = ["pk", "tenant", "file_uid", "version", "path", "text", "codes"]
EDITS = 8


def _store(port: int) -> MilvusVectorStore:
    store = MilvusVectorStore(f"http://127.0.0.1:{port}", HashingEmbedder(64),
                              collection_prefix="rw_")  # fmt: skip
    store.ensure_schema()
    return store


def _state(store: MilvusVectorStore) -> tuple[list[Any], list[Any], list[str]]:
    rows = store.query_all('pk != ""', FIELDS)
    records = store.query_all('tenant != ""', ["file_uid", "version", "chunk_rows"],
                              collection=store.files)  # fmt: skip
    hits = store.search("t", "compute the total of the parts", limit=5)
    return (
        sorted((r["pk"], r["version"], r["text"], r["codes"]) for r in rows),
        sorted((r["file_uid"], r["version"], sorted(r["chunk_rows"])) for r in records),
        sorted(h.chunk_id for h in hits),  # the files tie: their order is storage's
    )


def _finish_interrupted(data_dir: Path) -> None:
    """What the next start does first: no copy and no old collection is left behind."""
    from milvus_lite.db import MilvusLite

    db = MilvusLite(str(data_dir))
    try:
        finish_interrupted(db, data_dir)
        assert sorted(n for n in db.list_collections() if "__ps_" in n) == []
    finally:
        db.close()


def _read_back(data_dir: Path) -> tuple[list[Any], list[Any], list[str]]:
    """The store's state through a server started on ``data_dir``."""
    service = start_milvus_lite(data_dir, free_port())
    try:
        store = _store(service.port)
        try:
            return _state(store)
        finally:
            store.close()
    finally:
        service.stop()


@pytest.fixture
def edited_store(tmp_path: Path) -> Iterator[tuple[Path, tuple[Any, ...], str]]:
    """A stopped Milvus Lite data dir after many flushed edits and deletes, the state its
    reads gave before the stop, and its chunks collection's name."""
    port = free_port()
    service = start_milvus_lite(tmp_path, port)
    try:
        store = _store(port)
        version = 1
        for edit in range(EDITS):
            deltas = [upsert("t", f"m{i}.py", f"def total_{i}_{edit}(parts):\n    "
                             f"return sum(parts) + {edit}\n\n\ndef part_{i}():\n    return {i}\n",
                             version + i) for i in range(6)]  # fmt: skip
            version += 6
            store.apply(deltas)
            store.apply([delete("t", f"m{edit % 6}.py", version)])
            version += 1
        # Written and never flushed, then a kill: these rows are in the write-ahead log only,
        # and the start that rewrites replays them into its memtable first.
        store.apply([upsert("t", "late.py", "def late_total(parts):\n    return 0\n",
                            version)], flush=False)  # fmt: skip
        state = _state(store)
        chunks = store.chunks
        store.close()
        service.process.kill()
        service.process.wait()
    finally:
        service.stop()
    yield tmp_path, state, chunks


def test_a_long_delete_log_is_rewritten_with_the_same_rows(
    edited_store: tuple[Path, tuple[Any, ...], str],
) -> None:
    from milvus_lite.db import MilvusLite

    data_dir, before, chunks = edited_store
    deltas_before = delta_file_count(data_dir / "collections" / chunks)
    assert deltas_before > 16  # every flush with deletes wrote a delta file per partition
    db = MilvusLite(str(data_dir))
    try:
        done = compact_delete_logs(db, data_dir, bound=16)
    finally:
        db.close()
    assert chunks in {r.collection for r in done}
    assert delta_file_count(data_dir / "collections" / chunks) == 0
    assert _read_back(data_dir) == before  # rows, vectors, records and BM25 search alike
    names = {p.name for p in (data_dir / "collections").iterdir()}
    assert not {n for n in names if n.endswith((REWRITE_SUFFIX, OLD_SUFFIX))}


def test_a_kill_after_the_copy_finishes_the_swap(
    edited_store: tuple[Path, tuple[Any, ...], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between the marker and the swap: the next start swaps; nothing is lost."""
    from milvus_lite.db import MilvusLite

    data_dir, before, chunks = edited_store

    def killed(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # where a SIGKILL would stop it

    monkeypatch.setattr(milvus_rewrite, "_swap", killed)
    db = MilvusLite(str(data_dir))
    with pytest.raises(KeyboardInterrupt):
        compact_delete_logs(db, data_dir, bound=16)
    db.close()
    assert (data_dir / "collections" / (chunks + REWRITE_SUFFIX)).is_dir()
    monkeypatch.undo()
    _finish_interrupted(data_dir)
    assert delta_file_count(data_dir / "collections" / chunks) == 0  # the copy took its place
    assert _read_back(data_dir) == before


def test_a_kill_during_the_copy_keeps_the_old_collection(
    edited_store: tuple[Path, tuple[Any, ...], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from milvus_lite.db import MilvusLite

    data_dir, before, chunks = edited_store
    monkeypatch.setattr(
        milvus_rewrite, "_mark", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt)
    )
    db = MilvusLite(str(data_dir))
    with pytest.raises(KeyboardInterrupt):
        compact_delete_logs(db, data_dir, bound=16)
    db.close()
    monkeypatch.undo()
    deltas = delta_file_count(data_dir / "collections" / chunks)
    _finish_interrupted(data_dir)
    assert delta_file_count(data_dir / "collections" / chunks) == deltas > 16  # untouched
    assert _read_back(data_dir) == before


def test_requests_that_arrive_together_share_one_collection(
    edited_store: tuple[Path, tuple[Any, ...], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Milvus Lite's own ``get_collection`` built one instance per concurrent first request
    (four threads, four instances over the same files). Opened up front and then one at a
    time, every request gets the same one."""
    from milvus_lite import db as milvus_db
    from milvus_lite.db import MilvusLite

    data_dir, _, chunks = edited_store
    opening = milvus_db.Collection.__init__

    def slow_open(self: Any, *args: Any, **kwargs: Any) -> None:
        time.sleep(0.2)  # a recovery that takes a while, as one with many delta files does
        opening(self, *args, **kwargs)

    monkeypatch.setattr(milvus_db.Collection, "__init__", slow_open)

    def instances(db: Any) -> int:
        got: list[object] = []
        threads = [threading.Thread(target=lambda: got.append(db.get_collection(chunks)))
                   for _ in range(4)]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return len({id(c) for c in got})

    db = MilvusLite(str(data_dir))
    try:
        assert instances(db) > 1  # the race, as shipped
    finally:
        db.close()
    db = MilvusLite(str(data_dir))
    try:
        assert open_collections(db) == 3  # chunks, files, vectors
        assert instances(db) == 1
    finally:
        db.close()


def test_a_collection_that_cannot_be_opened_is_set_aside(
    edited_store: tuple[Path, tuple[Any, ...], str],
) -> None:
    """Its files are kept in ``damaged/``, the others open, and the stack can start: the
    client creates the collection again and the outbox fills it."""
    from milvus_lite.db import MilvusLite

    data_dir, _, chunks = edited_store
    (data_dir / "collections" / chunks / "schema.json").write_text("{not json")
    db = MilvusLite(str(data_dir))
    try:
        assert open_collections(db) == 3
        assert chunks not in db.list_collections()
        assert len(db.list_collections()) == 2
    finally:
        db.close()
    kept = list((data_dir / "damaged").iterdir())
    assert [p.name.rsplit("-", 1)[0] for p in kept] == [chunks]
    assert (kept[0] / "schema.json").read_text() == "{not json"
    assert (kept[0] / "manifest.json").is_file()  # nothing of it deleted
    service = start_milvus_lite(data_dir, free_port())
    try:
        store = _store(service.port)  # creates the collection again
        assert store.query_all('pk != ""', ["pk"]) == []
        store.close()
    finally:
        service.stop()


def test_an_index_sidecar_a_kill_cut_short_is_built_again(
    edited_store: tuple[Path, tuple[Any, ...], str],
) -> None:
    """A chaos run killed Milvus Lite while it wrote a segment's index sidecar: every later
    ``load_collection`` failed ("No data left in file") and the query service could not
    start. The index comes from the segment's own vectors: a sidecar that cannot be read is
    built again, and the store reads as before."""
    data_dir, before, _ = edited_store
    assert _read_back(data_dir) == before  # a load writes each segment's sidecar
    sidecars = [p for p in (data_dir / "collections").rglob("*") if p.is_file()
                and p.suffix == ".idx" and "scalar" not in p.name]  # fmt: skip
    assert sidecars, "no vector index sidecar was written"
    for sidecar in sidecars:  # cut short, as a kill mid-write leaves it
        sidecar.write_bytes(sidecar.read_bytes()[: max(1, sidecar.stat().st_size // 3)])
    assert _read_back(data_dir) == before
    assert not [p for p in (data_dir / "collections").rglob("*.partial")]
