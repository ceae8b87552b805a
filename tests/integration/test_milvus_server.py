"""The embedded Milvus Lite runs under ``embedded.milvus_server``: Arrow on the system
allocator, two malloc arenas, and a thread that trims the heap (its memory figures in the
README rest on these)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path

import pytest

from patchstream.embedded.milvus_server import MEMORY_ENV, OPEN_FILES
from patchstream.embedded.services import Service, free_port, start_milvus_lite


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def _threads(pid: int) -> set[str]:
    return {(task / "comm").read_text().strip() for task in Path(f"/proc/{pid}/task").iterdir()}


def test_the_server_runs_with_the_memory_settings(milvus_service: Service) -> None:
    pid = milvus_service.process.pid
    env = _environ(pid)
    for name, value in MEMORY_ENV.items():
        assert env.get(name) == value
    assert "patchstream.embedded.milvus_server" in Path(f"/proc/{pid}/cmdline").read_text()
    assert "malloc-trim" in _threads(pid)
    assert milvus_service.answers()


def test_an_operator_setting_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    service = start_milvus_lite(tmp_path, free_port())
    try:
        env = _environ(service.process.pid)
        assert env["MALLOC_ARENA_MAX"] == "4"
        assert env["ARROW_DEFAULT_MEMORY_POOL"] == "system"
    finally:
        service.stop()


def test_compaction_is_bounded_by_the_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    from milvus_lite.engine import compaction

    from patchstream.embedded.milvus_server import DATA_FILES, SEGMENT_ROWS, bound_compaction

    for name in ("MAX_SEGMENT_ROWS", "MAX_DATA_FILES"):  # restored after the test
        monkeypatch.setattr(compaction, name, getattr(compaction, name))
    bound_compaction()
    assert (compaction.MAX_SEGMENT_ROWS, compaction.MAX_DATA_FILES) == (SEGMENT_ROWS, DATA_FILES)
    # The forced merge of full segments comes no sooner than with the shipped bounds.
    assert SEGMENT_ROWS * DATA_FILES >= 100_000 * 32


def _open_files_limit(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open-files line")


def test_the_server_has_room_for_a_flood_of_connections(milvus_service: Service) -> None:
    """Issue #32: the restart soak's clients, connecting in a tight loop while Milvus Lite
    was busy, ran it out of its 20,000 descriptors; then it failed to open its own data files
    (Errno 24). The server raises its soft limit to the hard one (a desktop's soft 1,024
    is what it would otherwise get), and the hard one where it may."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert _open_files_limit(milvus_service.process.pid) >= min(hard, OPEN_FILES)


def test_raising_the_open_files_limit_never_lowers_it() -> None:
    import subprocess
    import sys

    script = (
        "import resource\n"
        "from patchstream.embedded.milvus_server import raise_open_files\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "got = raise_open_files(4096)\n"
        "now = resource.getrlimit(resource.RLIMIT_NOFILE)[0]\n"
        "assert got == now >= min(4096, hard), (got, now, hard)\n"
        "assert raise_open_files(64) == now  # a smaller wish keeps what it has\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr


def _descriptors(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


class _Flood:
    """Three threads that connect and hang up at once, as fast as they can."""

    def __init__(self, target: int | Path) -> None:
        self.target, self.knocks, self.stop = target, 0, threading.Event()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(3)]

    def __enter__(self) -> _Flood:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.knocks += 1
            tcp = isinstance(self.target, int)
            address = ("127.0.0.1", self.target) if tcp else str(self.target)
            with socket.socket(socket.AF_INET if tcp else socket.AF_UNIX) as sock:
                sock.settimeout(1)
                with contextlib.suppress(OSError):
                    sock.connect(address)


@pytest.mark.parametrize("on_socket", [True, False], ids=["unix-socket", "tcp"])
def test_a_client_flood_cannot_run_the_server_out_of_descriptors(
    tmp_path: Path, on_socket: bool
) -> None:
    """Three threads connect and hang up in a tight loop (the restart soak's knocker): before
    the bound, the server held up to 16,582 descriptors at once (3,593 over TCP) against this
    machine's limit of 20,000, and then failed to open its own data files."""
    from patchstream.embedded.milvus_server import MAX_CONNECTIONS

    socket_path = tmp_path / "milvus.sock"
    service = start_milvus_lite(tmp_path / "milvus", free_port(),
                                socket_path=socket_path if on_socket else None)  # fmt: skip
    try:
        pid = service.process.pid
        if on_socket:
            assert service.url == f"unix:{socket_path}"
            assert socket_path.stat().st_mode & 0o077 == 0  # this user only
        target: int | Path = socket_path if on_socket else service.port
        most = 0
        with _Flood(target) as flood:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                most = max(most, _descriptors(pid))
                time.sleep(0.05)
        assert flood.knocks > 10_000
        assert most < 2 * MAX_CONNECTIONS + 100, most
        assert service.answers()  # and it serves once the flood is over
    finally:
        service.stop()


def test_a_dead_servers_socket_is_replaced_and_a_live_ones_refused(tmp_path: Path) -> None:
    from patchstream.embedded.services import ensure_socket_free
    from patchstream.errors import ConfigError

    socket_path = tmp_path / "milvus.sock"
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(socket_path))  # bound, never listening: what a killed server leaves
    stale.close()
    service = start_milvus_lite(tmp_path / "milvus", 0, socket_path=socket_path)
    try:
        assert service.answers()
        with pytest.raises(ConfigError, match="another server listens"):
            ensure_socket_free("milvus", socket_path)
    finally:
        service.stop()


def test_a_second_server_on_a_taken_port_refuses_to_start(
    milvus_service: Service, tmp_path: Path
) -> None:
    """gRPC's default SO_REUSEPORT let a second Milvus bind the port and take half the
    connections: a probe of a stopped server was answered by the other."""
    import subprocess

    from patchstream.embedded.services import milvus_lite_command

    listen = f"127.0.0.1:{milvus_service.port}"
    command = [*milvus_lite_command(), "--data-dir", str(tmp_path), "--listen", listen]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, done.stdout[-2000:]
    assert f"cannot listen on {listen}" in done.stderr + done.stdout
    assert milvus_service.answers()  # the first one still serves
