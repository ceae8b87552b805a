"""Outbox bench: what writing acknowledged events durably costs the gateway per request.

Appends real patch events (files of this machine's scipy copy as content) to the SQLite outbox
(WAL, synchronous=FULL) in a temporary directory, one request at a time, for requests of 1 and
of 100 writes, and prints p50/p95/p99 milliseconds per request.

    python bench/outbox.py [--requests 200] [--update-results]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import corpus_files, machine, package_tree, print_rows, update_results_row
from patchstream.producers.outbox import Outbox
from patchstream.schemas.events import PatchEvent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    files = corpus_files([package_tree("scipy")])[:200]
    texts = [p.read_text(errors="replace") for p in files]
    print(f"corpus scipy sources as write contents; {args.requests} requests per size; "
          f"machine {machine()}", flush=True)  # fmt: skip
    rows: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        outbox = Outbox(Path(tmp) / "outbox.sqlite")
        for size in (1, 100):
            timings = []
            for request in range(args.requests):
                events = [PatchEvent(tenant="t", repo="r", path=f"f{request}_{i}.py", op="upsert",
                                     content=texts[(request + i) % len(texts)],
                                     version=time.time_ns(), source="agent")
                          for i in range(size)]  # fmt: skip
                started = time.perf_counter()
                outbox.append(events)
                timings.append((time.perf_counter() - started) * 1000)
            rows[f"append {size} write(s) ms p50/p95/p99"] = (
                f"{percentile(timings, 50):.2f}/{percentile(timings, 95):.2f}/"
                f"{percentile(timings, 99):.2f}"
            )
        outbox.close()
    print_rows(rows)
    if args.update_results:
        figures = "; ".join(f"{k} {v}" for k, v in rows.items())
        update_results_row("outbox", "python bench/outbox.py", figures)


if __name__ == "__main__":
    main()
