"""Restart soak: the whole embedded stack stopped and started again on its own data, round
after round, while clients knock at every store; each round compared with a clean rebuild.

Each round edits 20% of the corpus, deletes 1% and adds 1%, indexes it, indexes a branch
overlay over ``main`` and drops it, starts a second index, and a random moment into it stops
the stack: SIGTERM to ``up`` on odd rounds, SIGKILL of ``up`` and every child at once on even
ones. Then ``up`` starts again on the same data dir while threads connect to FalkorDB (``HELLO
3 AUTH``), Milvus and the broker in a tight loop. A round passes when the stack came up, the
index completes, both stores equal a clean rebuild of the same files (nothing lost, nothing
duplicated) and the dropped overlay holds nothing in either store.

    python bench/restarts.py [--rounds 100] [--files 300] [--minutes 0] [--update-results]
    python bench/restarts.py --restart-time 6 --corpus medium [--update-results]

``--restart-time N``: index a named corpus once, then stop and start the stack N times
(SIGTERM and SIGKILL alternating) and report the seconds from the stop until every tier
answers again (the graph and the vectors hold the branch, the query service and the gateway
answer), p50 and max.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, print_rows, update_results_row
from patchstream.testing.faults import FAULT_TENANT, synthetic_corpus
from patchstream.testing.restarts import RestartResult, RestartSoak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--files", type=int, default=300, help="generated corpus size")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--minutes", type=float, default=0, help="stop after this long (0: never)")
    parser.add_argument("--update-results", action="store_true")
    parser.add_argument("--restart-time", type=int, default=0, metavar="N")
    parser.add_argument("--corpus", default="medium", help="for --restart-time")
    parser.add_argument("--keep-logs", type=Path, default=Path("restart-soak-failures"),
                        help="where the stack's logs are copied when a round fails")  # fmt: skip
    args = parser.parse_args()
    if args.restart_time:
        restart_time(args)
        return
    results: list[RestartResult] = []
    failed = False
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="restarts") as tmp:
        work = Path(tmp)
        synthetic_corpus(work / "corpus", args.files, args.seed)
        print(f"corpus generated, {args.files} Python modules; {args.rounds} rounds, seed "
              f"{args.seed}; machine {machine()}", flush=True)  # fmt: skip
        with RestartSoak(work / "soak", work / "corpus", seed=args.seed) as soak:
            for _ in range(args.rounds):
                if args.minutes and time.monotonic() - started > args.minutes * 60:
                    print(f"stopped after {args.minutes:.0f} minutes", flush=True)
                    break
                try:
                    result = soak.restart_round()
                except Exception as exc:  # the stack did not come back: that is the finding
                    print(f"round {soak.rounds}: {exc}", flush=True)
                    kept = _keep_logs(work / "soak", args.keep_logs / f"round-{soak.rounds}")
                    print(f"the stack's logs are kept in {kept}", flush=True)
                    failed = True
                    break
                results.append(result)
                equal = result.equal
                how = "SIGKILL all" if result.hard else "SIGTERM up"
                print(f"round {result.round:>3} {how:<11} up+index in {result.up_s:>6.1f}s  "
                      f"knocks {result.knocks:>6}  lost "
                      f"{equal.lost}  duplicated {equal.duplicated}  resurrected "
                      f"{result.resurrected}  equal {equal.equal} {equal.differences or ''}",
                      flush=True)  # fmt: skip
                if not equal.equal:
                    print(result.behind, flush=True)
                    settled = result.settled_s
                    later = f"{settled:.0f} s later" if settled is not None else "not in 180 s"
                    print(f"  equal to the rebuild {later}", flush=True)
                if not equal.equal or result.resurrected:  # the logs say why; the soak goes on
                    kept = _keep_logs(work / "soak", args.keep_logs / f"round-{soak.rounds}")
                    print(f"the stack's logs are kept in {kept}", flush=True)
    if not results:
        sys.exit(1)
    times = sorted(r.up_s for r in results)
    good = sum(r.equal.equal and not r.resurrected for r in results)
    rounds = len(results) + failed  # a round that did not come back counts, as a failure
    rows = {
        "rounds (SIGTERM / SIGKILL of all)": f"{rounds} ({sum(not r.hard for r in results)}"
        f" / {sum(r.hard for r in results)} completed)",
        "rounds up and equal to a clean rebuild": f"{good}/{rounds}"
        + (f" (round {rounds}: the stack did not come back)" if failed else ""),
        "files lost / duplicated / resurrected": f"{sum(r.equal.lost for r in results)} / "
        f"{sum(r.equal.duplicated for r in results)} / {sum(r.resurrected for r in results)}",
        "stop -> up and the index complete, s p50/max": f"{statistics.median(times):.1f}/"
        f"{times[-1]:.1f}",
        "soak minutes": f"{(time.monotonic() - started) / 60:.0f}",
    }
    print_rows(rows)
    if args.update_results:
        update_results_row("restarts", "python bench/restarts.py",
                          "; ".join(f"{k} {v}" for k, v in rows.items()))  # fmt: skip
    if failed or good < len(results):
        sys.exit(1)


def _keep_logs(soak: Path, into: Path) -> Path:
    """``up``'s log and every service's and worker's (the temporary data dir goes)."""
    import shutil

    into.mkdir(parents=True, exist_ok=True)
    for log in [soak / "up.log", *soak.glob("data/logs/*.log"), *soak.glob("data/*/*.log")]:
        if log.is_file():
            shutil.copy2(log, into / f"{log.parent.name}-{log.name}")
    return into.resolve()


def restart_time(args: argparse.Namespace) -> None:
    from _common import build_corpus, corpus_label, corpus_size

    with tempfile.TemporaryDirectory(prefix="restart-time") as tmp:
        work = Path(tmp)
        corpus = build_corpus(args.corpus, work / "corpus")
        files, lines, _ = corpus_size(corpus)
        print(f"corpus {corpus_label(args.corpus)}, {files} files, {lines} lines; "
              f"{args.restart_time} restarts; machine {machine()}", flush=True)  # fmt: skip
        with RestartSoak(work / "soak", corpus, seed=args.seed) as soak:
            outcome: dict[str, object] = {}
            started = time.monotonic()
            soak._index(FAULT_TENANT, 3600, outcome)
            print(f"indexed in {time.monotonic() - started:.0f}s: {outcome.get('summary')!r:.200}",
                  flush=True)  # fmt: skip
            times: dict[bool, list[float]] = {False: [], True: []}
            for i in range(args.restart_time):
                hard = i % 2 == 1
                seconds = soak.restart_time(hard)
                times[hard].append(seconds)
                print(f"restart {i + 1} {'SIGKILL all' if hard else 'SIGTERM up'}: every tier "
                      f"answering after {seconds:.1f}s", flush=True)  # fmt: skip
    every = sorted(times[False] + times[True])
    rows = {
        "corpus": f"{corpus_label(args.corpus)}, {files} files",
        "restarts (SIGTERM / SIGKILL of all)": f"{len(times[False])} / {len(times[True])}",
        "stop -> every tier answering, s p50/max": f"{statistics.median(every):.1f}/"
        f"{every[-1]:.1f}",
        "after SIGTERM / after SIGKILL, s max": f"{max(times[False], default=0):.1f} / "
        f"{max(times[True], default=0):.1f}",
    }
    print_rows(rows)
    if args.update_results:
        update_results_row(f"restart time {args.corpus}", "python bench/restarts.py "
                           f"--restart-time {args.restart_time} --corpus {args.corpus}",
                           "; ".join(f"{k} {v}" for k, v in rows.items()))  # fmt: skip


if __name__ == "__main__":
    main()
