"""Sandbox bench: what the parse jail costs, and a long fuzzing run through it.

Cost: every file of a corpus (``medium``: scipy's source tree) through full extraction in the
worker's process and through a jail, alternating passes (in-process, jailed, in-process,
jailed), one core for both (the jail inherits the pin). The ratio of the best jailed pass to
the best in-process pass is the figure; the goal is <= 1.10.

Fuzz: ``--fuzz N`` mutations (cuts, splices, byte flips, repeats) of real files of the six
grammars through one long-lived jailed builder; every outcome must be a state or a flagged
file with a reason, and the builder must parse on.

    python bench/sandbox.py [--corpus medium] [--fuzz 3000] [--update-results]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    SOURCE_SUFFIXES,
    build_corpus,
    corpus_label,
    machine,
    print_rows,
    update_results_row,
)
from patchstream.config.settings import ParsingSettings
from patchstream.parsing.filestate import FileRef, FileStateBuilder, StateBuilder
from patchstream.parsing.jail import FileFlagged, JailedStateBuilder
from patchstream.parsing.languages import language_for_path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"


def _pass(builder: StateBuilder, sources: list[tuple[str, bytes]]) -> float:
    started = time.perf_counter()
    for path, data in sources:
        builder.build(FileRef("t", "bench", "main", path, 1), data)
    return time.perf_counter() - started


def cost(corpus: str) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        root = build_corpus(corpus, Path(tmp))
        sources = [(f.relative_to(root).as_posix(), f.read_bytes())
                   for f in sorted(root.rglob("*"))
                   if f.suffix in SOURCE_SUFFIXES and language_for_path(f.name)]  # fmt: skip
    size = sum(len(data) for _, data in sources)
    print(f"corpus {corpus_label(corpus)}: {len(sources)} files, {size / 1e6:.2f} MB; "
          f"machine: {machine()}; 1 core", flush=True)  # fmt: skip
    settings = ParsingSettings(tree_cache_size=0)  # every file parsed in full, in both
    jailed = JailedStateBuilder(settings)
    layers = jailed.start()
    print(f"jail layers: {', '.join(layers)}", flush=True)
    times: dict[str, list[float]] = {"in-process": [], "jailed": []}
    for _ in range(2):
        times["in-process"].append(_pass(FileStateBuilder(settings), sources))
        times["jailed"].append(_pass(jailed, sources))
        print(f"pass: in-process {times['in-process'][-1]:.1f}s, jailed "
              f"{times['jailed'][-1]:.1f}s", flush=True)  # fmt: skip
    jailed.close()
    best = {name: min(values) for name, values in times.items()}
    return {
        "files": str(len(sources)),
        "in-process extract files/s": f"{len(sources) / best['in-process']:.0f}",
        "jailed extract files/s": f"{len(sources) / best['jailed']:.0f}",
        "jailed / in-process time (x)": f"{best['jailed'] / best['in-process']:.3f}",
        "jails started": str(jailed.started),
    }


def fuzz(cases: int, seed: int) -> dict[str, str]:
    seeds = {}
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and path.suffix in {".py", ".ts", ".go", ".java", ".rs", ".js"}:
            seeds.setdefault(path.suffix, []).append(path.read_bytes())
    rng = random.Random(seed)
    builder = JailedStateBuilder(ParsingSettings())
    builder.start()
    parsed = flagged = escaped = 0
    reasons: dict[str, int] = {}
    started = time.perf_counter()
    for n in range(cases):
        suffix = rng.choice(sorted(seeds))
        data = bytearray(rng.choice(seeds[suffix]))
        for _ in range(rng.randint(1, 8)):
            at = rng.randint(0, len(data))
            how = rng.choice(["flip", "cut", "splice", "repeat"])
            if how == "flip" and at < len(data):
                data[at] = rng.randrange(256)
            elif how == "cut":
                del data[at : at + rng.randint(1, 2000)]
            elif how == "splice":
                data[at:at] = rng.choice([b"{", b"(", b"'", b'"', b"/*", b"\xff", b"<", b"::"])
            else:
                data[at:at] = bytes(data[at : at + 300]) * rng.randint(2, 200)
        try:
            builder.build(FileRef("t", "fuzz", "main", f"f{n}{suffix}", 1), bytes(data))
            parsed += 1
        except FileFlagged as exc:
            flagged += 1
            reasons[exc.reason.split(";")[0]] = reasons.get(exc.reason.split(";")[0], 0) + 1
        except Exception as exc:  # anything else is a finding
            escaped += 1
            print(f"case {n} ({suffix}): {type(exc).__name__}: {exc}", flush=True)
    builder.close()
    return {
        "fuzz cases (6 grammars)": str(cases),
        "parsed / flagged / escaped": f"{parsed} / {flagged} / {escaped}",
        "flag reasons": ", ".join(f"{k} x{v}" for k, v in reasons.items()) or "none",
        "jails started": str(builder.started),
        "fuzz minutes": f"{(time.perf_counter() - started) / 60:.1f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="medium", choices=["small", "medium", "large", "npm"])
    parser.add_argument("--fuzz", type=int, default=3000, help="fuzz cases (0: none)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as stated
    rows = cost(args.corpus)
    if args.fuzz:
        rows.update(fuzz(args.fuzz, args.seed))
    print_rows(rows)
    if args.update_results:
        ratio = rows["jailed / in-process time (x)"]
        figures = (f"{rows['files']} files: jailed/in-process {ratio}x ("
                   f"{rows['jailed extract files/s']} vs {rows['in-process extract files/s']} "
                   f"files/s)")  # fmt: skip
        if args.fuzz:
            figures += (f"; fuzz {rows['fuzz cases (6 grammars)']} cases: parsed/flagged/escaped "
                        f"{rows['parsed / flagged / escaped']}")  # fmt: skip
        update_results_row(f"sandbox {args.corpus}",
                           f"python bench/sandbox.py --corpus {args.corpus}", figures)  # fmt: skip


if __name__ == "__main__":
    main()
