"""``milvus-lite server`` with its memory kept in check and room for open files: what ``up``
runs as Milvus Lite.

Milvus Lite 3.x is Python over Arrow. Measured on scipy's 42k chunk rows (peak RSS of a
fresh server): 1,050 MiB as shipped, 739 MiB with Arrow on the system allocator and glibc
held to two malloc arenas. Arrow's own pool keeps freed buffers, and each gRPC worker thread
otherwise grows its own arena. A thread here also hands freed heap pages back to the kernel
every few seconds (``malloc_trim``): inserts build and drop Python lists of floats for every
vector, which leave holes the heap never returns by itself.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import sys
import threading
import time
from collections.abc import Callable

# Read at process start (glibc) or at pyarrow's import, so they go in the child's environment;
# a value the operator set wins.
MEMORY_ENV = {
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    "MALLOC_ARENA_MAX": "2",
    # Rows a collection holds unflushed (128 MiB by default, per collection): the vector
    # cache is written without a flush, so it sat at that bound.
    "MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES": str(32 << 20),
}
TRIM_INTERVAL_S = 5.0
# Compaction reads every input segment, concatenates and rewrites them in memory: with the
# shipped bound (100k rows a segment, 200k an input) one tenant's whole partition at the
# large bench corpus, which put the server's peak at twice its steady size (2,764 against
# 1,462 MiB). Smaller segments bound that copy; the file count that forces a merge of full
# segments grows so that it still comes at the shipped 3.2M rows a partition.
SEGMENT_ROWS = 25_000
DATA_FILES = 128
_PR_SET_NAME = 15
# Every client connection is a file descriptor. The restart soak's clients, connecting in a
# tight loop to a server busy loading, ran it out of its 20,000 ("[Errno 24] Failed to open
# local file .../delta_*.parquet"); from then on it could not open its own data files.
OPEN_FILES = 1 << 20


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


def bound_compaction() -> None:
    """Milvus Lite's compaction reads these module globals at each run (its only readers)."""
    from milvus_lite.engine import compaction

    compaction.MAX_SEGMENT_ROWS = SEGMENT_ROWS
    compaction.MAX_DATA_FILES = DATA_FILES


def raise_open_files(wanted: int = OPEN_FILES) -> int:
    """The soft limit on open files raised to ``wanted`` (the hard limit too where the
    process may raise it): the limit it ends at."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < wanted:
        with contextlib.suppress(ValueError, OSError):  # unprivileged: the hard limit stays
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
            return wanted
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return int(soft)


def main(argv: list[str] | None = None) -> int:
    raise_open_files()
    bound_compaction()
    trim = malloc_trim()
    if trim is not None:
        threading.Thread(target=_trim_forever, args=(trim, TRIM_INTERVAL_S), daemon=True,
                         name="malloc-trim").start()  # fmt: skip
    from milvus_lite.cmdline import main as milvus_main

    return int(milvus_main(argv) or 0)


if __name__ == "__main__":
    sys.exit(main())
