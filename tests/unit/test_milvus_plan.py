"""The vector store's apply planner, without a database: rows written, deleted and listed."""

from __future__ import annotations

from dataclasses import replace

from patchstream.schemas.state import FileDelta
from patchstream.stores.vector.milvus_plan import (
    chunk_pk,
    credit_embeddings,
    file_record,
    plan_rows,
)
from patchstream.stores.vector.milvus_rows import (
    FileRows,
    SearchHit,
    file_uid,
    pack_hit,
    row_fp,
    unpack_hit,
)
from tests.integration.deltas import delete, upsert

TWO = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
ONE_CHANGED = "def f():\n    return 10\n"


def _stored(delta: FileDelta) -> FileRows:
    return FileRows({chunk_pk(delta, c): row_fp(delta, c) for c in delta.chunks})


def test_a_new_file_writes_every_row_and_lists_them() -> None:
    delta = upsert("t", "m.py", TWO, 1)
    plan = plan_rows([delta], {})
    assert {w.chunk.id for w in plan.writes} == {c.id for c in delta.chunks}
    assert len(plan.writes) >= 2 and plan.deletes == []
    assert plan.final_rows[file_uid(delta)] == {w.pk: w.fp for w in plan.writes}
    assert plan.texts_by_hash() == {c.content_hash: c.text for c in delta.chunks}


def test_an_edit_writes_what_changed_and_deletes_what_is_gone() -> None:
    before = upsert("t", "m.py", TWO, 1)
    after = upsert("t", "m.py", ONE_CHANGED, 2)
    plan = plan_rows([after], {file_uid(before): _stored(before)})
    kept = {chunk_pk(after, c) for c in after.chunks}
    gone = set(_stored(before).fps) - kept
    assert gone and sorted(gone) == plan.deletes
    assert {w.pk for w in plan.writes} <= kept
    assert all(w.fp != _stored(before).fps.get(w.pk) for w in plan.writes)
    assert set(plan.final_rows[file_uid(after)]) == kept


def test_the_same_state_again_writes_nothing() -> None:
    delta = upsert("t", "m.py", TWO, 1)
    again = upsert("t", "m.py", TWO, 2)
    plan = plan_rows([again], {file_uid(delta): _stored(delta)})
    assert plan.writes == [] and plan.deletes == []


def test_a_delete_removes_every_row_and_records_the_fence() -> None:
    held = upsert("t", "m.py", TWO, 1)
    gone = delete("t", "m.py", 2)
    plan = plan_rows([gone], {file_uid(held): _stored(held)})
    assert sorted(plan.deletes) == sorted(_stored(held).fps)
    assert plan.writes == [] and plan.final_rows[file_uid(gone)] == {}
    record = file_record(gone, "t", 5.0, (0, 0), plan.final_rows[file_uid(gone)])
    assert record["deleted"] is True and record["version"] == 2
    assert record["chunk_rows"] == [] and record["chunk_rows_complete"] is True


def test_a_hash_embedded_once_is_credited_to_the_first_file_that_needed_it() -> None:
    a = upsert("t", "a.py", TWO, 1)
    b = upsert("t", "b.py", TWO, 1)  # the same code: the same content hashes
    plan = plan_rows([a, b], {})
    hashes = {c.content_hash for c in a.chunks}
    credit = credit_embeddings([a, b], plan.writes, embedded=hashes)
    assert credit[file_uid(a)] == (len(hashes), 0)
    assert credit[file_uid(b)] == (0, len(hashes))
    record = file_record(b, "t", 1.0, credit[file_uid(b)], plan.final_rows[file_uid(b)])
    assert record["chunks_reused"] == len(hashes) and record["path"] == "b.py"
    assert len(record["chunk_rows"]) == len(b.chunks)


def test_a_packed_hit_unpacks_to_the_same_hit_with_the_score_given() -> None:
    text = "def f():\n" + "    total += 'ünï'  # a line\n" * 40
    hit = SearchHit(0.0, "m.py::f", "r::m.py::f", "r", "main", "m.py", "function", "code",
                    3, 9, "ab" * 32, 7, text)  # fmt: skip
    packed = pack_hit(hit)
    assert isinstance(packed, bytes) and len(packed) < len(text) // 4  # compressed
    assert unpack_hit(packed, 0.5) == replace(hit, score=0.5)
