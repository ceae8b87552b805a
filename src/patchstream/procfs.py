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
