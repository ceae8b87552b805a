"""The supervisor's health probes tell a hung service from a live one: a stopped process
still accepts TCP connections (the kernel answers the handshake), so only a real request
shows that it no longer answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from patchstream.embedded.services import Service, ServiceError, port_is_open, wait_until_ready
from patchstream.system.procfs import listens_on
from tests.e2e.conftest import wait_for


def _all_threads_stopped(pid: int) -> bool:
    """Each thread's state in /proc is T (stopped); the field after the parenthesised name."""
    states = [stat.read_text().rsplit(")", 1)[1].split()[0]
              for stat in Path(f"/proc/{pid}/task").glob("*/stat")]  # fmt: skip
    return bool(states) and all(state in ("T", "t") for state in states)


@pytest.mark.parametrize("fixture", ["tansu_service", "milvus_service", "falkordb_service"])
def test_a_stopped_service_is_seen_as_not_answering(
    request: pytest.FixtureRequest, fixture: str
) -> None:
    service: Service = request.getfixturevalue(fixture)
    assert service.answers()
    os.kill(service.process.pid, signal.SIGSTOP)
    try:
        # kill() returns before every thread has stopped: a probe sent in between was once
        # answered (a busy machine's Milvus finished a handshake on a thread still running).
        wait_for(lambda: _all_threads_stopped(service.process.pid), 30, "the group stop")
        assert port_is_open(service.host, service.port)  # what a port check would believe
        assert not service.answers()
    finally:
        os.kill(service.process.pid, signal.SIGCONT)
    assert service.answers()


@pytest.mark.parametrize("fixture", ["tansu_service", "milvus_service", "falkordb_service"])
def test_a_service_answered_on_its_port_by_another_process_is_not_started(
    request: pytest.FixtureRequest, fixture: str, tmp_path: Path
) -> None:
    """The race a free-port check leaves: another process binds the port before the child
    does and answers its readiness probe. The start must fail (and be retried), not hand back
    a service whose probes another server answers."""
    other: Service = request.getfixturevalue(fixture)
    assert listens_on(other.process.pid, other.port) is True
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert listens_on(child.pid, other.port) is False
    late = Service(other.name, other.host, other.port, child, tmp_path / "late.log",
                   password=other.password)  # fmt: skip
    try:
        with pytest.raises(ServiceError, match="answered by another process"):
            wait_until_ready(late, timeout=10.0)
        assert child.wait(timeout=10) is not None  # the child that lost the race is stopped
    finally:
        child.kill()
        child.wait()
    assert other.answers()
