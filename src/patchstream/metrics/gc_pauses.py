"""How long the process stopped for Python's garbage collector, by generation.

Why: a full (generation 2) collection walks every tracked object; the query service holds its
search copy as Python objects, so one full collection is a pause of the size of a slow request.
A latency tail that moves between runs of the same code is what this shows or rules out.

How: one ``gc.callbacks`` hook per process records each collection's duration in a list; the
hook takes no lock (a collection can start while another thread holds any lock, including a
metric's). Scrapes drain the list into cumulative histogram counts.
"""

from __future__ import annotations

import bisect
import gc
import threading
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector

BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
GENERATIONS = (0, 1, 2)


class GcPauses(Collector):
    """The process's collections: ``patchstream_gc_pause_seconds{generation}``."""

    def __init__(self) -> None:
        self._started = 0.0
        self._pending: list[tuple[int, float]] = []  # appended inside the hook: no lock there
        self._drain_lock = threading.Lock()
        self._buckets = {g: [0] * (len(BUCKETS) + 1) for g in GENERATIONS}
        self._sums = dict.fromkeys(GENERATIONS, 0.0)

    def hook(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started:
            self._pending.append((int(info["generation"]), time.perf_counter() - self._started))
            self._started = 0.0

    def drain(self) -> None:
        with self._drain_lock:
            taken, self._pending = self._pending, []
            for generation, seconds in taken:
                self._buckets[generation][bisect.bisect_left(BUCKETS, seconds)] += 1
                self._sums[generation] += seconds

    def collect(self) -> Iterator[HistogramMetricFamily]:
        self.drain()
        family = HistogramMetricFamily(
            "patchstream_gc_pause_seconds",
            "Garbage collections of this process, by generation (2 is a full collection).",
            labels=["generation"],
        )
        for generation in GENERATIONS:
            counts = self._buckets[generation]
            running, cumulative = 0, []
            for bound, count in zip([*map(str, BUCKETS), "+Inf"], counts, strict=True):
                running += count
                cumulative.append((bound, float(running)))
            family.add_metric([str(generation)], cumulative, self._sums[generation])
        yield family


_process_pauses: GcPauses | None = None
_install_lock = threading.Lock()


def process_gc_pauses() -> GcPauses:
    """This process's collector, hooked into ``gc`` on first use."""
    global _process_pauses
    with _install_lock:
        if _process_pauses is None:
            _process_pauses = GcPauses()
            gc.callbacks.append(_process_pauses.hook)
        return _process_pauses
