"""The working tree is the truth for a watch: after a batch, what the index holds is compared
with the tree, and whatever differs is published.

File system events alone cannot keep the index right. A branch switch rewrites hundreds of
files at once and the paths it removes are no longer tracked by git, so a watch that deletes
only what git tracks (or what it sent itself) left the old tree indexed beside the new one:
every symbol twice. A rebase, a stash or a pull does the same, and an event can be missed.
So after each batch the watch reads the ref's view (``GET /v1/files``: path and the hash
both tiers hold) and the tree (``producers.tree_scan``: the rule every entry point shares), and
plans upserts for files whose content differs and deletes for files the tree lacks.

Pure parts here: the tree's hashes (with a stat cache: a reconcile re-reads only files whose
size or mtime moved) and the plan. Writes in flight are not sent again for ``IN_FLIGHT_S``:
the view shows them only once both tiers applied them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from patchstream.parsing.hashing import hash_bytes
from patchstream.parsing.indexable import withheld_hash
from patchstream.parsing.prose import is_virtual
from patchstream.producers.tree_scan import scan_directory

IN_FLIGHT_S = 30.0  # a write not in the view this long after it was sent is sent again


def content_hash(data: bytes) -> str:
    """The hash the index holds for a file's bytes (decoded as UTF-8 with replacement, as
    every producer sends text): what ``plan_index`` compares too."""
    return hash_bytes(data.decode("utf-8", errors="replace").encode("utf-8"))


@dataclass
class TreeHashes:
    """Path -> the hash the index should hold for the checkout's file, cached by stat."""

    root: Path
    max_bytes: int
    cache: dict[str, tuple[int, int, int, str]] = field(default_factory=dict)

    def read(self) -> dict[str, str]:
        scan = scan_directory(self.root, self.max_bytes)
        hashes = {w.path: withheld_hash(w.reason, w.size) for w in scan.withheld}
        seen: dict[str, tuple[int, int, int, str]] = {}
        for relative in scan.files:
            path = self.root / relative
            try:
                stat = path.stat()
            except OSError:
                continue  # gone since the scan: the next batch says so
            key = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
            cached = self.cache.get(relative)
            if cached is not None and cached[:3] == key:
                digest = cached[3]
            else:
                try:
                    digest = content_hash(path.read_bytes())
                except OSError:
                    continue
            seen[relative] = (*key, digest)
            hashes[relative] = digest
        self.cache = seen
        return hashes


@dataclass
class InFlight:
    """What this watch sent and the view may not show yet: path -> (hash or None for a
    delete, when it was sent)."""

    writes: dict[str, tuple[str | None, float]] = field(default_factory=dict)

    def sent(self, path: str, digest: str | None, now: float | None = None) -> None:
        self.writes[path] = (digest, time.monotonic() if now is None else now)

    def covers(self, path: str, digest: str | None, now: float) -> bool:
        """Whether ``digest`` (None: gone) for ``path`` was sent within ``IN_FLIGHT_S``."""
        entry = self.writes.get(path)
        return entry is not None and entry[0] == digest and now - entry[1] < IN_FLIGHT_S

    def settle(self, held: Mapping[str, str | None]) -> None:
        """Forget what the view now shows (or what went stale)."""
        now = time.monotonic()
        self.writes = {
            path: (digest, at) for path, (digest, at) in self.writes.items()
            if now - at < IN_FLIGHT_S and held.get(path) != digest
        }  # fmt: skip


@dataclass(frozen=True)
class ReconcilePlan:
    upserts: list[str]
    deletes: list[str]


def plan_reconcile(
    tree: Mapping[str, str], held: Mapping[str, str | None], in_flight: InFlight,
    now: float | None = None,
) -> ReconcilePlan:  # fmt: skip
    """Upserts for tree files the view lacks or holds with another hash, deletes for view
    files the tree lacks (commit and discussion pages aside: they are not files of the
    tree); what this watch just sent is not planned again."""
    now = time.monotonic() if now is None else now
    upserts = sorted(
        path for path, digest in tree.items()
        if held.get(path) != digest and not in_flight.covers(path, digest, now)
    )  # fmt: skip
    deletes = sorted(path for path in held
                     if path not in tree and not is_virtual(path)
                     and not in_flight.covers(path, None, now))  # fmt: skip
    return ReconcilePlan(upserts, deletes)
