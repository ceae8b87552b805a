"""Milvus Lite vector store: embedding reuse by content hash, deletes, tenant-scoped search."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from patchstream.embedded.services import Service
from patchstream.stores.vector import milvus_rows
from patchstream.stores.vector.milvus import MilvusVectorStore
from tests.integration.conftest import CountingEmbedder
from tests.integration.deltas import delete, upsert

CODE = """\
import os


def parse_config(path):
    \"\"\"Read the configuration file.\"\"\"
    with open(path) as handle:
        return handle.read()


class Loader:
    def load(self, name):
        return parse_config(os.path.join("conf", name))
"""


def test_unchanged_chunks_are_never_embedded_twice(
    vectors: MilvusVectorStore, embedder: CountingEmbedder, tenant: str
) -> None:
    first = upsert(tenant, "cfg/loader.py", CODE, 1)
    stats = vectors.apply([first])
    unique = len({c.content_hash for c in first.chunks})
    assert stats.chunks_embedded == unique == embedder.texts_embedded
    assert len(vectors.rows(tenant)) == len(first.chunks)
    # The same file again at a newer version: nothing to embed, nothing to rewrite.
    again = vectors.apply([upsert(tenant, "cfg/loader.py", CODE, 2)])
    assert again.chunks_embedded == 0 and again.rows_written == 0
    assert embedder.texts_embedded == unique
    # One function edited: exactly one new embedding; moved code keeps its vectors.
    edited = CODE.replace("return handle.read()", "return handle.read().strip()")
    stats = vectors.apply([upsert(tenant, "cfg/loader.py", "\n\n" + edited, 3)])
    assert stats.chunks_embedded == 1
    # The same code under another path of the tenant reuses every vector.
    copied = vectors.apply([upsert(tenant, "vendor/copy.py", edited, 1)])
    assert copied.chunks_embedded == 0 and copied.chunks_reused > 0


def test_reuse_is_per_tenant(
    vectors: MilvusVectorStore, embedder: CountingEmbedder, tenant: str
) -> None:
    vectors.apply([upsert(tenant, "a.py", CODE, 1)])
    before = embedder.texts_embedded
    stats = vectors.apply([upsert(tenant + "z", "a.py", CODE, 1)])
    assert stats.chunks_embedded == before  # another tenant's vectors are never read


def test_stale_and_duplicate_deliveries_change_nothing(
    vectors: MilvusVectorStore, tenant: str
) -> None:
    vectors.apply([upsert(tenant, "a.py", CODE, 5)])
    rows = vectors.rows(tenant)
    stats = vectors.apply([upsert(tenant, "a.py", "def other():\n    pass\n", 4)])
    assert stats.files_stale == 1 and stats.files_applied == 0
    assert vectors.rows(tenant) == rows
    # Two versions of one file in one batch: only the newest is written, keys stay unique.
    stats = vectors.apply(
        [upsert(tenant, "b.py", CODE, 1), upsert(tenant, "b.py", CODE + "\nX = 1\n", 2)]
    )
    assert stats.files_applied == 1
    b_rows = [r for r in vectors.rows(tenant) if r[1].endswith("|b.py")]
    assert len({r[0] for r in b_rows}) == len(b_rows)
    assert any("X = 1" in r[-1] for r in b_rows)


def test_delete_and_rename_remove_rows(vectors: MilvusVectorStore, tenant: str) -> None:
    vectors.apply([upsert(tenant, "old.py", CODE, 1)])
    vectors.apply([delete(tenant, "old.py", 2), upsert(tenant, "new.py", CODE, 2)])
    paths = {r[1].rsplit("|", 1)[1] for r in vectors.rows(tenant)}
    assert paths == {"new.py"}
    assert vectors.apply([upsert(tenant, "old.py", CODE, 1)]).files_stale == 1


def test_search_is_lexical_and_tenant_scoped(vectors: MilvusVectorStore, tenant: str) -> None:
    """Milvus's own search (the query service's copy fuses dense ranks): BM25 over the text,
    inside the tenant, the path prefix and the kind asked for."""
    other = tenant + "q"
    vectors.apply([upsert(tenant, "cfg/loader.py", CODE, 1)])
    vectors.apply(
        [upsert(other, "secret.py", "def canary_zebra_7431():\n    return 'parse_config'\n", 1)]
    )
    hits = vectors.search(tenant, "parse_config configuration file", limit=5)
    assert hits and hits[0].symbol_id.endswith("parse_config")
    assert all(h.repo == "app" and "canary" not in h.text for h in hits)
    leaked = vectors.search(tenant, "canary_zebra_7431", limit=10)
    assert all("canary_zebra_7431" not in h.text for h in leaked)
    assert vectors.search("", "parse_config") == []
    assert vectors.search(other, "canary_zebra_7431", limit=3)[0].path == "secret.py"
    scoped = vectors.search(tenant, "Loader", limit=5, path_prefix="cfg/", kind="class")
    assert [h.symbol_id for h in scoped] == ["app::cfg/loader.py::Loader"]
    assert vectors.search(tenant, "load", limit=5, path_prefix="nope/") == []


def test_a_file_with_too_many_rows_to_list_is_still_diffed_exactly(
    vectors: MilvusVectorStore, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the listing cap, a file's record holds no rows and its rows are read by scan."""
    monkeypatch.setattr(milvus_rows, "MAX_FILE_ROWS", 2)
    many = "\n\n".join(f"def f{i}():\n    return {i}\n" for i in range(6))
    first = upsert(tenant, "many.py", many, 1)
    assert len(first.chunks) > 2
    vectors.apply([first])
    fewer = many.replace("def f5():\n    return 5\n", "")
    vectors.apply([upsert(tenant, "many.py", fewer, 2)])
    texts = " ".join(r[-1] for r in vectors.rows(tenant))
    assert "return 4" in texts and "return 5" not in texts
    vectors.apply([delete(tenant, "many.py", 3)])
    assert vectors.rows(tenant) == set()


