"""Fault soak: SIGKILL of a random process of the embedded stack at a random moment of an index,
round after round, each round compared with a clean rebuild of the same files.

Victims: the broker (memory-only Tansu), a parse worker, the graph sink, the vector sink and
``patchstream up`` itself (started again on the same data). Each round edits 20% of the corpus,
deletes 1% and adds 1% (the first round is a cold index), so the fault lands in real work.
A round passes when the faulty tenant holds every file at its content in both tiers and its
symbols, edges and chunks equal the clean rebuild's, with no count above it.

    python bench/faults.py [--rounds 100] [--files 500] [--corpus small] [--update-results]

The default corpus is a generated one (``--files`` modules calling into each other): a round
on it takes about half a minute, so that 100 rounds fit in an hour. ``--corpus small|medium``
soaks on real code instead (slower rounds).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import build_corpus, corpus_label, machine, print_rows, update_results_row
from patchstream.testing.faults import VICTIMS, FaultSoak, RoundResult, synthetic_corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--files", type=int, default=500, help="generated corpus size")
    parser.add_argument("--corpus", default=None, help="a named real corpus instead")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--minutes", type=float, default=0, help="stop after this long (0: never)")
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="faults") as tmp:
        work = Path(tmp)
        if args.corpus:
            corpus = build_corpus(args.corpus, work / "corpus")
            label = corpus_label(args.corpus)
        else:
            corpus = work / "corpus"
            synthetic_corpus(corpus, args.files, args.seed)
            label = f"generated, {args.files} Python modules"
        print(f"corpus {label}; {args.rounds} rounds, victims {', '.join(VICTIMS)}, seed "
              f"{args.seed}; machine {machine()}", flush=True)  # fmt: skip
        results: list[RoundResult] = []
        failed = False
        started = time.monotonic()
        with FaultSoak(work, corpus, seed=args.seed) as soak:
            for _ in range(args.rounds):
                if args.minutes and time.monotonic() - started > args.minutes * 60:
                    print(f"stopped after {args.minutes:.0f} minutes", flush=True)
                    break
                try:
                    result = soak.round()
                except RuntimeError as exc:  # the stack did not recover: that is the finding
                    print(f"round {soak.rounds}: {exc}", flush=True)
                    failed = True
                    break
                results.append(result)
                print(f"round {result.round:>3} {result.victim:<12} kill at "
                      f"{result.kill_after_s:>5.2f}s  attempts {result.index_attempts}  "
                      f"recovered in {result.recovery_s:>6.1f}s  lost {result.lost}  duplicated "
                      f"{result.duplicated}  equal {result.equal} {result.differences or ''}",
                      flush=True)  # fmt: skip
    by_victim = collections.Counter(r.victim for r in results)
    recovery = sorted(r.recovery_s for r in results)
    rows = {
        "rounds (by victim)": f"{len(results)} ("
        + ", ".join(f"{v} {by_victim[v]}" for v in VICTIMS)
        + ")",
        "rounds equal to a clean rebuild": f"{sum(r.equal for r in results)}/{len(results)}",
        "files lost / duplicated": f"{sum(r.lost for r in results)} / "
        f"{sum(r.duplicated for r in results)}",
        "index re-runs a fault forced": str(sum(r.index_attempts - 1 for r in results)),
        "index done after the fault, s p50/max": f"{statistics.median(recovery):.1f}/"
        f"{recovery[-1]:.1f}",
        "soak minutes": f"{(time.monotonic() - started) / 60:.0f}",
    }
    print_rows(rows)
    if args.update_results:
        figures = "; ".join(f"{k} {v}" for k, v in rows.items())
        update_results_row("faults", "python bench/faults.py", figures)
    if failed or any(not r.equal for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
