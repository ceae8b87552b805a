"""API keys a team manages (``patchstream keys create|list|revoke``).

Keys are kept hashed (SHA-256 of the key) in ``<data dir>/keys.sqlite``, mode 0600: a key is
shown once, when it is made, and never stored. The gateway and the query service read the
same file, so one command serves both, and each re-reads it within a second of a change: a
new key works and a revoked one stops without a restart. The environment's key maps
(``PATCHSTREAM_QUERY__API_KEYS``, the gateway config's ``[api_keys]``) keep working beside it,
for compose and for tests.

A key's last use is recorded at most once a minute per key, from a background thread, so a
request never waits on the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from patchstream.errors import ContractError

KEY_PREFIX = "psk_"
# An agent's key may not speak as the user (the memory policy); only an admin's may drop a
# repository or a ref. A key of the environment's maps is an admin's (or an agent's).
ROLES = ("person", "agent", "admin")
STORE_NAME = "keys.sqlite"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-]{0,63}")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS keys (
    name TEXT NOT NULL, tenant TEXT NOT NULL, role TEXT NOT NULL, digest TEXT NOT NULL UNIQUE,
    created REAL NOT NULL, last_used REAL, revoked REAL
);
CREATE UNIQUE INDEX IF NOT EXISTS keys_active_name ON keys (name) WHERE revoked IS NULL;
"""
TOUCH_EVERY_S = 60.0


