"""``patchstream watch``: which writes a checkout's changes become (``producers.watch``)."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from patchstream.client import PatchRefused
from patchstream.producers.watch import (
    MAX_REQUEST_CONTENT,
    PathQueue,
    Watcher,
    WatchTarget,
    expand_directories,
    plan_batch,
    relative_path,
    requests_of,
)

MAX = 1 << 20


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def checkout(tmp_path: Path) -> WatchTarget:
    root = tmp_path / "shop"
    root.mkdir()
    _git(root, "init", "-q")
    (root / ".gitignore").write_text("*.log\nbuild-out/\n")
    (root / "tracked.py").write_text("def tracked():\n    return 1\n")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "init")
    return WatchTarget(root=root.resolve(), repo="shop", ref="main")


def _ops(writes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(w["op"], w["path"]) for w in writes]


def test_written_files_become_upserts_and_what_must_stay_here_does(checkout: WatchTarget) -> None:
    root = checkout.root
    (root / "app.py").write_text("def app():\n    return 2\n")
    (root / ".env").write_text("SECRET=1\n")
    (root / "run.log").write_text("ignored by git\n")
    (root / "blob.py").write_bytes(b"\x00\x01binary")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\x00")
    (root / "big.py").write_text("x = 1\n" * 100)
    changed = ["app.py", ".env", "run.log", "blob.py", "__pycache__/app.cpython-311.pyc",
               "big.py"]  # fmt: skip
    batch = plan_batch(checkout, changed, {}, max_bytes=200)
    # What must stay here goes as a name and a reason only, so the index drops what it held.
    assert _ops(batch.writes) == [("upsert", ".env"), ("upsert", "app.py"), ("upsert", "big.py"),
                                  ("upsert", "blob.py")]  # fmt: skip
    writes = {w["path"]: w for w in batch.writes}
    assert writes["app.py"]["content"] == "def app():\n    return 2\n"
    assert writes["app.py"]["repo"] == "shop" and writes["app.py"]["actor"] == "watch"
    withheld = {path: w.get("withheld") for path, w in writes.items() if path != "app.py"}
    assert withheld == {".env": {"reason": "secret", "size": 9},
                        "big.py": {"reason": "too_large", "size": 600},
                        "blob.py": {"reason": "binary", "size": 8}}  # fmt: skip
    assert not any("content" in w for path, w in writes.items() if path != "app.py")
    reasons = dict(batch.skipped)  # the ignored file and __pycache__ pass quietly
    assert set(reasons) == {".env", "blob.py", "big.py"}
    assert reasons[".env"].startswith("secret: ") and reasons["blob.py"].startswith("binary: ")
    assert "size cap" in reasons["big.py"]
    # Unchanged, a withheld file is not sent again.
    again = plan_batch(checkout, changed, {**batch.digests}, max_bytes=200)
    assert again.writes == []


def test_unchanged_content_is_not_sent_again(checkout: WatchTarget) -> None:
    (checkout.root / "app.py").write_text("a = 1\n")
    first = plan_batch(checkout, ["app.py"], {}, MAX)
    sent = {"app.py": first.digests["app.py"]}
    assert plan_batch(checkout, ["app.py"], sent, MAX).writes == []  # saved again as it was
    (checkout.root / "app.py").write_text("a = 2\n")
    assert _ops(plan_batch(checkout, ["app.py"], sent, MAX).writes) == [("upsert", "app.py")]


def test_a_delete_is_sent_for_known_files_only(checkout: WatchTarget) -> None:
    """An editor's temporary file (vim's 4913, a save's .tmp) comes and goes unpublished."""
    (checkout.root / "tracked.py").unlink()
    batch = plan_batch(checkout, ["tracked.py", "4913", "app.py.tmp", "sent.py"],
                       {"sent.py": "digest"}, MAX)  # fmt: skip
    assert _ops(batch.writes) == [("delete", "sent.py"), ("delete", "tracked.py")]
    assert batch.digests == {"tracked.py": None, "sent.py": None}


