"""``patchstream watch``: publish each file written in a checkout, whoever wrote it.

Claude Code has a hook (``claude_hook``); Cursor, Aider, Codex and a person's editor do not,
but they all write files, and a watch on the checkout sees every write. Paths are gathered
until the checkout has been quiet for ``debounce_s`` (one save is several file system events;
an agent's refactor is many files), then published as one request to the gateway, which puts
them in its outbox before it answers, as for the hook: acknowledged means durable. A batch
the gateway did not take stays pending and is sent again; content already sent is not.

What may leave the machine follows the index's rule (``parsing.indexable``: the size cap,
binary content, secrets by name and content, vendored and generated files) and git's ignores;
a withheld file (too large, binary, a secret) is published as its name, flagged, so the index
drops what it held before; what git ignores or the index never reads (``__pycache__``,
``node_modules``) is passed over quietly, the rest is reported once per path. A delete is sent
only for a file git tracks or this watch published: editors' temporary files come and go
without reaching the index.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchstream.client import PatchRefused
from patchstream.parsing.indexable import SKIP_DIRS, judge_file, path_skip, withheld_hash
from patchstream.producers.watch_reconcile import InFlight, TreeHashes, content_hash, plan_reconcile

MAX_WRITES_PER_REQUEST = 500  # the gateway takes 1,000; a batch over it goes in parts
MAX_REQUEST_CONTENT = 6 << 20  # of the gateway's 8 MiB of body: content as JSON-encoded
MAX_EXPANDED = 10_000  # files one directory event stands for (a tree moved in at once)


@dataclass(frozen=True)
class WatchTarget:
    """Where a checkout's writes go: ``repo@ref``, or the agent workspace over it."""

    root: Path
    repo: str
    ref: str = "main"
    workspace: str | None = None


@dataclass
class Batch:
    """What one flush publishes, and what it left out with the reason."""

    writes: list[dict[str, Any]] = field(default_factory=list)
    digests: dict[str, str | None] = field(default_factory=dict)  # path -> sent (None: gone)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def relative_path(root: Path, raw: str) -> str | None:
    """A watched path as the index names it, or None outside the checkout or in ``.git``."""
    try:
        relative = Path(raw).resolve().relative_to(root).as_posix()
    except ValueError:
        return None
    if relative == "." or relative.split("/", 1)[0] == ".git":
        return None
    return relative


