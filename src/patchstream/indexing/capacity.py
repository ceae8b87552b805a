"""An index this machine's memory cannot hold is refused before anything is published, with
the estimate, instead of the kernel killing a store halfway through it.

The estimate is linear in the source bytes the index adds (only what the stores lack is
published: an unchanged re-index adds nothing) at ``embedded.memory_mib_per_source_mb``, the
slope the growth bench (``bench/scale.py``) measured for the whole stack's peak. It is
compared with what the kernel says is available (``MemAvailable``, and a cgroup's
``memory.max`` less ``memory.current`` where one is set): the stack already running has taken
its share out of that. Only a stack on this machine is checked (FalkorDB and Milvus on a loopback
address or a Unix socket); a server's stores are the server's to bound.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from patchstream.config.settings import Settings
from patchstream.errors import CapacityError

HEADROOM = 0.9  # of what is available: the OS, page cache and the indexer itself need some


@dataclass(frozen=True)
class MemoryEstimate:
    source_mb: float  # source this index adds, MB
    needed_mib: float  # the stack's growth through it, at its peak
    available_mib: float

    @property
    def fits(self) -> bool:
        return self.needed_mib <= self.available_mib * HEADROOM

    def refusal(self) -> str:
        return (
            f"refused: indexing {self.source_mb:.0f} MB of source needs about "
            f"{self.needed_mib:,.0f} MiB more for the stack at its peak, and this machine has "
            f"{self.available_mib:,.0f} MiB available (the index may use {HEADROOM:.0%} of "
            "it). Index a subfolder, free memory, or set "
            "PATCHSTREAM_EMBEDDED__MEMORY_CHECK=false to try anyway"
        )


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def available_mib(proc: Path = Path("/proc"), cgroup: Path = Path("/sys/fs/cgroup")) -> float:
    """What the kernel could give this process's cgroup now, in MiB (inf: unknown)."""
    found = float("inf")
    try:
        for line in (proc / "meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found = int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    limit, used = _read_int(cgroup / "memory.max"), _read_int(cgroup / "memory.current")
    if limit is not None and used is not None:  # "max" (no limit) reads as None
        found = min(found, max(0, limit - used) / 2**20)
    return found


def _loopback(host: str | None) -> bool:
    if host is None:
        return False
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def stack_is_local(settings: Settings) -> bool:
    """Whether the stores that grow with an index run on this machine: FalkorDB on a loopback
    address, and Milvus embedded (no URI), on a Unix socket or on a loopback address."""
    if settings.graph.backend != "falkordb" or not _loopback(settings.graph.falkordb_host):
        return False
    uri = settings.vector.milvus_uri
    return not uri or uri.startswith("unix:") or _loopback(urlsplit(uri).hostname)


def estimate(source_bytes: int, mib_per_mb: float, available: float) -> MemoryEstimate:
    source_mb = source_bytes / 1e6
    return MemoryEstimate(source_mb, source_mb * mib_per_mb, available)


def check_capacity(settings: Settings, source_bytes: int) -> MemoryEstimate | None:
    """Raise :class:`CapacityError` when the index would not fit; the estimate, when made."""
    embedded = settings.embedded
    if not embedded.memory_check or not source_bytes or not stack_is_local(settings):
        return None
    found = estimate(source_bytes, embedded.memory_mib_per_source_mb, available_mib())
    if not found.fits:
        raise CapacityError(found.refusal())
    return found
