"""Children that die with their parent, however the parent dies (``kill -9`` included).

Linux's ``PR_SET_PDEATHSIG`` asks the kernel to signal a process when its parent exits, and it
survives ``exec``. It is set by a tiny launcher (``python -m patchstream.embedded.lifetime
PARENT_PID SIGNAL -- ARGV...``) that then execs the real command. Not by ``preexec_fn``:
Python code between fork and exec in a parent that has loaded gRPC (pymilvus) ran gRPC's fork
handlers, and the restarted vector sink died before it started. Elsewhere than Linux the
launcher just execs, and ``up``'s orderly stop remains the only guarantee.
"""

from __future__ import annotations

import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def with_parent_lifetime(argv: list[str], sig: int = signal.SIGTERM) -> list[str]:
    """``argv`` wrapped so that the process gets ``sig`` when this process dies."""
    if not sys.platform.startswith("linux"):
        return argv
    return [sys.executable, "-m", "patchstream.embedded.lifetime", str(os.getpid()), str(sig),
            "--", *argv]  # fmt: skip


def main(args: list[str]) -> None:
    parent, sig, separator, *argv = args
    if separator != "--" or not argv:
        raise SystemExit("usage: python -m patchstream.embedded.lifetime PID SIG -- ARGV...")
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != int(parent):  # the parent died before prctl took effect
        raise SystemExit(1)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
