"""Idle bench: what an embedded stack costs when nothing happens. A small repository is
indexed through the real pipeline, then, after a quiet spell, each process's CPU time is read
over a window: per process and in all, as a share of one core. Then edits are timed, each
after a quiet spell longer than ``kafka.idle_after_s``: what saving idle CPU costs the first
change after a pause.

    python bench/idle.py [--corpus small] [--quiet-s 60] [--window-s 30] [--edits 5]
        [--fetch-wait-ms 50] [--idle-fetch-wait-ms 500] [--update-results]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    build_corpus,
    corpus_label,
    cpu_seconds,
    index_corpus,
    machine,
    print_rows,
    stack_settings,
    update_results_row,
)
from patchstream.config.settings import KafkaSettings
from patchstream.embedded.supervisor import Supervisor
from pipeline import measure_edits, percentile


def idle_shares(stack: Supervisor, window_s: float) -> dict[str, float]:
    """Each process's CPU over ``window_s`` as a percentage of one core."""
    before = cpu_seconds(stack)
    started = time.perf_counter()
    time.sleep(window_s)
    after = cpu_seconds(stack)
    wall = time.perf_counter() - started
    return {name: 100 * (after[name] - before.get(name, 0.0)) / wall for name in after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="small", choices=["small", "medium", "large", "npm"])
    parser.add_argument("--quiet-s", type=float, default=60.0, help="quiet before the window")
    parser.add_argument("--window-s", type=float, default=30.0)
    parser.add_argument("--fetch-wait-ms", type=int, default=KafkaSettings().fetch_max_wait_ms)
    parser.add_argument("--idle-fetch-wait-ms", type=int,
                        default=KafkaSettings().idle_fetch_wait_ms)  # fmt: skip
    parser.add_argument("--edits", type=int, default=5,
                        help="edits timed afterwards, each after a quiet spell")  # fmt: skip
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    rows: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = build_corpus(args.corpus, Path(tmp) / "corpus")
        print(f"corpus {corpus_label(args.corpus)}; quiet {args.quiet_s:.0f} s, window "
              f"{args.window_s:.0f} s, fetch wait {args.fetch_wait_ms} ms (idle "
              f"{args.idle_fetch_wait_ms} ms); machine {machine()}", flush=True)  # fmt: skip
        settings = stack_settings(
            Path(tmp), "ibench.",
            kafka=KafkaSettings(topic_prefix="ibench.", fetch_max_wait_ms=args.fetch_wait_ms,
                                idle_fetch_wait_ms=args.idle_fetch_wait_ms),
        )  # fmt: skip
        stack = Supervisor(settings)
        try:
            stack.start()
            summary = index_corpus(stack, corpus)
            rows["corpus"] = f"{corpus_label(args.corpus)}, {summary.files_scanned} files"
            time.sleep(args.quiet_s)
            shares = idle_shares(stack, args.window_s)
            total = sum(shares.values())
            rows["idle CPU, % of one core"] = f"{total:.1f} (goal <= 5)"
            rows["by process, %"] = ", ".join(
                f"{name} {share:.1f}" for name, share in sorted(shares.items(), key=lambda s: -s[1])
            )
            if args.edits:
                pause = stack.settings.kafka.idle_after_s + 5
                timed = asyncio.run(measure_edits(stack.settings, corpus, "corpus", args.edits,
                                                  pause_s=pause))  # fmt: skip
                label = f"edit->applied after {pause:.0f} s of quiet, ms p50/max (n={args.edits})"
                rows[label] = ", ".join(
                    f"{tier} {percentile(v, 50) * 1000:.0f}/{max(v) * 1000:.0f}"
                    for tier, v in timed.items()
                    if v
                )
        finally:
            stack.stop()
    print_rows(rows)
    if args.update_results:
        figures = "; ".join(f"{k} {v}" for k, v in rows.items())
        update_results_row(f"idle {args.corpus}", "python bench/idle.py", figures)


if __name__ == "__main__":
    main()
