"""Chaos under sustained load: agents write, pushes arrive and queries run for ``--minutes``
while a random process of the embedded stack (the broker, FalkorDB, Milvus, a parse worker, a
sink, the query service, the gateway or ``patchstream up`` itself) is SIGKILLed every 20-60 s
and one is paused (SIGSTOP) for 10-30 s every few minutes. Every ``--checkpoint-min`` the
writes are held until both stores hold the working copy; at the end the stores must hold
every acknowledged write, nothing deleted may come back, and they must equal a clean rebuild
of the last acknowledged tree. Queries during the faults are counted by outcome
(``testing/chaos.py`` says how each is judged).

    python bench/chaos.py [--minutes 30] [--files 400] [--corpus small] [--write-rate 4]
        [--checkpoint-min 10] [--kill-every 20,60] [--update-results]

The default corpus is a generated one (``--files`` modules calling into each other), so that
a checkpoint converges in seconds; ``--corpus small|medium`` runs on real code.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import build_corpus, corpus_label, machine, print_rows, update_results_row
from patchstream.testing.chaos import VICTIMS, ChaosRun
from patchstream.testing.faults import FaultSoak, synthetic_corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--files", type=int, default=400, help="generated corpus size")
    parser.add_argument("--corpus", default=None, help="a named real corpus instead")
    parser.add_argument("--write-rate", type=float, default=4.0, help="writes per second")
    parser.add_argument("--query-rate", type=float, default=2.0)
    parser.add_argument("--checkpoint-min", type=float, default=10.0)
    parser.add_argument("--kill-every", default="20,60",
                        help="seconds between kills, drawn uniformly: MIN,MAX")  # fmt: skip
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chaos") as tmp:
        work = Path(tmp)
        if args.corpus:
            corpus = build_corpus(args.corpus, work / "corpus")
            label = corpus_label(args.corpus)
        else:
            corpus = work / "corpus"
            synthetic_corpus(corpus, args.files, args.seed)
            label = f"generated, {args.files} Python modules"
        print(f"corpus {label}; {args.minutes:g} min at {args.write_rate:g} writes/s (4 agents, "
              f"a push of 8 files every 15 s each), {args.query_rate:g} queries/s; a SIGKILL "
              f"every {args.kill_every.replace(',', '-')} s of {', '.join(VICTIMS)}; a 10-30 s "
              f"SIGSTOP every 3 min; seed {args.seed}; machine {machine()}",
              flush=True)  # fmt: skip
        soak = FaultSoak(work / "stack", corpus, seed=args.seed)
        low, high = (float(x) for x in args.kill_every.split(","))
        chaos = ChaosRun(soak, seed=args.seed, write_rate=args.write_rate,
                         query_rate=args.query_rate, kill_every_s=(low, high))  # fmt: skip
        started = time.monotonic()
        with soak:
            report = chaos.run(args.minutes * 60, checkpoint_every_s=args.checkpoint_min * 60)
    queries = report.queries
    rows = {
        "kills (by process)": f"{sum(report.kills.values())} ("
        + ", ".join(f"{v} {report.kills[v]}" for v in VICTIMS) + ")",
        "pauses": ", ".join(f"{v} {n}" for v, n in report.pauses.items()) or "0",
        "writes acknowledged (deletes)": f"{report.writes} ({report.deletes}); "
        f"{report.retries} attempts retried",
        "queries answered / behind, said so / retryable error / stale / unclear":
        f"{queries['answered']} / {queries['behind']} / {queries['retryable']} / "
        f"{queries['stale']} / {queries['unclear']}",
        "lost / resurrected / duplicated": f"{report.lost} / {report.resurrected} / "
        f"{report.duplicated}",
        "equal to a clean rebuild": str(report.equal),
        "checkpoints converged in, s": ", ".join(map(str, report.checkpoints)) or "-",
        "drained after the last fault, s": f"{report.drain_s}",
        "then waited for leftover rows under no record, s": f"{report.leftovers_waited_s}",
        "sync lag max / at the end, s": f"{report.max_lag_s:.1f} / {report.final_lag_s}",
        "minutes": f"{(time.monotonic() - started) / 60:.0f}",
    }  # fmt: skip
    print_rows(rows)
    if report.differences:
        print("differences:", report.differences)
    for stale in report.stale_answers:
        print("stale:", stale)
    if args.update_results:
        figures = "; ".join(f"{k} {v}" for k, v in rows.items())
        update_results_row("chaos", "python bench/chaos.py", figures)
    if not report.passed():
        sys.exit(1)


if __name__ == "__main__":
    main()
