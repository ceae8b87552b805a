"""Freed heap pages handed back to the kernel (``system/heap_trim``), as the stack's Python
services do every few seconds."""

from __future__ import annotations

import threading
from pathlib import Path

from patchstream.system.heap_trim import malloc_trim, start_heap_trim


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_a_trim_hands_back_the_pages_of_freed_chunks_below_the_heaps_top() -> None:
    trim = malloc_trim()
    assert trim is not None  # these machines run glibc; elsewhere nothing is started
    blocks = [bytes(4096) for _ in range(20_000)]  # ~80 MiB of the heap, each page touched
    keep = bytes(4096)  # allocated after them: the heap's top stays in use
    del blocks
    before = _rss_mib()
    trim()
    after = _rss_mib()
    assert before - after > 40, (before, after)
    assert len(keep) == 4096


def test_the_trimming_thread_runs_as_a_daemon() -> None:
    assert start_heap_trim(interval=3600.0)
    (thread,) = [t for t in threading.enumerate() if t.name == "malloc-trim"]
    assert thread.daemon and thread.is_alive()
