"""The vector tier's self-check (``milvus_audit.plan_repair``): pure, rows and records in."""

from __future__ import annotations

from typing import Any

from patchstream.stores.vector.milvus_audit import plan_repair


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