def test_writes_go_to_the_workspace_when_one_is_named(checkout: WatchTarget) -> None:
    (checkout.root / "app.py").write_text("a = 1\n")
    target = WatchTarget(checkout.root, "shop", "main", workspace="agent-7")
    (write,) = plan_batch(target, ["app.py"], {}, MAX).writes
    assert write["workspace"] == "agent-7" and write["ref"] == "main"


def test_paths_outside_the_checkout_or_in_git_are_not_changes(checkout: WatchTarget) -> None:
    root = checkout.root
    assert relative_path(root, str(root / "pkg" / "a.py")) == "pkg/a.py"
    assert relative_path(root, str(root / ".git" / "index")) is None
    assert relative_path(root, str(root.parent / "elsewhere.py")) is None
    assert relative_path(root, str(root)) is None


def test_paths_are_handed_out_once_the_checkout_is_quiet() -> None:
    queue = PathQueue(debounce_s=0.2)
    queue.add("a.py")
    assert queue.take_when_quiet() == set()  # still changing
    deadline = time.monotonic() + 5
    taken: set[str] = set()
    while not taken and time.monotonic() < deadline:
        taken = queue.take_when_quiet()
        time.sleep(0.01)
    assert taken == {"a.py"} and queue.take_when_quiet() == set()


def test_a_batch_the_gateway_did_not_take_is_sent_again_and_nothing_is_lost(
    checkout: WatchTarget,
) -> None:
    (checkout.root / "a.py").write_text("a = 1\n")
    (checkout.root / "b.py").write_text("b = 1\n")
    calls: list[list[str]] = []

    def down_twice(writes: list[dict[str, Any]]) -> dict[str, Any]:
        calls.append([w["path"] for w in writes])
        if len(calls) <= 2:
            raise ConnectionError("gateway down")
        return {"read_token": "t"}

    lines: list[str] = []
    watcher = Watcher(checkout, down_twice, MAX, debounce_s=0.0, report=lines.append)
    watcher.changed(str(checkout.root / "a.py"))
    watcher.changed(str(checkout.root / "b.py"))
    assert watcher.flush() is False and watcher.flush() is False
    assert len(lines) == 1 and "will retry" in lines[0]  # said once, not at every retry
    assert watcher.flush() is True
    assert calls == [["a.py", "b.py"]] * 3 and watcher.published == 2
    assert lines[1] == "the gateway answers again" and lines[2].startswith("published 2")
    assert set(watcher.sent) == {"a.py", "b.py"}


def test_the_watch_sees_files_written_on_disk(checkout: WatchTarget) -> None:
    """The real watcher (inotify here): a file written after it started is published."""
    published: list[dict[str, Any]] = []
    seen = threading.Event()

    def publish(writes: list[dict[str, Any]]) -> dict[str, Any]:
        published.extend(writes)
        seen.set()
        return {"read_token": "t"}

    watcher = Watcher(checkout, publish, MAX, debounce_s=0.05, report=lambda _: None)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,))
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not seen.is_set() and time.monotonic() < deadline:
            (checkout.root / "pkg").mkdir(exist_ok=True)
            (checkout.root / "pkg" / "new.py").write_text("def new():\n    return 3\n")
            seen.wait(0.5)  # the observer may start after the first write
    finally:
        stop.set()
        thread.join(timeout=30)
    assert ("upsert", "pkg/new.py") in _ops(published)
    assert not thread.is_alive()


