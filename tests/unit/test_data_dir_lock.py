"""One stack per data directory (``embedded.data_dir_lock``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from patchstream.config.stack_registry import LOCK_NAME, holder
from patchstream.embedded.data_dir_lock import DataDirLock, StackAlreadyRunning

HOLD = """
import sys, time
from pathlib import Path
from patchstream.embedded.data_dir_lock import DataDirLock
DataDirLock(Path(sys.argv[1])).acquire()
print("held", flush=True)
time.sleep(600)
"""


def _holder(data_dir: Path) -> subprocess.Popen[str]:
    """A process that holds the lock, as a running `up` does."""
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(data_dir)],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdout is not None and child.stdout.readline() == "held\n"
    return child


def test_a_second_stack_on_a_held_data_dir_is_refused_with_the_holders_pid(
    tmp_path: Path,
) -> None:
    holder = _holder(tmp_path)
    try:
        with pytest.raises(StackAlreadyRunning, match=rf"pid {holder.pid}\) runs on the data dir"):
            DataDirLock(tmp_path).acquire()
    finally:
        holder.kill()
        holder.wait()


def test_a_holder_killed_hard_leaves_the_data_dir_free(tmp_path: Path) -> None:
    holder = _holder(tmp_path)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    lock = DataDirLock(tmp_path)
    lock.acquire()  # no stale lock to clean up by hand
    assert (tmp_path / LOCK_NAME).read_text() == f"{os.getpid()}\n"
    lock.release()
    DataDirLock(tmp_path).acquire()  # released: the next one takes it


def test_the_lock_file_is_not_followed_through_a_symlink(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("someone's file\n")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / LOCK_NAME).symlink_to(elsewhere)
    with pytest.raises(OSError):
        DataDirLock(data_dir).acquire()
    assert elsewhere.read_text() == "someone's file\n"


def test_up_on_a_held_data_dir_fails_at_once_and_starts_nothing(tmp_path: Path) -> None:
    """It used to load FalkorDB's log beside the running stack's before a port clash
    stopped it (two servers on one append-only log)."""
    holder = _holder(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    try:
        up = subprocess.run([sys.executable, "-m", "patchstream.cli.main", "up", "--data-dir",
                             str(tmp_path)], env=env, capture_output=True, text=True,
                            timeout=120)  # fmt: skip
        assert up.returncode != 0
        assert f"another `patchstream up` (pid {holder.pid})" in up.stderr, up.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == [LOCK_NAME]  # nothing started
    finally:
        holder.kill()
        holder.wait()


def test_status_names_the_up_that_holds_the_data_dir(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    env["PATCHSTREAM_EMBEDDED"] = json.dumps({"data_dir": str(tmp_path)})

    def stack_line() -> str:
        done = subprocess.run([sys.executable, "-m", "patchstream.cli.main", "status"],
                              env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
        return next(line for line in done.stdout.splitlines() if line.startswith("stack"))

    assert holder(tmp_path) is None
    child = _holder(tmp_path)
    try:
        assert holder(tmp_path) == child.pid
        assert stack_line().split()[1:] == [str(tmp_path), "(pid", f"{child.pid})", "up"]
    finally:
        child.kill()
        child.wait()
    assert holder(tmp_path) is None
    assert stack_line().split()[1:] == [str(tmp_path), "(no", "`up`", "on", "it)", "DOWN"]


def test_a_home_that_cannot_record_the_stack_does_not_stop_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "state"
    blocked.write_text("a file where the state directory would be")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocked))
    lock = DataDirLock(tmp_path / "data")
    lock.acquire()  # the record cannot be written; the stack starts all the same
    assert holder(tmp_path / "data") == os.getpid()
    lock.release()
