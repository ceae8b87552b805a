"""FalkorDB loads its log where no client can reach it, and a damaged log is set aside.

Redis replays its append-only log command by command, serving clients between commands. A
client's command served while a replayed MULTI/EXEC of long ``GRAPH.QUERY``s runs aborts the
server (``server.c:4076 '!server.in_exec'``), on every start, once the log's tail is a few MB.
Whoever connects (the readiness probe, a sink, a user's CLI) kills it. So the embedded
FalkorDB starts with no TCP listener: only a Unix socket in a private directory (mode 0700),
which even the launcher leaves alone until the server's own log says it has loaded. Then one
``CONFIG SET port`` opens the TCP port that every client uses.

A log Redis cannot read (a torn or damaged file; ``aof-load-truncated`` already forgives a
torn last command) is copied aside, never deleted, and ``redis-check-aof --fix`` truncates the
live copy at the first damaged command. What the cut lost, the outbox replay and the
reconciler bring back: they compare the graph's file versions with what was acknowledged.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

_READY = "Ready to accept connections"
# Lines of a failed start that say why; the bug report's memory test tail says nothing.
_REASONS = ("ASSERTION FAILED", "==>", "Bad file format", "Unrecoverable error", "corrupt",
            "Fatal error", "Can't", "Failed opening", "Unexpected end of file")  # fmt: skip
_DAMAGE = ("Bad file format", "Unrecoverable error reading", "Unexpected end of file",
           "Invalid", "corrupt")  # fmt: skip
LOG_DIR = "appendonlydir"


def private_socket_path() -> Path:
    """A Unix socket path in a fresh directory only this user can enter (short: the kernel
    caps socket paths at 108 bytes, and a data dir can be deep)."""
    return Path(tempfile.mkdtemp(prefix="patchstream-falkordb-")) / "load.sock"


def remove_socket_dir(socket_path: Path) -> None:
    shutil.rmtree(socket_path.parent, ignore_errors=True)


@dataclass
class LogWatch:
    """What a server wrote to its log since it was started (the log is appended to)."""

    path: Path
    offset: int = 0

    @classmethod
    def from_now(cls, path: Path) -> LogWatch:
        return cls(path, path.stat().st_size if path.exists() else 0)

    def text(self) -> str:
        with contextlib.suppress(OSError), self.path.open("rb") as log:
            log.seek(self.offset)
            return log.read().decode(errors="replace")
        return ""

    def loaded(self) -> bool:
        return _READY in self.text()


def failure_reason(log_text: str, lines: int = 12) -> str:
    """The lines of a failed start that say why it failed (the assertion, the file error),
    else the log's tail."""
    every = log_text.splitlines()
    wanted = [line for line in every if any(mark in line for mark in _REASONS)]
    return "\n".join(list(dict.fromkeys(wanted))[:lines] or every[-lines:])


def looks_damaged(log_text: str) -> bool:
    """The server refused its log as unreadable (not a crash of a client's making)."""
    return any(mark in log_text for mark in _DAMAGE)


def set_aside_and_repair(data_dir: Path, redis_server: str) -> Path | None:
    """Copy ``appendonlydir`` to ``appendonlydir.damaged-<time>`` and truncate the live log
    at its first damaged command. The copy's path; None if there was no log."""
    live = data_dir / LOG_DIR
    manifests = sorted(live.glob("*.manifest"))
    if not manifests:
        return None
    stamp = f"{time.strftime('%Y%m%dT%H%M%S')}-{time.time_ns() % 10**6}"
    aside = data_dir / f"{LOG_DIR}.damaged-{stamp}"
    shutil.copytree(live, aside)
    # redis-check-aof is redis-server run under that name.
    tools = Path(tempfile.mkdtemp(prefix="patchstream-check-aof-"))
    try:
        check = tools / "redis-check-aof"
        check.symlink_to(redis_server)
        subprocess.run([str(check), "--fix", str(manifests[0])], input=b"y\n",
                       capture_output=True, timeout=600, check=False)  # fmt: skip
    finally:
        shutil.rmtree(tools, ignore_errors=True)
    return aside


def open_tcp(
    socket_path: Path, password: str | None, host: str, port: int, graph_config: dict[str, int]
) -> None:
    """Set the graph module's ``graph_config`` (its query timeouts: none while the log
    replayed) and open the TCP listener of a server that has loaded, over its private
    socket."""
    import redis

    client = redis.Redis(unix_socket_path=str(socket_path), password=password, socket_timeout=10)
    try:
        for name, value in graph_config.items():  # TIMEOUT_MAX first: DEFAULT may not exceed it
            client.execute_command("GRAPH.CONFIG", "SET", name, value)  # type: ignore[no-untyped-call]
        client.config_set("bind", host)
        client.config_set("port", str(port))
    finally:
        client.close()
