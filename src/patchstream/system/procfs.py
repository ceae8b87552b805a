"""What ``/proc`` says about a process (Linux): how a supervisor tells working from stuck."""

from __future__ import annotations

import os
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int | None:
    """The process's CPU time so far (user + system), in clock ticks; None once it is gone
    or where there is no ``/proc``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and parens
    return int(fields[11]) + int(fields[12])


def rss_mib(pid: int) -> float | None:
    """The process's resident memory now, in MiB; None once it is gone or without ``/proc``."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


_TCP_LISTEN = "0A"


def listens_on(pid: int, port: int) -> bool | None:
    """Whether process ``pid`` holds a listening TCP socket on ``port``; None where /proc
    cannot say (not Linux). Between the free-port check and a child's bind, another process
    can take the port: its server then answers the child's readiness probe (a test worker's
    Milvus "started" on another worker's port, and a probe of it stopped was answered)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            listening = len(fields) > 9 and fields[3] == _TCP_LISTEN
            if listening and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return None
    for fd in fds:
        try:
            if str(fd.readlink()) in inodes:
                return True
        except OSError:
            continue  # closed while we looked
    return False
