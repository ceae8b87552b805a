# ruff: noqa: PTH105, PTH117, PTH118, PTH123
# (os.path on purpose: this file runs in the traced process, where pathlib is overhead)
"""The tracer that runs inside a traced Python process: caller -> callee pairs, with counts.

Standard library only, on purpose: ``patchstream trace`` copies this file next to a
``sitecustomize`` that starts it, so it runs in whatever interpreter the traced command uses
(the project's own virtualenv, which need not have patchstream installed), and in every Python
subprocess that command starts.

Output is bounded by distinct pairs, never by calls: one counter per (caller code, callee
code). At exit, the pairs whose two functions live under the traced root are written as one
JSON file per process. ``sys.monitoring`` (3.12+) is used where it exists: a function outside
the root stops reporting after its first start, so library code costs almost nothing.
``sys.setprofile`` is the fallback (3.11).
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from types import CodeType, FrameType
from typing import Any

ENV_DIR = "PATCHSTREAM_TRACE_DIR"
ENV_ROOT = "PATCHSTREAM_TRACE_ROOT"
MAX_PAIRS = 1_000_000  # distinct pairs kept per process; more are counted as dropped
_TOOL_ID = 4  # sys.monitoring's id for profilers (PROFILER_ID); a free one is taken if not


class Collector:
    def __init__(self, root: str, out_dir: str) -> None:
        self.root = os.path.realpath(root) + os.sep
        self.out_dir = out_dir
        self.counts: dict[tuple[CodeType, CodeType], int] = {}
        self.dropped = 0
        self.started = time.time()
        self._inside: dict[str, bool] = {}
        self.profilers: list[Any] = []  # cProfile.Profile, one per thread (3.11)

    def inside(self, filename: str) -> bool:
        """Whether a code object's file lies under the root (cached per file name)."""
        known = self._inside.get(filename)
        if known is None:
            # "<frozen ...>", "<string>" and other pseudo files are never the root's
            known = os.path.isabs(filename) and os.path.realpath(filename).startswith(self.root)
            self._inside[filename] = known
        return known

    def count(self, caller: CodeType, callee: CodeType) -> None:
        key = (caller, callee)
        counts = self.counts
        if key in counts:
            counts[key] += 1
        elif len(counts) < MAX_PAIRS:
            counts[key] = 1
        else:
            self.dropped += 1

    def start(self) -> None:
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            self._start_monitoring(monitoring)
        else:
            self._start_cprofile()
        atexit.register(self.write)

    def _start_cprofile(self) -> None:
        """3.11: cProfile counts caller -> callee pairs in C, one profiler per thread (a
        Python profile function cost 3x on click's suite)."""
        import cProfile

        def begin(*_ignored: object) -> None:
            profiler = cProfile.Profile()
            profiler.enable(subcalls=True, builtins=False)  # replaces this thread's hook
            self.profilers.append(profiler)

        begin()
        threading.setprofile(begin)

    def _start_profile(self) -> None:
        count = self.count

        def profile(frame: FrameType, event: str, _arg: Any) -> None:
            if event == "call":
                back = frame.f_back
                if back is not None:
                    count(back.f_code, frame.f_code)

        sys.setprofile(profile)
        threading.setprofile(profile)

    def _start_monitoring(self, monitoring: Any) -> None:
        tool = _TOOL_ID
        while monitoring.get_tool(tool) is not None and tool < 5:
            tool += 1
        if monitoring.get_tool(tool) is not None:
            self._start_profile()  # every tool id is taken (another profiler runs)
            return
        monitoring.use_tool_id(tool, "patchstream-trace")
        disable = monitoring.DISABLE
        inside, count, getframe = self.inside, self.count, sys._getframe

        def started(code: CodeType, _offset: int) -> Any:
            if not inside(code.co_filename):
                return disable  # never a callee worth keeping: stop reporting this code
            caller = getframe(1).f_back
            if caller is not None:
                count(caller.f_code, code)
            return None

        monitoring.register_callback(tool, monitoring.events.PY_START, started)
        monitoring.set_events(tool, monitoring.events.PY_START)

    def _profiled(self) -> None:
        """Fold the cProfile profilers' caller -> callee counts into ``counts``."""
        for profiler in self.profilers:
            profiler.disable()
            for entry in profiler.getstats():
                if not isinstance(entry.code, CodeType) or not entry.calls:
                    continue
                for sub in entry.calls:
                    if isinstance(sub.code, CodeType):
                        key = (entry.code, sub.code)
                        self.counts[key] = self.counts.get(key, 0) + sub.callcount
        self.profilers = []

    def pairs(self) -> list[list[object]]:
        """Each kept pair: caller file, qualified name, first line, the same of the callee,
        and the count. Files are absolute (real paths); the reader makes them relative."""
        self._profiled()
        rows: list[list[object]] = []
        for (caller, callee), calls in list(self.counts.items()):
            if not (self.inside(caller.co_filename) and self.inside(callee.co_filename)):
                continue
            rows.append([
                os.path.realpath(caller.co_filename), _qualname(caller), caller.co_firstlineno,
                os.path.realpath(callee.co_filename), _qualname(callee), callee.co_firstlineno,
                calls,
            ])  # fmt: skip
        return rows

    def write(self) -> None:
        sys.setprofile(None)
        threading.setprofile(None)
        document = {
            "format": 1,
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "argv": sys.argv[:20],
            "started": self.started,
            "ended": time.time(),
            "dropped": self.dropped,
            "pairs": self.pairs(),
        }
        name = os.path.join(self.out_dir, f"trace-{os.getpid()}-{time.monotonic_ns()}.json")
        with open(name + ".part", "w", encoding="utf-8") as out:
            json.dump(document, out)
        os.replace(name + ".part", name)  # a reader never sees half a file


def _qualname(code: CodeType) -> str:
    return getattr(code, "co_qualname", code.co_name)


def start_from_environment() -> Collector | None:
    """Start tracing when ``patchstream trace`` set the environment (the sitecustomize hook)."""
    out_dir, root = os.environ.get(ENV_DIR), os.environ.get(ENV_ROOT)
    if not out_dir or not root:
        return None
    collector = Collector(root, out_dir)
    collector.start()
    return collector
