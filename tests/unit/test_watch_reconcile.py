"""The working tree is the truth for a watch (issue #53): whatever changes the tree (edits,
renames, deletes, branch switches, a stash) and whichever of its events the watch sees, the
view it publishes ends equal to a clean index of the final tree.

The index here is a model of the ref's view (path -> the hash both tiers hold) that applies
the gateway's writes as the stores would; the e2e test in ``tests/e2e/test_watch.py`` runs
the same on a real stack."""

from __future__ import annotations

import functools
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchstream.indexing.plan import plan_index
from patchstream.parsing.hashing import hash_bytes
from patchstream.parsing.indexable import withheld_hash
from patchstream.producers.tree_scan import scan_directory
from patchstream.producers.watch import Watcher, WatchTarget
from patchstream.producers.watch_reconcile import InFlight, plan_reconcile

MAX = 4096  # the size cap, small enough for a step to cross it


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@x",
                           *args], check=True, capture_output=True, text=True)  # fmt: skip
    return done.stdout


class ModelIndex:
    """The ref's view as the stores would hold it after the gateway took ``writes``."""

    def __init__(self) -> None:
        self.view: dict[str, str | None] = {}

    def publish(self, writes: list[dict[str, Any]]) -> dict[str, Any]:
        for write in writes:
            if write["op"] == "delete":
                self.view.pop(write["path"], None)
            elif write.get("withheld"):
                self.view[write["path"]] = withheld_hash(**write["withheld"])
            else:
                self.view[write["path"]] = hash_bytes(write["content"].encode())
        return {"event_ids": [], "read_token": ""}


def clean_index(root: Path) -> dict[str, str | None]:
    """What ``patchstream index`` of the tree holds, from nothing."""
    plan = plan_index(root, scan_directory(root, MAX), {}, commits=0)
    return {w.path: w.content_hash for w in plan.writes if w.op == "upsert"}


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(root).parts}  # fmt: skip


