"""Lowering a child's priority reaches its scheduling group, not only the process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchstream.embedded.priority import autogroup_nice, lower_priority


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    # Its own session, as the supervisor starts every child: its own autogroup on Linux.
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_child_in_its_own_session_gets_the_nice_on_process_and_group(
    child: subprocess.Popen[bytes],
) -> None:
    own_group = autogroup_nice(os.getpid())
    applied = lower_priority(child.pid, 10)
    assert applied.process is True
    assert os.getpriority(os.PRIO_PROCESS, child.pid) == 10
    if not Path("/proc/self/autogroup").exists():  # a kernel without autogroups
        assert applied.group is None
        return
    assert applied.group is True
    assert autogroup_nice(child.pid) == 10
    assert autogroup_nice(os.getpid()) == own_group  # the caller's own group is untouched


def test_a_refused_group_write_is_reported_and_the_process_nice_still_holds(
    child: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    # A proc tree whose autogroup entry cannot be written (a directory stands in for it).
    (tmp_path / str(child.pid) / "autogroup").mkdir(parents=True)
    applied = lower_priority(child.pid, 7, proc=tmp_path)
    assert applied == type(applied)(process=True, group=False)
    assert os.getpriority(os.PRIO_PROCESS, child.pid) == 7


def test_no_autogroup_entry_means_no_group_and_out_of_range_is_refused(
    child: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    assert lower_priority(child.pid, 3, proc=tmp_path).group is None
    with pytest.raises(ValueError, match="outside 0-19"):
        lower_priority(child.pid, 25)
    with pytest.raises(ValueError):
        lower_priority(child.pid, -5)  # raising a priority is not this helper's job


def test_autogroup_nice_reads_the_kernel_line(tmp_path: Path) -> None:
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "autogroup").write_text("/autogroup-812 nice 10\n")
    assert autogroup_nice(42, proc=tmp_path) == 10
    assert autogroup_nice(43, proc=tmp_path) is None
