"""The gateway's durable outbox: what it acknowledged, kept on disk until both tiers have it.

The embedded broker (Tansu) keeps its log in memory, so an event the broker acknowledged is
not durable yet. The gateway therefore writes every event to this SQLite outbox (WAL,
``synchronous=FULL``: on disk before the 202) and then publishes it. The supervisor of the
embedded stack replays the outbox whenever it restarts the broker, republishing every entry
the stores have not applied. Replays are harmless: the sinks fence on versions.

The outbox is the embedded stack's log of record, compacted as a Kafka topic keyed by file
is: an entry both tiers hold is marked applied and kept, and an applied entry removes the
older entries of its file. So it holds each file's latest event, and a store that lost what
it had applied (Milvus Lite killed mid-compaction, a cut FalkorDB log) is rebuilt from it.
Dropped refs' entries are removed (replaying them would resurrect the ref).

Cost: one fsync'd SQLite transaction per request (a batch of writes is one transaction).
With a durable broker (``kafka.durable``: a replicated Kafka, acks=all) an entry is dropped as
soon as the broker acknowledged it; nothing else prunes the outbox there.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchstream.config.settings import Settings
from patchstream.schemas.events import PatchEvent
from patchstream.streams.codec import encode

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key BLOB NOT NULL,
    value BLOB NOT NULL,
    tenant TEXT NOT NULL,
    repo TEXT NOT NULL,
    ref TEXT NOT NULL,
    workspace TEXT,
    path TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at REAL NOT NULL
)
"""
# Added after the first release: older outboxes get the column (every entry not applied).
_APPLIED = "ALTER TABLE outbox ADD COLUMN applied INTEGER NOT NULL DEFAULT 0"
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS outbox_backlog ON outbox (applied, id)",
    "CREATE INDEX IF NOT EXISTS outbox_file ON outbox (tenant, repo, ref, path)",
)


_META = "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
# Set by the supervisor while a replay after a restart waits (``query.owed`` reads it).
REPLAY_DUE_SINCE = "replay_due_since"

_PUSHES = """
CREATE TABLE IF NOT EXISTS pushes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    repo TEXT NOT NULL,
    ref TEXT NOT NULL,
    before TEXT,
    after TEXT NOT NULL,
    actor TEXT,
    source TEXT NOT NULL,
    delivery TEXT,
    accepted_at REAL NOT NULL
)
"""


@dataclass(frozen=True)
class AcceptedPush:
    """A push the gateway answered 202 for and has not finished yet."""

    id: int
    tenant: str
    repo: str
    ref: str
    before: str | None
    after: str
    actor: str | None
    source: str
    delivery: str | None
    accepted_at: float


@dataclass(frozen=True)
class OutboxEntry:
    id: int
    key: bytes
    value: bytes
    tenant: str
    repo: str
    ref: str
    workspace: str | None
    path: str
    version: int
    created_at: float
    applied: bool = False  # both tiers held it when last checked


def _entry(row: tuple[Any, ...]) -> OutboxEntry:
    id_, key, value, tenant, repo, ref, workspace, path, version, created_at, applied = row
    return OutboxEntry(id_, key, value, tenant, repo, ref, workspace, path, version, created_at,
                       bool(applied))  # fmt: skip