def test_stores_starting_together_both_prepare_the_collections(milvus_service: Service) -> None:
    """The query service and the vector sink start at once; the loser of the race to create a
    collection got "File exists" and the sink died at start. Both must come up."""
    import threading

    prefix = f"race_{uuid.uuid4().hex[:8]}_"
    errors: list[BaseException] = []
    stores: list[MilvusVectorStore] = []

    def start() -> None:
        try:
            store = MilvusVectorStore(f"http://127.0.0.1:{milvus_service.port}",
                                      CountingEmbedder(), collection_prefix=prefix)  # fmt: skip
            store.ensure_schema()
            stores.append(store)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and len(stores) == 4
    stores[0].drop()
    for store in stores:
        store.close()


def test_each_store_owns_its_channel_and_closing_one_leaves_the_other_answering(
    milvus_service: Service, tenant: str
) -> None:
    """pymilvus shares one channel per address by default, never closed: an idle one was
    GOAWAY'd by the server ("too_many_pings") and every later store failed to connect."""
    from pymilvus.client.connection_manager import ConnectionManager

    def open_channels() -> int:
        return int(ConnectionManager.get_instance().get_stats()["dedicated_connections"])

    before = open_channels()
    uri = f"http://127.0.0.1:{milvus_service.port}"
    prefix = f"chan_{uuid.uuid4().hex[:8]}_"
    first = MilvusVectorStore(uri, CountingEmbedder(), collection_prefix=prefix)
    second = MilvusVectorStore(uri, CountingEmbedder(), collection_prefix=prefix)
    assert open_channels() == before + 2
    first.ensure_schema()
    first.close()
    assert open_channels() == before + 1
    second.apply([upsert(tenant, "a.py", CODE, 1)])
    assert {h.path for h in second.search(tenant, "parse_config", limit=3)} == {"a.py"}
    second.drop()
    second.close()
    assert open_channels() == before


