"""The outbox as a compacted log: each file's latest applied event kept, the rest removed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from patchstream.producers.outbox import Outbox
from patchstream.schemas.events import PatchEvent


def _event(path: str, version: int, ref: str = "main") -> PatchEvent:
    return PatchEvent(tenant="acme", repo="app", ref=ref, path=path, op="upsert",
                      content=f"X = {version}\n", version=version, source="agent")  # fmt: skip


def test_an_applied_entry_is_kept_and_removes_its_files_older_entries(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox.sqlite")
    outbox.append([_event("a.py", 1), _event("a.py", 2), _event("b.py", 1),
                   _event("a.py", 1, ref="dev")])  # fmt: skip
    newest_a = outbox.pending()[1]
    assert outbox.mark_applied([newest_a]) == 1  # a.py@1 on main only
    assert [(e.path, e.ref, e.version) for e in outbox.pending()] == [
        ("b.py", "main", 1),
        ("a.py", "dev", 1),
    ]
    assert outbox.count() == 2 and outbox.retained() == 3
    kept = outbox.pending(retained=True)
    assert next((e.path, e.version, e.applied) for e in kept) == ("a.py", 2, True)
    # A store lost it: owed again, and a check finds it pending.
    outbox.mark_pending([newest_a.id])
    assert outbox.count() == 3


def test_an_outbox_written_before_compaction_opens_with_every_entry_owed(tmp_path: Path) -> None:
    path = tmp_path / "outbox.sqlite"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, key BLOB NOT NULL, "
                "value BLOB NOT NULL, tenant TEXT NOT NULL, repo TEXT NOT NULL, ref TEXT NOT "
                "NULL, workspace TEXT, path TEXT NOT NULL, version INTEGER NOT NULL, "
                "created_at REAL NOT NULL)")  # fmt: skip
    old.execute("INSERT INTO outbox (key, value, tenant, repo, ref, path, version, created_at) "
                "VALUES (x'00', x'00', 'acme', 'app', 'main', 'a.py', 1, 0)")  # fmt: skip
    old.commit()
    old.close()
    outbox = Outbox(path)
    assert outbox.count() == 1 and not outbox.pending()[0].applied
    Outbox(path).close()  # a second process opening it finds the column there


def test_overdue_is_by_age_and_by_times_sent() -> None:
    from patchstream.embedded.outbox_relay import overdue
    from patchstream.producers.outbox import OutboxEntry

    def entry(id_: int, created_at: float) -> OutboxEntry:
        return OutboxEntry(id_, b"k", b"v", "t", "app", "main", None, "a.py", 1, created_at)

    pending = [entry(1, 100.0), entry(2, 150.0), entry(3, 10.0)]
    assert [e.id for e in overdue(pending, 200.0, 60.0, {}, 3)] == [1, 3]
    assert [e.id for e in overdue(pending, 200.0, 60.0, {1: 3, 3: 2}, 3)] == [3]


def test_retained_entries_are_rechecked_every_minute_for_ten_minutes_after_a_start() -> None:
    """Issue #32: the restart soak (round 16) saw Milvus drop the records of 108 untouched
    files two to four minutes after a SIGKILL restart; the recheck every 120 s found them
    late. Right after Milvus (re)started the tender rechecks every minute."""
    from patchstream.embedded.outbox_relay import (
        AUDIT_S,
        RECHECK_AFTER_START_S,
        RECHECK_EARLY_S,
        RECHECK_S,
        next_recheck_at,
    )

    assert RECHECK_EARLY_S < RECHECK_S
    assert next_recheck_at(1000.0, None) == 1000.0 + RECHECK_S
    assert next_recheck_at(1000.0, 900.0) == 1000.0 + RECHECK_EARLY_S  # 100 s after a start
    # The vector tier's own audit: as early after a start, every AUDIT_S otherwise.
    assert next_recheck_at(1000.0, 900.0, AUDIT_S) == 1000.0 + RECHECK_EARLY_S
    assert next_recheck_at(1000.0, None, AUDIT_S) == 1000.0 + AUDIT_S
    late = 900.0 + RECHECK_AFTER_START_S
    assert next_recheck_at(late, 900.0) == late + RECHECK_S
