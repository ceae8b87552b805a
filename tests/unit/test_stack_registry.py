"""A client in any directory finds the running stack's data dir (``stack_registry``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchstream.config import stack_registry
from patchstream.config.stack_registry import (
    client_data_dir,
    record_path,
    record_stack,
    recorded_stacks,
    running_data_dir,
)
from patchstream.errors import ConfigError

HOLD = """
import sys, time
from pathlib import Path
from patchstream.embedded.data_dir_lock import DataDirLock
DataDirLock(Path(sys.argv[1])).acquire()
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path


@pytest.fixture
def running(state: Path) -> Iterator[Path]:
    """A data dir an `up` holds (a process that took its lock, which records it)."""
    data_dir = state / "stack" / ".patchstream"
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(data_dir)],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdout is not None and child.stdout.readline() == "held\n"
    yield data_dir.resolve()
    child.kill()
    child.wait()


def test_a_client_elsewhere_uses_the_running_stacks_data_dir(
    running: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(state)  # a repository's directory: no stack runs here
    assert recorded_stacks() == [running]
    assert client_data_dir(".patchstream", explicitly_set=False) == str(running)
    assert client_data_dir("/elsewhere", explicitly_set=True) == "/elsewhere"  # named: as is


def test_the_working_directorys_running_stack_comes_first(
    running: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(running.parent)
    assert client_data_dir(".patchstream", explicitly_set=False) == ".patchstream"


def test_a_stack_that_stopped_is_not_followed(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stopped = state / "old" / ".patchstream"
    stopped.mkdir(parents=True)
    record_stack(stopped)  # recorded, but nothing holds its lock
    monkeypatch.chdir(state)
    assert running_data_dir() is None
    assert client_data_dir(".patchstream", explicitly_set=False) == ".patchstream"


def test_the_most_recently_started_running_stack_wins_and_dead_ones_are_dropped(
    running: Path, state: Path
) -> None:
    stopped = state / "old"
    stopped.mkdir()
    record_stack(stopped)
    assert recorded_stacks() == [stopped.resolve(), running]
    assert running_data_dir() == running
    record_stack(running)  # started again: first, and the stopped one is dropped
    assert recorded_stacks() == [running]


def test_a_record_another_user_may_write_is_refused_and_not_followed(
    running: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_path().chmod(0o622)
    with pytest.raises(ConfigError, match="another user may write it"):
        recorded_stacks()
    monkeypatch.chdir(state)
    assert client_data_dir(".patchstream", explicitly_set=False) == ".patchstream"


@pytest.mark.parametrize("entry", ["relative/dir", "/tmp/a\nb", 7, None, "/tmp/\x1b[31m"])
def test_entries_that_are_not_absolute_clean_paths_are_dropped(state: Path, entry: object) -> None:
    path = record_path()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([entry, str(state)]))
    path.chmod(0o600)
    assert recorded_stacks() == [state]


def test_the_cli_follows_only_for_client_commands(
    running: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`index` from a repository's directory finds the stack; `up` there never adopts it."""
    from patchstream.config.settings import adjust_settings, get_settings

    monkeypatch.chdir(state)
    adjust_settings("stack", None)
    try:
        assert get_settings().embedded.data_dir == ".patchstream"  # as `up` reads it
        stack_registry.follow_the_running_stack()
        get_settings.cache_clear()
        followed = get_settings().embedded
        assert followed.data_dir == str(running) and "data_dir" not in followed.model_fields_set
    finally:
        adjust_settings("stack", None)