class Outbox:
    """An append-only SQLite log of acknowledged events (safe across threads and processes)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.execute(_SCHEMA)
        self._db.execute(_PUSHES)
        self._db.execute(_META)
        if "applied" not in self._columns():
            try:
                self._db.execute(_APPLIED)
            except sqlite3.OperationalError:  # another process added it first
                if "applied" not in self._columns():
                    raise
        for statement in _INDEXES:
            self._db.execute(statement)

    def _columns(self) -> set[str]:
        return {str(row[1]) for row in self._db.execute("PRAGMA table_info(outbox)")}

    def append(self, events: Sequence[PatchEvent]) -> list[int]:
        """Write ``events`` durably in one transaction; their outbox ids, in order."""
        now = time.time()
        rows = [(e.key.encode(), encode(e), e.tenant, e.repo, e.ref, e.workspace, e.path,
                 e.version, now) for e in events]  # fmt: skip
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                ids = []
                for row in rows:
                    cursor = self._db.execute(
                        "INSERT INTO outbox (key, value, tenant, repo, ref, workspace, path, "
                        "version, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        row,
                    )
                    ids.append(int(cursor.lastrowid or 0))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return ids

    def remove(self, ids: Iterable[int]) -> None:
        wanted = [(i,) for i in ids]
        with self._lock:
            self._db.executemany("DELETE FROM outbox WHERE id = ?", wanted)

    def mark_applied(self, entries: Iterable[OutboxEntry]) -> int:
        """Both tiers hold ``entries``: keep them as their files' latest events, and remove
        the older entries of those files (compaction). How many entries were removed."""
        removed = 0
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for e in entries:
                    self._db.execute("UPDATE outbox SET applied = 1 WHERE id = ?", (e.id,))
                    removed += self._db.execute(
                        "DELETE FROM outbox WHERE tenant = ? AND repo = ? AND ref = ? AND "
                        "path = ? AND workspace IS ? AND id < ? AND version <= ?",
                        (e.tenant, e.repo, e.ref, e.path, e.workspace, e.id, e.version),
                    ).rowcount
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return removed

    def meta(self, name: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, name: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)",
                             (name, value))  # fmt: skip

    def delete_meta(self, name: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM meta WHERE name = ?", (name,))

    def values(self, after_id: int = 0, limit: int = 1000) -> list[tuple[int, bytes]]:
        """(id, value) of every entry after ``after_id``, applied or not, in id order."""
        with self._lock:
            rows = self._db.execute("SELECT id, value FROM outbox WHERE id > ? ORDER BY id "
                                    "LIMIT ?", (after_id, limit)).fetchall()  # fmt: skip
        return [(int(id_), bytes(value)) for id_, value in rows]

    def rewrite(self, entry_id: int, value: bytes, version: int) -> None:
        """Replace an entry's event (same file) with ``value`` at ``version``, owed again;
        the old bytes are overwritten on disk (``secure_delete``), not merely unlinked."""
        with self._lock:
            self._db.execute("PRAGMA secure_delete=ON")
            self._db.execute("UPDATE outbox SET value = ?, version = ?, applied = 0 WHERE id = ?",
                             (value, version, entry_id))  # fmt: skip

    def scrub(self) -> None:
        """Fold the WAL into the file and rebuild it: no free page or WAL frame keeps what
        :meth:`rewrite` replaced."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("VACUUM")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def mark_pending(self, ids: Iterable[int]) -> None:
        """A store lost what these entries applied: they are owed to it again."""
        wanted = [(i,) for i in ids]
        with self._lock:
            self._db.executemany("UPDATE outbox SET applied = 0 WHERE id = ?", wanted)

    def pending(
        self, limit: int = 10_000, after_id: int = 0, retained: bool = False
    ) -> list[OutboxEntry]:
        """Entries not applied by both tiers yet, in acknowledgement order, from ``after_id``
        on; with ``retained``, the applied entries the outbox keeps too."""
        where = "id > ?" if retained else "applied = 0 AND id > ?"
        with self._lock:
            rows = self._db.execute(
                "SELECT id, key, value, tenant, repo, ref, workspace, path, version, created_at, "
                f"applied FROM outbox WHERE {where} ORDER BY id LIMIT ?",
                (after_id, limit),
            ).fetchall()
        return [_entry(row) for row in rows]

    def add_push(
        self,
        tenant: str,
        repo: str,
        ref: str,
        before: str | None,
        after: str,
        actor: str | None,
        source: str,
        delivery: str | None,
    ) -> int:
        """Record an accepted push durably (before its 202); its id."""
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO pushes (tenant, repo, ref, before, after, actor, source, delivery, "
                "accepted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (tenant, repo, ref, before, after, actor, source, delivery, time.time()),
            )
            return int(cursor.lastrowid or 0)

    def remove_push(self, push_id: int) -> None:
        with self._lock:
            self._db.execute("DELETE FROM pushes WHERE id = ?", (push_id,))

    def pending_pushes(self) -> list[AcceptedPush]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, tenant, repo, ref, before, after, actor, source, delivery, "
                "accepted_at FROM pushes ORDER BY id"
            ).fetchall()
        return [AcceptedPush(*row) for row in rows]

    def count(self) -> int:
        """Entries not applied by both tiers yet (the backlog)."""
        with self._lock:
            return int(
                self._db.execute("SELECT count(*) FROM outbox WHERE applied = 0").fetchone()[0]
            )

    def retained(self) -> int:
        """Every entry kept, applied ones included."""
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM outbox").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def outbox_path(settings: Settings) -> Path:
    configured = settings.gateway.outbox_path
    return Path(configured) if configured else Path(settings.embedded.data_dir) / "outbox.sqlite"


async def publish_durably(
    outbox: Outbox | None,
    events: list[PatchEvent],
    publish: Callable[[list[PatchEvent]], Awaitable[object]],
    *,
    durable_broker: bool,
    refused: tuple[type[BaseException], ...] = (Exception,),
) -> None:
    """On disk first, then published. Entries leave the outbox when the broker refused the
    events (the caller is told they failed: a later replay must not apply them) or, with a
    durable broker, as soon as it acknowledged them."""
    ids = await asyncio.to_thread(outbox.append, events) if outbox is not None else []
    try:
        await publish(events)
    except refused:
        if outbox is not None:
            await asyncio.to_thread(outbox.remove, ids)
        raise
    if outbox is not None and durable_broker:
        await asyncio.to_thread(outbox.remove, ids)