def test_files_of_a_worktree_inside_the_checkout_are_not_the_checkouts(
    checkout: WatchTarget,
) -> None:
    """An agent's linked worktree under the project (``git worktree add .agents/a7``) is that
    agent's workspace: the checkout's watch must not publish it to main under a prefix."""
    _git(checkout.root, "worktree", "add", "-q", "-b", "a7", ".agents/a7")
    (checkout.root / ".agents" / "a7" / "app.py").write_text("a = 1\n")
    (checkout.root / "app.py").write_text("a = 1\n")
    batch = plan_batch(checkout, [".agents/a7/app.py", "app.py"], {}, MAX)
    assert _ops(batch.writes) == [("upsert", "app.py")] and batch.skipped == []


def test_a_directory_moved_in_or_out_stands_for_its_files(checkout: WatchTarget) -> None:
    """A tree moved in brings one event for the directory, none per file; one moved out or
    deleted leaves its files to be deleted."""
    root = checkout.root
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("a = 1\n")
    (root / "pkg" / "__pycache__" / "a.pyc").write_bytes(b"\x00")
    assert expand_directories(root, {"pkg/", "x.py"}, {}) == {"pkg/a.py", "x.py"}
    (root / "pkg" / "a.py").unlink()
    assert expand_directories(root, {"pkg/"}, {"pkg/a.py": "d", "other.py": "d"}) == {"pkg/a.py"}


def test_a_write_the_gateway_refuses_is_reported_and_does_not_take_the_batch_with_it(
    checkout: WatchTarget,
) -> None:
    (checkout.root / "a.py").write_text("a = 1\n")
    (checkout.root / "b.py").write_text("b = 1\n")
    calls: list[list[str]] = []

    def refuses_b(writes: list[dict[str, Any]]) -> dict[str, Any]:
        calls.append([w["path"] for w in writes])
        if any(w["path"] == "b.py" for w in writes):
            raise PatchRefused("gateway answered 422: bad path", 422)
        return {"read_token": "t"}

    lines: list[str] = []
    watcher = Watcher(checkout, refuses_b, MAX, debounce_s=0.0, report=lines.append)
    watcher.changed(str(checkout.root / "a.py"))
    watcher.changed(str(checkout.root / "b.py"))
    assert watcher.flush() is True and watcher.flush() is True  # nothing left to send
    assert calls == [["a.py", "b.py"], ["a.py"], ["b.py"]]
    assert set(watcher.sent) == {"a.py"} and watcher.published == 1
    assert "refused, not sent again: b.py: gateway answered 422" in lines[0]
    assert lines[1] == "published 1: a.py"


def test_writes_under_directories_the_index_never_reads_do_not_delay_the_rest(
    checkout: WatchTarget,
) -> None:
    """A stack's data dir inside the checkout (`make run` on this repository) is written
    every second: those writes must not keep the checkout from ever being quiet."""
    watcher = Watcher(checkout, lambda writes: {}, MAX, debounce_s=60.0, report=lambda _: None)
    for raw in (
        ".patchstream/falkordb/appendonly.aof",
        ".venv/lib/x.py",
        "node_modules/",
        "pkg/__pycache__/a.pyc",
    ):
        watcher.changed(str(checkout.root / raw), directory=raw.endswith("/"))
    assert watcher.queue.paths == set() and watcher.queue.last_change == 0.0
    watcher.changed(str(checkout.root / "pkg" / "a.py"))
    assert watcher.queue.paths == {"pkg/a.py"}


def test_a_branch_switch_worth_of_writes_goes_in_requests_the_gateway_takes() -> None:
    """Hundreds of rewritten files in one request were over the gateway's 8 MiB body limit:
    refused whole (a 413), they would have been lost."""
    big = [{"path": f"m{i}.py", "content": "x" * (1 << 20)} for i in range(10)]
    small = [{"path": f"s{i}.py", "content": "y"} for i in range(1200)]
    parts = requests_of(big + small)
    assert [w["path"] for part in parts for w in part] == [w["path"] for w in big + small]
    assert all(len(part) <= 500 for part in parts)
    assert all(sum(len(w["content"]) for w in part) <= MAX_REQUEST_CONTENT for part in parts)
    assert requests_of([]) == []
