"""The gateway's durable outbox: what it acknowledged, kept on disk until both tiers have it.

The embedded broker (Tansu) keeps its log in memory, so an event the broker acknowledged is
not durable yet. The gateway therefore writes every event to this SQLite outbox (WAL,
``synchronous=FULL``: on disk before the 202) and then publishes it. The supervisor of the
embedded stack replays the outbox whenever it restarts the broker, republishing every entry
the stores have not applied, and prunes entries both tiers hold. Replays are harmless: the
sinks fence on versions.

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

from patchstream.schemas.events import PatchEvent
from patchstream.settings import Settings
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

    def pending(self, limit: int = 10_000, after_id: int = 0) -> list[OutboxEntry]:
        """Entries in acknowledgement order, from ``after_id`` on."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, key, value, tenant, repo, ref, workspace, path, version, created_at "
                "FROM outbox WHERE id > ? ORDER BY id LIMIT ?",
                (after_id, limit),
            ).fetchall()
        return [OutboxEntry(*row) for row in rows]

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
