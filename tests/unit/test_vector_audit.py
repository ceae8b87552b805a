"""The vector tier's self-check (``milvus_audit.plan_repair``): pure, rows and records in."""

from __future__ import annotations

from typing import Any

from patchstream.stores.vector.milvus_audit import confirmed, plan_repair


def _record(fuid: str, version: int, pks: list[str], tenant: str = "acme",
            complete: bool = True) -> dict[str, Any]:  # fmt: skip
    return {"tenant": tenant, "file_uid": fuid, "version": version,
            "chunk_rows": [f"{pk}:fp" for pk in pks], "chunk_rows_complete": complete}  # fmt: skip


def _row(pk: str, fuid: str, version: int) -> dict[str, Any]:
    return {"pk": pk, "file_uid": fuid, "version": version}


def test_a_file_whose_listed_rows_are_gone_is_damaged() -> None:
    records = [_record("s|a.py", 5, ["a1", "a2"]), _record("s|b.py", 3, ["b1"])]
    rows = [_row("a1", "s|a.py", 5), _row("b1", "s|b.py", 3)]  # a2 lost
    plan = plan_repair(records, rows)
    assert plan.damaged == {"s|a.py": "acme"}
    assert (plan.files_checked, plan.rows_listed, plan.rows_missing) == (2, 3, 1)
    assert plan.leftovers == []


def test_rows_no_record_lists_are_leftovers_unless_newer_than_the_record() -> None:
    records = [_record("s|a.py", 5, ["a1"])]
    rows = [
        _row("a1", "s|a.py", 5),
        _row("old", "s|a.py", 4),  # superseded and not deleted: a leftover
        _row("new", "s|a.py", 6),  # written before its record (in flight): kept
        _row("x", "s|unknown.py", 1),  # no record at all: its replay rewrites it, kept
    ]
    plan = plan_repair(records, rows)
    assert plan.leftovers == ["old"] and plan.damaged == {}


def test_tombstones_and_unlisted_files_are_not_compared() -> None:
    records = [
        _record("dropped|s", 9, [], tenant="acme#dropped"),
        _record("s|big.py", 2, [], complete=False),  # too many rows to list
    ]
    rows = [_row("r1", "s|big.py", 2)]
    plan = plan_repair(records, rows)
    assert (plan.files_checked, plan.damaged, plan.leftovers) == (1, {}, [])


def test_beside_a_writer_only_what_a_second_pass_still_finds_is_repaired() -> None:
    """Issue #32: an audit beside the running sink read a record, then the sink replaced the
    file's rows, then the audit read the rows: the old rows looked lost and the file was
    reset. A suspect is repaired only when a later pass finds it under the same version."""
    records = [_record("s|a.py", 5, ["a1"]), _record("s|b.py", 3, ["b1"]),
               _record("s|c.py", 2, ["c1"])]  # fmt: skip
    first = plan_repair(records, [_row("b1", "s|b.py", 3), _row("c0", "s|c.py", 1)])
    assert first.damaged.keys() == {"s|a.py", "s|c.py"} and first.leftovers == ["c0"]
    assert first.suspect_files == {"s|a.py", "s|c.py"}
    # The second pass: a.py moved on to version 6 (the write in flight finished); c.py's
    # row c1 is still gone under version 2, and its leftover c0 is still there.
    again = [_record("s|a.py", 6, ["a2"]), _record("s|c.py", 2, ["c1"])]
    second = plan_repair(again, [_row("a2", "s|a.py", 6), _row("c0", "s|c.py", 1)])
    plan = confirmed(first, second)
    assert plan.damaged == {"s|c.py": "acme"} and plan.versions == {"s|c.py": 2}
    assert plan.leftovers == ["c0"]


def test_a_leftover_only_one_pass_saw_is_kept() -> None:
    records = [_record("s|a.py", 5, ["a1"])]
    first = plan_repair(records, [_row("a1", "s|a.py", 5), _row("old", "s|a.py", 4)])
    # By the second pass the record lists the row (a rewrite at the same content).
    second = plan_repair([_record("s|a.py", 5, ["a1", "old"])],
                         [_row("a1", "s|a.py", 5), _row("old", "s|a.py", 4)])  # fmt: skip
    assert confirmed(first, second).leftovers == []
    assert confirmed(first, first).leftovers == ["old"]
