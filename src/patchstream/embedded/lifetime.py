"""Children that die with their parent, however the parent dies (``kill -9`` included).

Linux's ``PR_SET_PDEATHSIG`` asks the kernel to signal a child when the thread that forked it
exits. It is set in the child between fork and exec (``preexec_fn``); elsewhere it is a no-op
and ``up``'s orderly stop remains the only guarantee.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get ``sig`` when its parent dies (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    parent = os.getpid()

    def arrange() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), sig)

    return arrange
