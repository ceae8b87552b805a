"""Freed heap pages handed back to the kernel, every few seconds, in the stack's Python
services.

glibc's malloc keeps the pages of freed chunks inside its heap: a process that held a large
batch once (a parse worker decompressing a cold index's files, a sink building rows) keeps
that high-water mark until the heap's top is free, which fragmentation postpones for good.
``malloc_trim(0)`` returns every whole free page (``madvise``), wherever it is in the heap.
Measured on a running 20k-file stack (``gdb -p PID -ex 'call malloc_trim(0)'``), once: a
parse worker 287 -> 166 MiB, the vector sink 288 -> 264 MiB, the query service 387 -> 384.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import threading
import time
from collections.abc import Callable

TRIM_INTERVAL_S = 5.0
_PR_SET_NAME = 15


def malloc_trim() -> Callable[[], object] | None:
    """glibc's ``malloc_trim(0)``, or None where the C library has none (musl, macOS)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    with contextlib.suppress(OSError):
        trim = getattr(ctypes.CDLL(name), "malloc_trim", None)
        if trim is not None:
            return lambda: trim(0)
    return None


def _trim_forever(trim: Callable[[], object], interval: float) -> None:
    with contextlib.suppress(OSError, AttributeError):  # the name `top -H` shows (Linux)
        ctypes.CDLL(None).prctl(_PR_SET_NAME, b"malloc-trim", 0, 0, 0)
    while True:
        time.sleep(interval)
        trim()


def start_heap_trim(interval: float = TRIM_INTERVAL_S) -> bool:
    """A daemon thread trimming the heap every ``interval`` seconds; False where the C
    library cannot (nothing started)."""
    trim = malloc_trim()
    if trim is None:
        return False
    threading.Thread(target=_trim_forever, args=(trim, interval), daemon=True,
                     name="malloc-trim").start()  # fmt: skip
    return True