def _git_paths(root: Path, argv: list[str], relatives: list[str], stdin: bool = False) -> set[str]:
    """The paths of ``relatives`` a git listing command prints, NUL-separated, in one call
    (given as arguments, or on its standard input)."""
    if not relatives:
        return set()
    given = b"\0".join(r.encode() for r in relatives) + b"\0" if stdin else None
    command = ["git", "-C", str(root), *argv] + ([] if stdin else ["--", *relatives])
    try:
        listed = subprocess.run(command, input=given, capture_output=True, timeout=10,
                                check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return set()
    return {p for p in listed.stdout.decode("utf-8", "replace").split("\0") if p}


def tracked_by_git(root: Path, relatives: list[str]) -> set[str]:
    return _git_paths(root, ["ls-files", "-z"], relatives)


def ignored_by_git(root: Path, relatives: list[str]) -> set[str]:
    return _git_paths(root, ["check-ignore", "-z", "--stdin", "--no-index"], relatives,
                      stdin=True)  # fmt: skip


def plan_batch(
    target: WatchTarget, changed: Iterable[str], sent: dict[str, str], max_bytes: int,
    actor: str = "watch",
) -> Batch:  # fmt: skip
    """The writes for paths that changed: an upsert for a file whose content differs from what
    was last sent, a delete for a file that is gone and was known; the rest skipped."""
    batch = Batch()
    candidates = sorted(p for p in set(changed) if not _vendored(p)
                        and not in_nested_checkout(target.root, p))  # fmt: skip
    ignored = ignored_by_git(target.root, candidates)
    gone: list[str] = []
    for relative in candidates:
        path = target.root / relative
        if not path.exists() and not path.is_symlink():
            gone.append(relative)
            continue
        if relative in ignored or path.is_symlink() or not path.is_file():
            continue  # what git ignores; a directory; a link the index does not follow
        try:
            skip, data = judge_file(path, relative, max_bytes)
            size = path.stat().st_size
        except OSError:  # gone between the look and the read: the next event says so
            continue
        if skip is not None:
            batch.skipped.append((relative, f"{skip.reason}: {skip.detail}"))
            if not skip.withheld:
                continue
            digest = withheld_hash(skip.reason, size)
            if sent.get(relative) != digest:
                withheld = {"reason": skip.reason, "size": size}
                batch.writes.append(_write(target, relative, "upsert", actor, withheld=withheld))
                batch.digests[relative] = digest
            continue
        digest = content_hash(data)
        if sent.get(relative) == digest:
            continue  # saved again unchanged
        batch.writes.append(_write(target, relative, "upsert", actor,
                                   data.decode("utf-8", errors="replace")))  # fmt: skip
        batch.digests[relative] = digest
    known = tracked_by_git(target.root, gone) | (set(gone) & set(sent))
    for relative in gone:
        if relative in known:
            batch.writes.append(_write(target, relative, "delete", actor))
            batch.digests[relative] = None
    return batch


def expand_directories(root: Path, changed: Iterable[str], sent: dict[str, str]) -> set[str]:
    """``changed`` with each ``dir/`` entry replaced by the files it stands for: those under
    it now (a directory moved in brings no event per file) and those known under it (moved
    out or deleted: git's or this watch's), at most ``MAX_EXPANDED`` per directory."""
    paths = {p for p in changed if not p.endswith("/")}
    for directory in sorted(p for p in changed if p.endswith("/")):
        found: list[str] = []
        for where, dirs, names in os.walk(root / directory):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            found += [(Path(where) / n).relative_to(root).as_posix() for n in sorted(names)]
            if len(found) >= MAX_EXPANDED:
                break
        found += [p for p in sent if p.startswith(directory)]
        found += tracked_by_git(root, [directory])
        paths.update(found[:MAX_EXPANDED])
    return paths


def in_nested_checkout(root: Path, relative: str) -> bool:
    """Whether the path lies in another git checkout under ``root``: a linked worktree an
    agent works in (its files are its workspace's, published by its own watch or hook), or a
    nested repository."""
    parts = relative.split("/")[:-1]
    return any((root.joinpath(*parts[: i + 1]) / ".git").exists() for i in range(len(parts)))


def _vendored(relative: str) -> bool:
    skip = path_skip(relative)
    return skip is not None and skip.reason == "vendored"


def _write(
    target: WatchTarget, relative: str, op: str, actor: str, content: str | None = None,
    withheld: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    write: dict[str, Any] = {"repo": target.repo, "ref": target.ref, "path": relative, "op": op,
                             "actor": actor}  # fmt: skip
    if content is not None:
        write["content"] = content
    if withheld is not None:
        write["withheld"] = withheld
    if target.workspace is not None:
        write["workspace"] = target.workspace
    return write


def requests_of(writes: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """``writes`` in requests the gateway takes: at most ``MAX_WRITES_PER_REQUEST`` writes and
    ``MAX_REQUEST_CONTENT`` characters of content each (a branch switch can rewrite hundreds
    of files at once; one request over the gateway's body limit is refused whole)."""
    parts: list[list[dict[str, Any]]] = []
    size = 0
    for write in writes:
        content = write.get("content")
        length = len(json.dumps(content)) if content is not None else 0  # as it is sent
        if (
            not parts
            or len(parts[-1]) >= MAX_WRITES_PER_REQUEST
            or (parts[-1] and size + length > MAX_REQUEST_CONTENT)
        ):
            parts.append([])
            size = 0
        parts[-1].append(write)
        size += length
    return parts


class PathQueue:
    """Changed paths from the watcher's thread, handed out once the checkout is quiet."""

    def __init__(self, debounce_s: float) -> None:
        self.debounce_s = debounce_s
        self.lock = threading.Lock()
        self.paths: set[str] = set()
        self.last_change = 0.0

    def add(self, relative: str) -> None:
        with self.lock:
            self.paths.add(relative)
            self.last_change = time.monotonic()

    def take_when_quiet(self) -> set[str]:
        """The paths gathered so far if nothing changed for ``debounce_s``, else none."""
        with self.lock:
            if not self.paths or time.monotonic() - self.last_change < self.debounce_s:
                return set()
            taken, self.paths = self.paths, set()
            return taken

    def put_back(self, relatives: Iterable[str]) -> None:
        """Paths a failed publish must send again (without delaying them by a debounce)."""
        with self.lock:
            self.paths.update(relatives)


Publish = Callable[[list[dict[str, Any]]], dict[str, Any]]
Held = Callable[[], dict[str, str | None]]  # the ref's view: path -> hash (GET /v1/files)
RECONCILE_EVERY_S = 1.0  # a burst of batches is compared with the tree once a second at most


class Watcher:
    """Publishes what changed under ``target.root`` until ``stop`` is set."""

    def __init__(
        self, target: WatchTarget, publish: Publish, max_bytes: int, debounce_s: float = 0.1,
        report: Callable[[str], None] = print, retry_s: float = 2.0, held: Held | None = None,
        reconcile_every_s: float = RECONCILE_EVERY_S,
    ) -> None:  # fmt: skip
        self.target = target
        self.publish = publish
        self.max_bytes = max_bytes
        self.queue = PathQueue(debounce_s)
        self.report = report
        self.retry_s = retry_s
        self.sent: dict[str, str] = {}  # path -> digest of the content last acknowledged
        self.reported: set[tuple[str, str]] = set()  # skips said once, not at every save
        self.published = 0
        self.failing = False  # the last attempt found the gateway down
        self.held = held  # None: no reconcile (the watch then trusts its events alone)
        self.tree = TreeHashes(target.root, max_bytes)
        self.in_flight = InFlight()
        self.reconcile_due = False
        self.reconcile_every_s = reconcile_every_s
        self.reconciled_at = -reconcile_every_s
        self.view_failing = False

    def changed(self, raw_path: str, directory: bool = False) -> None:
        """A file system event's path (any thread); a directory that appeared, moved or went
        is queued as ``dir/``, and stands for its files at the next flush. Paths under a
        directory the index never reads are dropped here: a stack's own data dir or a
        virtualenv inside the checkout is written all the time, and counting those writes as
        changes would keep the checkout from ever being quiet."""
        relative = relative_path(self.target.root, raw_path)
        if relative is None:
            return
        parts = relative.split("/")
        if any(part in SKIP_DIRS for part in (parts if directory else parts[:-1])):
            return
        self.queue.add(f"{relative}/" if directory else relative)

    def flush(self, reconcile: bool = True) -> bool:
        """Publish what is due, then (``reconcile``) compare the view with the tree; False
        when the gateway did not take it (it stays pending)."""
        changed = self.queue.take_when_quiet()
        if changed:
            changed = expand_directories(self.target.root, changed, self.sent)
            batch = plan_batch(self.target, changed, self.sent, self.max_bytes)
            if not self._publish(batch):
                self.queue.put_back(changed)
                return False
            self.reconcile_due = self.held is not None
        if (
            reconcile
            and self.reconcile_due
            and time.monotonic() - self.reconciled_at >= self.reconcile_every_s
        ):
            self.reconcile()  # a view that does not answer is due again, not a failed publish
        return True

    def reconcile(self) -> bool:
        """Publish whatever makes the ref's view equal the tree (a branch switch, a rebase,
        a stash, a missed event); False when the view or the gateway did not answer (due
        again). Nothing while the view holds only this watch's own writes: a checkout never
        indexed is indexed by ``index``, not uploaded whole by its first save."""
        if self.held is None:
            return True
        self.reconciled_at = time.monotonic()
        try:
            held = self.held()
        except Exception as exc:  # the query service is down: the next poll tries again
            if not self.view_failing:
                self.report(f"could not read the index's view to compare with the tree: {exc}")
            self.view_failing = True
            return False
        self.view_failing = False
        self.reconcile_due = False
        if all(path in self.sent or path in self.in_flight.writes for path in held):
            return True  # not indexed: what `index` is for
        self.in_flight.settle(held)
        plan = plan_reconcile(self.tree.read(), held, self.in_flight)
        if not plan.upserts and not plan.deletes:
            return True
        batch = plan_batch(self.target, plan.upserts, {}, self.max_bytes)
        for relative in plan.deletes:
            batch.writes.append(_write(self.target, relative, "delete", "watch"))
            batch.digests[relative] = None
        self.report(f"the index differs from the tree: {len(plan.upserts)} to publish, "
                    f"{len(plan.deletes)} to delete")  # fmt: skip
        if not self._publish(batch):
            self.reconcile_due = True
            return False
        return True

    def _publish(self, batch: Batch) -> bool:
        """Send ``batch`` in requests the gateway takes; False when it did not answer."""
        for skip in batch.skipped:
            if skip not in self.reported:
                self.reported.add(skip)
                self.report(f"skipped {skip[0]}: {skip[1]}")
        for part in requests_of(batch.writes):
            try:
                sent = self._send(part)
            except Exception as exc:  # the gateway is down or busy: keep what is unsent
                if not self.failing:  # said once, not at every retry
                    self.report(f"not published, will retry until it is: {exc}")
                self.failing = True
                return False
            if self.failing:
                self.report("the gateway answers again")
                self.failing = False
            for write in sent:
                digest = batch.digests[write["path"]]
                self.in_flight.sent(write["path"], digest)
                if digest is None:
                    self.sent.pop(write["path"], None)
                else:
                    self.sent[write["path"]] = digest
            self.published += len(sent)
            if sent:
                names = ", ".join(f"{'-' * (w['op'] == 'delete')}{w['path']}" for w in sent)
                self.report(f"published {len(sent)}: {names[:300]}")
        return True

    def _send(self, part: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Publishes ``part``; the writes the gateway took. A request it refuses as it is
        (``PatchRefused``: one path it will not take, say) is sent again write by write, so
        only the refused ones are left out, each reported; a gateway down raises."""
        try:
            self.publish(part)
            return part
        except PatchRefused as exc:
            if len(part) == 1:
                self.report(f"refused, not sent again: {part[0]['path']}: {exc}")
                return []
        sent: list[dict[str, Any]] = []
        for write in part:
            sent += self._send([write])
        return sent

    def run(self, stop: threading.Event, poll_s: float = 0.05) -> None:
        """Flush until ``stop``; then once more, so a write just before Ctrl-C is sent."""
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                if event.event_type in ("opened", "closed_no_write"):
                    return
                if event.is_directory and event.event_type == "modified":
                    return  # a file in it changed: that file has its own event
                for raw in (event.src_path, getattr(event, "dest_path", "")):
                    if raw:
                        watcher.changed(raw if isinstance(raw, str) else raw.decode(),
                                        directory=event.is_directory)  # fmt: skip

        observer = Observer()
        observer.schedule(Handler(), str(self.target.root), recursive=True)
        observer.start()
        # What changed while no watch ran (a switch, a pull), when the ref is indexed at all.
        if not self.reconcile():
            self.reconcile_due = True
        try:
            while not stop.wait(poll_s):
                if not self.flush():
                    stop.wait(self.retry_s)
        finally:
            observer.stop()
            observer.join(timeout=5)
            self.queue.debounce_s = 0.0
            self.flush(reconcile=False)  # what was written; a stop waits on no view
