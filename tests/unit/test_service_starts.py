"""``up`` and its backing services: a failed start is retried with its reason, and a port a
dying child still holds is waited for (issue #32)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from patchstream.config.settings import EmbeddedSettings, Settings
from patchstream.embedded.services import ServiceError, ensure_port_free
from patchstream.embedded.supervisor import Supervisor
from patchstream.errors import PortInUseError


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def test_a_port_released_by_a_dying_child_is_waited_for() -> None:
    held = _listening()
    port = held.getsockname()[1]
    threading.Timer(0.5, held.close).start()
    started = time.monotonic()
    ensure_port_free("tansu", "127.0.0.1", port, wait_s=10)
    assert 0.4 < time.monotonic() - started < 9


def test_a_port_still_taken_after_the_wait_is_a_clear_error() -> None:
    held = _listening()
    try:
        with pytest.raises(PortInUseError, match="already in use"):
            ensure_port_free("tansu", "127.0.0.1", held.getsockname()[1], wait_s=0.3)
    finally:
        held.close()


def test_a_backing_service_is_retried_until_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(embedded=EmbeddedSettings(data_dir=str(tmp_path), service_start_attempts=3))
    supervisor = Supervisor(settings)
    failures = ["falkordb exited with code -6 while loading its log:\n# ==> server.c:4076"] * 2
    started = object()

    def once(name: str, port: int) -> object:
        if failures:
            raise ServiceError(failures.pop())
        return started

    monkeypatch.setattr(supervisor, "_start_service_once", once)
    monkeypatch.setattr("patchstream.embedded.supervisor.time.sleep", lambda s: None)
    assert supervisor._start_service("falkordb", 1) is started
    failures[:] = ["down"] * 3
    with pytest.raises(ServiceError, match="down"):
        supervisor._start_service("falkordb", 1)


class _SlowStore:
    """Alive and accepting connections, answering only after ``ready_after`` seconds."""

    name = "milvus"
    host = "127.0.0.1"

    def __init__(self, ready_after: float, listening: bool = True) -> None:
        self.sock = _listening() if listening else None
        self.port = self.sock.getsockname()[1] if self.sock else 1
        self.url = f"{self.host}:{self.port}"
        self.ready_at = time.monotonic() + ready_after
        self.stopped = False

    def alive(self) -> bool:
        return not self.stopped

    def ready(self) -> bool:
        return time.monotonic() >= self.ready_at

    def accepts(self) -> bool:
        return self.sock is not None

    def answered_by_another(self) -> bool:
        return False

    def stop(self) -> None:
        self.stopped = True
        if self.sock:
            self.sock.close()


def test_a_store_that_accepts_but_is_slow_to_answer_is_given_patience_not_a_restart() -> None:
    """The restart soak: Milvus Lite recovering on a loaded machine kept its port open but did
    not answer within 120 s; killing it there only began its recovery again."""
    from patchstream.embedded.services import wait_until_ready

    slow = _SlowStore(ready_after=1.5)
    wait_until_ready(slow, timeout=0.5, patience_s=10.0)  # type: ignore[arg-type]
    assert not slow.stopped
    impatient = _SlowStore(ready_after=1.5)
    with pytest.raises(ServiceError, match="did not answer"):
        wait_until_ready(impatient, timeout=0.5)  # type: ignore[arg-type]
    assert impatient.stopped
    deaf = _SlowStore(ready_after=60, listening=False)  # not even accepting: no patience
    started = time.monotonic()
    with pytest.raises(ServiceError):
        wait_until_ready(deaf, timeout=0.5, patience_s=30.0)  # type: ignore[arg-type]
    assert time.monotonic() - started < 5


def test_a_slow_milvus_is_not_called_hung_after_three_probes() -> None:
    """The restart soak: a Milvus loading its collections on a busy machine failed three
    probes, was killed as hung, and its new start took 137 s more. Others keep the rule of
    three probes in a row."""
    from patchstream.embedded.services import hung

    assert not hung("milvus", failed_probes=3, failing_for_s=20.0)
    assert not hung("milvus", failed_probes=40, failing_for_s=179.0)
    assert hung("milvus", failed_probes=40, failing_for_s=181.0)
    assert not hung("milvus", failed_probes=2, failing_for_s=500.0)
    assert hung("falkordb", failed_probes=3, failing_for_s=0.5)
    assert not hung("falkordb", failed_probes=2, failing_for_s=60.0)


def test_a_milvus_that_works_without_answering_is_loading_not_hung(tmp_path: Path) -> None:
    """A Milvus building its segment indexes on a loaded machine answered nothing for 4 minutes
    and was killed as hung at 180 s, losing what it had not flushed. Its CPU time says it is
    working: then it has 900 s. A process that does nothing is hung at 180 s as before."""
    import subprocess
    import sys

    from patchstream.embedded.services import BUSY_CPU_S, Service, free_port, hung
    from patchstream.system.procfs import TICKS_PER_S, cpu_ticks

    assert not hung("milvus", failed_probes=40, failing_for_s=600.0, busy=True)
    assert hung("milvus", failed_probes=40, failing_for_s=901.0, busy=True)
    assert hung("falkordb", failed_probes=3, failing_for_s=0.5, busy=True)  # no patience there

    def verdicts(code: str, spins: bool) -> list[bool]:
        process = subprocess.Popen([sys.executable, "-c", code])
        try:
            service = Service("milvus", "127.0.0.1", free_port(), process, tmp_path / "m.log")
            found = []
            for _ in range(3):
                found.append(service.alive_and_answering())
                service.failing_since = time.monotonic() - 200  # past the idle patience
                if spins:  # wait on the CPU it earns, not on a clock: a loaded machine gives
                    # a spinning child a sixth of a core, or less
                    start = cpu_ticks(process.pid) or 0
                    deadline = time.monotonic() + 120
                    while (cpu_ticks(process.pid) or 0) - start < 1.2 * BUSY_CPU_S * TICKS_PER_S:
                        assert time.monotonic() < deadline, "the spinning child got no CPU"
                        time.sleep(0.1)
                else:
                    time.sleep(3.0)
            return found
        finally:
            process.kill()
            process.wait()

    assert verdicts("while True: pass", spins=True)[-1] is True  # busy: still given time
    assert verdicts("import time; time.sleep(60)", spins=False)[-1] is False  # idle: hung
