"""One stack per data directory: ``up`` holds an exclusive lock on it for its whole life.

Two stacks on one data dir (a second terminal with moved ports, a second ``make run``) would
run two FalkorDBs appending to one log, two Milvus Lites over one set of files and two
outbox tenders over one SQLite file. Before this lock the second got as far as loading
FalkorDB's log beside the first before a port clash stopped it. The kernel drops an
``flock`` when its holder dies, ``kill -9`` included, so a crash never leaves the directory
locked; the file itself stays (removing it would race with the next ``up``).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from pathlib import Path

from patchstream.config.stack_registry import LOCK_NAME, record_stack
from patchstream.embedded.services import ServiceError

log = logging.getLogger(__name__)


class StackAlreadyRunning(ServiceError):  # noqa: N818 - a condition, as the CLI reports it
    """Another live process holds the data dir's lock."""


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.fd: int | None = None

    def acquire(self) -> None:
        """Hold the lock, or raise ``StackAlreadyRunning`` naming the holder's pid."""
        if self.fd is not None:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # Not inherited by the children (close-on-exec): the lock lives exactly as long as
        # this process. No symlink is followed to somewhere else's file.
        fd = os.open(self.data_dir / LOCK_NAME,
                     os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)  # fmt: skip
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip()
            os.close(fd)
            pid = holder if holder.isdigit() else "unknown"
            raise StackAlreadyRunning(
                f"another `patchstream up` (pid {pid}) runs on the data dir {self.data_dir}; "
                "stop it, or give this stack its own data dir (--data-dir or "
                "PATCHSTREAM_EMBEDDED__DATA_DIR) and its own ports"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd
        try:
            record_stack(self.data_dir)  # clients in other directories find it
        except OSError as exc:  # a read-only home: the stack runs, found from its own dir
            log.warning("event=stack_not_recorded data_dir=%s reason=%r", self.data_dir, str(exc))

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