def test_rows_lost_under_a_surviving_record_are_found_and_owed_again(
    vectors: MilvusVectorStore, tenant: str
) -> None:
    """Issue #32: a SIGKILL of Milvus Lite mid-compaction lost chunk rows whose file records
    survived, so every replay of those files was stale. The audit resets such a file (its
    record and its remaining rows), and the next replay of its event writes it again."""
    from patchstream.stores.vector.milvus_audit import audit_vector_tier
    from patchstream.stores.vector.milvus_client import lit

    a, b = upsert(tenant, "a.py", CODE, 3), upsert(tenant, "b.py", CODE + "\nY = 2\n", 3)
    vectors.apply([a, b])
    whole = vectors.rows(tenant)
    a_rows = sorted(r[0] for r in whole if r[1].endswith("|a.py"))
    # What Milvus lost: two of a.py's rows; and a leftover row of b.py at an older version.
    vectors.client.delete(vectors.chunks, ids=a_rows[:2])
    leftover = dict(next(iter(vectors.query_all(f"pk == {lit(a_rows[2])}", ["*"]))))
    leftover.update(pk="leftover", file_uid=next(r[1] for r in whole if r[1].endswith("|b.py")),
                    version=2)  # fmt: skip
    leftover.pop("sparse", None)
    vectors.client.upsert(vectors.chunks, [leftover])
    vectors.flush()
    assert vectors.apply([a]).files_stale == 1  # before: the replay changes nothing

    audit = audit_vector_tier(vectors)
    assert list(audit.damaged) == [f"{milvus_rows.file_uid(a)}"]
    assert audit.plan.rows_missing == 2 and audit.plan.leftovers == ["leftover"]
    assert vectors.file_hashes(tenant, "app", "main").keys() == {"b.py"}  # a.py is owed again
    assert vectors.apply([a]).files_applied == 1  # the replay of its event
    assert vectors.rows(tenant) == whole
    again = audit_vector_tier(vectors)
    assert (again.damaged, again.plan.leftovers) == ({}, [])


def test_an_audit_beside_a_running_writer_repairs_only_what_a_second_pass_confirms(
    vectors: MilvusVectorStore, tenant: str
) -> None:
    """Issue #32: an audit deferred past the start ran beside the sink. It read a.py's record,
    the sink then replaced a.py's rows, and the audit read the rows: the old ones looked
    lost, and a.py was reset (the soak saw 128 files' records go). Beside writers a pass only
    names suspects; :func:`confirm_suspects` repairs what is still wrong a round later."""
    from patchstream.stores.vector import milvus_audit as audit

    a, b = upsert(tenant, "a.py", CODE, 1), upsert(tenant, "b.py", CODE + "\nY = 2\n", 1)
    vectors.apply([a, b])
    records = vectors.query_all('tenant != ""', audit.RECORD_FIELDS, collection=vectors.files)
    vectors.apply([upsert(tenant, "a.py", "def other():\n    return 2\n", 2)])  # the sink
    mid_write = audit.plan_repair(records, vectors.query_all('pk != ""', audit.ROW_FIELDS))
    assert list(mid_write.damaged) == [milvus_rows.file_uid(a)]  # what the old audit reset
    assert audit.confirm_suspects(vectors, mid_write).damaged == {}
    assert vectors.file_versions(tenant, "app", "main") == {"a.py": 2, "b.py": 1}

    # A real loss: suspected, still there a pass later, repaired.
    b_rows = sorted(r[0] for r in vectors.rows(tenant) if r[1].endswith("|b.py"))
    vectors.client.delete(vectors.chunks, ids=b_rows[:1])
    vectors.flush()
    suspects = audit.read_plan(vectors)
    assert list(suspects.damaged) == [milvus_rows.file_uid(b)]
    assert vectors.file_versions(tenant, "app", "main")["b.py"] == 1  # nothing reset yet
    confirmed = audit.confirm_suspects(vectors, suspects)
    assert list(confirmed.damaged) == [milvus_rows.file_uid(b)]
    assert vectors.file_versions(tenant, "app", "main") == {"a.py": 2}  # b.py owed again