def _repo(root: Path) -> None:
    """``main`` with the package under ``src/pkg``; ``moved`` with it under ``pkg`` (as
    requests moved ``src/requests`` to ``requests``), one file changed and one new."""
    _git(root, "init", "-q", "-b", "main")
    for i in range(4):
        (root / "src" / "pkg").mkdir(parents=True, exist_ok=True)
        (root / "src" / "pkg" / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    (root / "README.md").write_text("# shop\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "main")
    _git(root, "switch", "-qc", "moved")
    _git(root, "mv", "src/pkg", "pkg")
    (root / "pkg" / "m0.py").write_text("def f0():\n    return 'moved'\n")
    (root / "pkg" / "extra.py").write_text("def extra():\n    return 9\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "moved")
    _git(root, "switch", "-q", "main")


def _apply(root: Path, step: tuple[Any, ...]) -> None:
    kind = step[0]
    files = sorted(p for p in _tree(root) if p.endswith(".py"))
    if kind == "switch":
        _git(root, "add", "-A")
        _git(root, "stash", "-q")  # uncommitted edits would block the switch
        branch = _git(root, "branch", "--show-current").strip()
        _git(root, "switch", "-q", "moved" if branch == "main" else "main")
    elif kind == "stash":
        _git(root, "stash", "-q", "-u")
    elif kind == "add":
        (root / f"new{step[1]}.py").write_text(f"def new{step[1]}():\n    return 0\n")
    elif kind == "big":  # over the size cap: withheld, a flagged name
        (root / "big.py").write_text("x = 1\n" * (MAX // 4))
    elif files:
        path = root / files[step[1] % len(files)]
        if kind == "edit":
            path.write_text(path.read_text() + f"\n\ndef g{step[2]}():\n    return {step[2]}\n")
        elif kind == "delete":
            path.unlink()
        elif kind == "rename":
            target = root / "renamed" / f"r{step[2]}_{path.name}"
            target.parent.mkdir(exist_ok=True)
            path.rename(target)


STEPS = st.one_of(
    st.tuples(st.just("edit"), st.integers(0, 20), st.integers(0, 999)),
    st.tuples(st.just("delete"), st.integers(0, 20)),
    st.tuples(st.just("rename"), st.integers(0, 20), st.integers(0, 999)),
    st.tuples(st.just("add"), st.integers(0, 5)),
    st.tuples(st.just("switch")),
    st.tuples(st.just("stash")),
    st.tuples(st.just("big")),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(STEPS, st.floats(0, 1)), min_size=1, max_size=8))
def test_any_changes_seen_through_any_events_end_equal_to_a_clean_index(
    steps: list[tuple[tuple[Any, ...], float]],
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch).resolve()
        _repo(root)
        index = ModelIndex()
        index.publish([{"op": "upsert", "path": path, "content": text.decode()}
                       for path, text in _tree(root).items()])  # fmt: skip
        watcher = Watcher(WatchTarget(root, "shop"), index.publish, MAX, debounce_s=0,
                          report=lambda _line: None, held=lambda: dict(index.view),
                          reconcile_every_s=0)  # fmt: skip
        for step, seen in steps:
            before = _tree(root)
            _apply(root, step)
            after = _tree(root)
            changed = sorted(p for p in before.keys() | after.keys()
                             if before.get(p) != after.get(p))  # fmt: skip
            # The watch sees only some of the events (a missed one, a burst cut short).
            for path in changed[: round(len(changed) * seen)]:
                watcher.changed(str(root / path))
            watcher.reconcile_due = True  # any batch, even one whose events were all missed
            assert watcher.flush()
        assert index.view == clean_index(root), steps


def test_a_branch_switch_leaves_nothing_of_the_old_branch(tmp_path: Path) -> None:
    """The walkthrough's failure: after ``git switch`` moved ``src/pkg`` to ``pkg`` the view
    held both trees (every symbol twice). With the tree compared after the batch it holds the
    new one; the events alone (no view to compare with) leave the old paths behind."""
    root = tmp_path.resolve()
    _repo(root)
    for reconcile in (False, True):
        _git(root, "switch", "-q", "main")
        index = ModelIndex()
        index.publish([{"op": "upsert", "path": path, "content": text.decode()}
                       for path, text in _tree(root).items()])  # fmt: skip
        held = functools.partial(dict, index.view) if reconcile else None
        watcher = Watcher(WatchTarget(root, "shop"), index.publish, MAX, debounce_s=0,
                          report=lambda _line: None, held=held, reconcile_every_s=0)  # fmt: skip
        before = _tree(root)
        _git(root, "switch", "-q", "moved")
        for path in before.keys() | _tree(root).keys():
            watcher.changed(str(root / path))
        assert watcher.flush()
        stale = sorted(p for p in index.view if p.startswith("src/"))
        if reconcile:
            assert index.view == clean_index(root) and stale == []
        else:
            assert stale == [f"src/pkg/m{i}.py" for i in range(4)]  # why the compare exists


def test_writes_in_flight_are_not_planned_again() -> None:
    flight = InFlight()
    flight.sent("a.py", "h2", now=100.0)
    flight.sent("gone.py", None, now=100.0)
    tree, held = {"a.py": "h2", "b.py": "h3"}, {"a.py": "h1", "gone.py": "h0", "old.py": "h9"}
    plan = plan_reconcile(tree, held, flight, now=101.0)
    assert (plan.upserts, plan.deletes) == (["b.py"], ["old.py"])
    later = plan_reconcile(tree, held, flight, now=200.0)  # not shown after 30 s: sent again
    assert (later.upserts, later.deletes) == (["a.py", "b.py"], ["gone.py", "old.py"])
    prose = plan_reconcile({}, {"_commits/abc.md": "h"}, InFlight(), now=0.0)
    assert prose.deletes == []  # commit messages are not files of the tree