def digest_of(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def key_name(tenant: str, key: str) -> str:
    """How logs and metrics name a configured key: its tenant and a fingerprint of it."""
    return f"{tenant}/k-{digest_of(key)[:8]}"


def key_store_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / STORE_NAME


@dataclass(frozen=True)
class KeyRecord:
    name: str
    tenant: str
    role: str
    created: float
    last_used: float | None
    revoked: float | None
    fingerprint: str  # the digest's first 8 hex digits: how logs and metrics name a key


@dataclass(frozen=True)
class KeyEntry:
    """What a presented key stands for."""

    tenant: str
    role: str
    name: str  # for logs and rate limits: never the key


class KeyStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():  # made private before any key goes in
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        db = sqlite3.connect(self.path, timeout=5.0)
        db.executescript(_SCHEMA)
        return db

    def create(self, tenant: str, name: str, role: str = "person") -> str:
        """A new key for ``tenant`` (shown to the caller once, stored hashed)."""
        if not _TENANT.fullmatch(tenant):
            raise ContractError(f"tenant {tenant[:80]!r} is not a plain name", code="bad_name")
        if not _NAME.fullmatch(name):
            raise ContractError(f"key name {name[:80]!r} is not a plain name (letters, digits, "
                                "'.', '_', '@', '-')", code="bad_name")  # fmt: skip
        if role not in ROLES:
            raise ContractError(f"role {role!r} is not one of {', '.join(ROLES)}", code="bad_role")
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        with self._connect() as db:
            try:
                row = (name, tenant, role, digest_of(key), time.time())
                db.execute("INSERT INTO keys (name, tenant, role, digest, created) VALUES "
                           "(?, ?, ?, ?, ?)", row)  # fmt: skip
            except sqlite3.IntegrityError as exc:
                raise ContractError(f"a key named {name!r} exists; revoke it first or choose "
                                    "another name", code="exists") from exc  # fmt: skip
        return key

    def records(self) -> list[KeyRecord]:
        if not self.path.exists():
            return []
        with self._connect() as db:
            rows = db.execute("SELECT name, tenant, role, created, last_used, revoked, digest "
                              "FROM keys ORDER BY created").fetchall()  # fmt: skip
        return [KeyRecord(name, tenant, role, created, used, revoked, digest[:8])
                for name, tenant, role, created, used, revoked, digest in rows]  # fmt: skip

    def revoke(self, name: str) -> bool:
        """Revoke the active key called ``name``; False when there is none."""
        if not self.path.exists():
            return False
        with self._connect() as db:
            done = db.execute("UPDATE keys SET revoked = ? WHERE name = ? AND revoked IS NULL",
                              (time.time(), name))  # fmt: skip
        return done.rowcount > 0

    def active(self) -> dict[str, KeyEntry]:
        """Digest -> what the key stands for, for every key not revoked."""
        if not self.path.exists():
            return {}
        with self._connect() as db:
            rows = db.execute("SELECT digest, tenant, role, name FROM keys "
                              "WHERE revoked IS NULL").fetchall()  # fmt: skip
        return {digest: KeyEntry(tenant, role, f"{tenant}/{name}") for digest, tenant, role, name
                in rows}  # fmt: skip

    def touch(self, used: Mapping[str, float]) -> None:
        with self._connect() as db:
            db.executemany("UPDATE keys SET last_used = ? WHERE digest = ?",
                           [(at, digest) for digest, at in used.items()])  # fmt: skip

    def stamp(self) -> tuple[int, ...]:
        """Changes when the file does (its write-ahead log included)."""
        found: list[int] = []
        for path in (self.path, self.path.with_name(self.path.name + "-wal")):
            try:
                info = path.stat()
                found += [info.st_mtime_ns, info.st_size]
            except OSError:
                found += [0, 0]
        return tuple(found)


class KeyRing(Mapping[str, str]):
    """The keys a service accepts: the configured map (key -> tenant) and the store's keys.

    As a Mapping it is the configured map only (a stored key cannot be listed: it is not
    kept); :meth:`lookup` answers for both."""

    def __init__(
        self, configured: Mapping[str, str], store: KeyStore | None = None,
        agent_keys: tuple[str, ...] = (), recheck_s: float = 1.0,
    ) -> None:  # fmt: skip
        self.configured = dict(configured)
        self.store = store
        self.agent_keys = agent_keys
        self.recheck_s = recheck_s
        self._lock = threading.Lock()
        self._stored: dict[str, KeyEntry] = {}
        self._stamp: tuple[int, ...] | None = None
        self._checked = float("-inf")
        self._used: dict[str, float] = {}
        self._touched: set[str] = set()
        self._flushed = time.monotonic()

    def __getitem__(self, key: str) -> str:
        return self.configured[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.configured)

    def __len__(self) -> int:
        return len(self.configured)

    def lookup(self, given: str) -> KeyEntry | None:
        if not given:
            return None
        tenant = None
        for key, owner in self.configured.items():  # every key compared, in constant time
            if hmac.compare_digest(key.encode(), given.encode("utf-8", "surrogatepass")):
                tenant = owner
        if tenant is not None:
            role = "agent" if given in self.agent_keys else "admin"
            return KeyEntry(tenant, role, key_name(tenant, given))
        if self.store is None:
            return None
        digest = digest_of(given)
        entry = self._current().get(digest)
        if entry is not None:
            self._record_use(digest)
        return entry

    def has_stored_keys(self) -> bool:
        return self.store is not None and bool(self._current())

    def tenants(self) -> set[str]:
        """Every tenant a key may read: the configured keys' and the stored keys'."""
        stored = self._current() if self.store is not None else {}
        return {*self.configured.values(), *(entry.tenant for entry in stored.values())}

    def _current(self) -> dict[str, KeyEntry]:
        assert self.store is not None
        now = time.monotonic()
        with self._lock:
            if now - self._checked < self.recheck_s:
                return self._stored
            self._checked = now
            stamp = self.store.stamp()
            if stamp != self._stamp:
                try:
                    self._stored = self.store.active()
                    self._stamp = stamp
                except sqlite3.Error:
                    pass  # a file being written: the last read stands, the next check retries
            return self._stored

    def _record_use(self, digest: str) -> None:
        now = time.time()
        with self._lock:
            self._used[digest] = now
            first = digest not in self._touched  # a key's first use is seen at once
            if not first and time.monotonic() - self._flushed < TOUCH_EVERY_S:
                return
            self._touched.add(digest)
            self._flushed, used, self._used = time.monotonic(), self._used, {}
        store = self.store
        assert store is not None
        threading.Thread(target=_quietly, args=(store, used), daemon=True).start()


def _quietly(store: KeyStore, used: dict[str, float]) -> None:
    with contextlib.suppress(sqlite3.Error):  # last use helps the operator; it fails nothing
        store.touch(used)