def test_a_collection_released_between_pages_is_loaded_and_read_again(
    vectors: MilvusVectorStore, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #32, restart soak E round 21: Milvus restarted between two pages of a read and
    held the collection released; the iterator's own call raised an untyped MilvusException
    (code 101) and failed an index. The read loads the collection and reads again."""
    from pymilvus.client.iterator.query_iterator import QueryIterator

    vectors.apply([upsert(tenant, f"m{i}.py", f"X{i} = {i}\n", 1) for i in range(1100)],
                  flush=True)  # fmt: skip
    original = QueryIterator.next
    released: list[bool] = []

    def next_then_release(self: QueryIterator) -> object:
        page = original(self)
        if not released:  # after the first page of 1,000: as a restart would leave it
            released.append(True)
            vectors.client.release_collection(vectors.files)
        return page

    monkeypatch.setattr(QueryIterator, "next", next_then_release)
    assert len(vectors.file_versions(tenant, "app", "main")) == 1100
    assert released == [True]


def test_milvus_keeps_int8_codes_and_searches_bm25_without_the_copy(
    vectors: MilvusVectorStore, embedder: CountingEmbedder, tenant: str
) -> None:
    """Milvus keeps each embedding as the search copy's int8 codes (no float32 vector, no
    dense index): the codes decode to the embedder's unit vector within a code's error, and
    Milvus's own search (while the copy cannot answer) ranks by BM25 over the text."""
    from patchstream.stores.vector.dense_codes import decode

    vectors.apply([upsert(tenant, "cfg/loader.py", CODE, 1)])
    fields = {f["name"] for f in vectors.client.describe_collection(vectors.chunks)["fields"]}
    assert "codes" in fields and "dense" not in fields
    rows = vectors.client.query(vectors.chunks, filter=f'tenant == "{tenant}"',
                                output_fields=["text", "codes"])  # fmt: skip
    assert rows
    for row in rows:
        codes, scale = decode(row["codes"], embedder.dim)
        unit = np.asarray(embedder.embed([row["text"]])[0], np.float32)
        unit /= np.linalg.norm(unit)
        assert np.abs(codes.astype(np.float32) * scale - unit).max() <= scale / 2 + 1e-6
    hits = vectors.search(tenant, "parse_config file", 3)
    assert hits and hits[0].symbol_id.endswith("parse_config")


def test_a_reused_vector_is_read_from_a_row_holding_that_content_and_none_other(
    vectors: MilvusVectorStore, embedder: CountingEmbedder, tenant: str
) -> None:
    """Reuse goes through a ref to the chunk row that holds a hash's embedding: a ref whose
    row now holds other content (edited) or is gone (deleted) is a miss, never a wrong
    vector; the hash is embedded again and its ref moves to the new row."""
    one = "def settle(ledger):\n    return ledger.balance()\n"
    vectors.apply([upsert(tenant, "a.py", one, 1)])
    (row,) = [r for r in vectors.client.query(vectors.chunks, filter=f'tenant == "{tenant}"',
                                              output_fields=["content_hash", "codes"])]  # fmt: skip
    expected = row["codes"]
    # a.py's row is edited in place (same chunk id, other content): the ref now names it
    edited = one.replace("balance", "total")
    vectors.apply([upsert(tenant, "a.py", edited, 2)])
    before = embedder.texts_embedded
    stats = vectors.apply([upsert(tenant, "b.py", one, 1)])
    assert stats.chunks_embedded == 1 and embedder.texts_embedded == before + 1
    copy = vectors.client.query(vectors.chunks, filter=f'tenant == "{tenant}" and path == "b.py"',
                                output_fields=["codes"])  # fmt: skip
    assert copy[0]["codes"] == expected  # the reused embedding, coded as it was
    # the ref now names b.py's row: c.py reuses it; once b.py is deleted, c2.py embeds again
    assert vectors.apply([upsert(tenant, "c.py", one, 1)]).chunks_reused == 1
    vectors.apply([delete(tenant, "b.py", 2), delete(tenant, "c.py", 2)])
    assert vectors.apply([upsert(tenant, "c2.py", one, 1)]).chunks_embedded == 1


def test_the_old_vector_collection_is_dropped(
    milvus_service: Service, embedder: CountingEmbedder
) -> None:
    """Stores from before the refs kept every embedding twice: the old copy goes at start."""
    prefix = f"test_{uuid.uuid4().hex[:8]}_"
    store = MilvusVectorStore(f"http://127.0.0.1:{milvus_service.port}", embedder,
                              collection_prefix=prefix)  # fmt: skip
    try:
        from patchstream.stores.vector.milvus_schema import create_files

        create_files(store.client, store.old_vectors)  # any collection under the old name
        assert store.client.has_collection(store.old_vectors)
        store.ensure_schema()
        assert not store.client.has_collection(store.old_vectors)
        assert store.client.has_collection(store.vector_refs)
    finally:
        store.drop()
        store.close()
