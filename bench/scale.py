"""Growth bench: the whole stack through a cold index and then steady state (agent edits,
queries) at about 1k, 5k and 20k files, each size in a fresh stack, and how each figure grows
with the number of files.

Corpus (real code nobody here wrote, one repository ``corpus`` of tenant ``bench``, a
monorepo of several projects): the source trees of Python packages installed here (PyPI);
at 20k also jedi's bundled typeshed stubs, the C and C++ projects of the correctness benches
(lua, zlib, lz4, zstd, leveldb, yaml-cpp at their pinned commits, from their mirrors) and
rxjs's TypeScript (npm). Each step is a superset of the one before.

Per step: each process's peak RSS (through the cold index) and steady RSS (settled, after
the edits and queries), the stack's RSS summed at one time, the stores' size on disk, the
graph and vector tier times, edit->applied p99 per tier, search and context 8k p99 (short
questions and SWE-bench issue texts), and at the end the growth exponent of each (the slope
of log figure against log files, least squares over the steps). ``--update-results`` writes
the plot ``docs/benchmarks/scale.svg`` and the results row.

    python bench/scale.py [--steps 1k 5k 20k] [--edits 20] [--requests 100] [--update-results]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx

from _common import (
    StackMemory,
    _per_process,
    _status_mib,
    copy_corpus,
    corpus_size,
    index_corpus,
    machine,
    npm_tree,
    peak_rss_mib,
    print_rows,
    stack_settings,
    update_results_row,
)
from _scale_plot import PLOT, write_plot
from patchstream.embedded.supervisor import Supervisor
from patchstream.indexing.run import index_directory
from pipeline import measure_edits, percentile
from query import QUERIES, issue_queries, settle, timed, wait_for_search_copy

FIVE_K = ["scipy", "sympy", "pandas", "numpy", "networkx"]
TWENTY_K = [
    *FIVE_K,
    "transformers",
    "torch",
    "mypy",
    "sklearn",
    "jedi",
    "pygments",
    "pip",
    "setuptools",
    "sentence_transformers",
    "huggingface_hub",
    "faust",
    "narwhals",
]
STEPS: dict[str, list[str]] = {
    "1k": ["scipy"],
    "5k": FIVE_K,
    "20k": TWENTY_K,
    "smoke": ["pydantic"],
}  # ~100 files: the bench's own check
NATIVE = ["lua", "zlib", "lz4", "zstd", "leveldb", "yaml-cpp"]  # added at 20k, with rxjs


def build_step(step: str, into: Path) -> Path:
    copy_corpus(STEPS[step], into)
    if step == "20k":
        from _c_reference import C_CORPORA, c_tree
        from _cpp_reference import CPP_CORPORA

        pinned = {**C_CORPORA, **CPP_CORPORA}
        for name in NATIVE:
            shutil.copytree(c_tree(pinned[name]), into / name)
        shutil.copytree(npm_tree(), into / "rxjs")
    return into


def disk_mib(data_dir: Path) -> dict[str, float]:
    """Size on disk of each store's folder under the stack's data dir (logs left out)."""
    found = {}
    for folder in sorted(p for p in data_dir.iterdir() if p.is_dir() and p.name != "logs"):
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        found[folder.name] = size / 2**20
    return found


def steady_rss(stack: Supervisor) -> dict[str, float]:
    return _per_process(stack, lambda pid: _status_mib(pid, "VmRSS"))


def query_p99(stack: Supervisor, requests: int) -> dict[str, float]:
    rng = random.Random(7)
    issues = issue_queries()
    client = httpx.Client(
        base_url=stack.settings.query.url,
        timeout=120,
        headers={"Authorization": "Bearer bench-key"},
    )
    try:
        for _ in range(5):  # warm-up
            client.post("/v1/search", json={"query": rng.choice(QUERIES)})
        times: dict[str, list[float]] = {
            "search": [],
            "context 8k": [],
            "search (issue)": [],
            "context 8k (issue)": [],
        }
        for _ in range(requests):
            short, issue = rng.choice(QUERIES), rng.choice(issues)
            times["search"].append(timed(client.post, "/v1/search", json={"query": short}))
            times["context 8k"].append(
                timed(client.post, "/v1/context", json={"query": short, "budget_tokens": 8000})
            )
            times["search (issue)"].append(timed(client.post, "/v1/search", json={"query": issue}))
            times["context 8k (issue)"].append(
                timed(client.post, "/v1/context", json={"query": issue, "budget_tokens": 8000})
            )
    finally:
        client.close()
    return {name: percentile(values, 99) for name, values in times.items()}


def run_step(step: str, edits: int, requests: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        corpus = build_step(step, Path(tmp) / "corpus")
        files, lines, size = corpus_size(corpus)
        print(f"step {step}: {files} source files, {lines} lines, {size / 1e6:.1f} MB", flush=True)
        stack = Supervisor(stack_settings(Path(tmp), f"scale{step}."))
        try:
            stack.start()
            # Warm-up: the first event waits for the parse workers to join their group; that
            # start-up is not indexing time (as in bench/pipeline.py).
            warm = Path(tmp) / "warm"
            warm.mkdir()
            (warm / "warm.py").write_text("def warm():\n    return 1\n")
            asyncio.run(index_directory(stack.settings, warm, repo="warm", tenant="bench",
                                        progress=False))  # fmt: skip
            memory = StackMemory(stack, interval_s=1.0).start()
            started = time.perf_counter()
            cold = index_corpus(stack, corpus)
            cold_peak = memory.peak_mib
            loading = time.perf_counter()
            with httpx.Client(
                base_url=stack.settings.query.url,
                timeout=60,
                headers={"Authorization": "Bearer bench-key"},
            ) as client:
                wait_for_search_copy(client)  # its in-process copy, as served
            copy_s = time.perf_counter() - loading
            settled = settle(stack, limit_s=900)
            latencies = asyncio.run(measure_edits(stack.settings, corpus, "corpus", edits))
            settle(stack, limit_s=300)  # the edits' embedding done: queries see a quiet stack
            p99 = query_p99(stack, requests)
            at_once = memory.stop()
            peaks = {
                name: max(mib, memory.by_process.get(name, 0.0))
                for name, mib in peak_rss_mib(stack).items()
                if not name.startswith("bench driver")
            }
            steady = steady_rss(stack)
            disk = disk_mib(Path(stack.settings.embedded.data_dir))
        finally:
            stack.stop()
    return {
        "step": step,
        "files": cold.files_scanned,
        "source files": files,
        "lines": lines,
        "MB": round(size / 1e6, 1),
        "symbols": cold.symbols,
        "chunks": cold.chunks_embedded,
        "graph tier s": round(cold.graph_seconds, 1),
        "vector tier s": round(cold.vector_seconds, 1),
        "cold index wall s": round(time.perf_counter() - started, 1),
        "search copy loaded s after the index": round(copy_s, 1),
        "settled": settled,
        "stack peak MiB (at one time)": round(at_once),
        "stack peak PSS MiB (at one time)": round(memory.peak_pss_mib),
        "PSS MiB by process at that peak": {
            k: round(v) for k, v in memory.pss_at_peak.items() if not k.startswith("bench driver")
        },
        "stack peak MiB during the cold index": round(cold_peak),
        "stack steady MiB": round(sum(steady.values())),
        "peak MiB": {k: round(v) for k, v in peaks.items()},
        "steady MiB": {k: round(v) for k, v in steady.items()},
        "disk MiB": {k: round(v, 1) for k, v in disk.items()},
        "edit->applied p99 ms": {
            tier: round(percentile(v, 99) * 1000) for tier, v in latencies.items() if v
        },
        "query p99 ms": {k: round(v, 1) for k, v in p99.items()},
    }


def exponent(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of log(y) against log(x): y ~ x^k."""
    xs = [math.log(x) for x, y in points if x > 0 and y > 0]
    ys = [math.log(y) for x, y in points if x > 0 and y > 0]
    if len(xs) < 2:
        return float("nan")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def series(results: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    """Each figure against files, for the exponents and the plot."""
    out: dict[str, list[tuple[float, float]]] = {}

    def add(name: str, value: float) -> None:
        out.setdefault(name, []).append((float(result["files"]), float(value)))

    for result in results:
        add("stack peak MiB", result["stack peak MiB (at one time)"])
        add("stack steady MiB", result["stack steady MiB"])
        if "stack peak PSS MiB (at one time)" in result:
            add("stack peak PSS MiB", result["stack peak PSS MiB (at one time)"])
        for when in ("peak", "steady"):
            for name, mib in result[f"{when} MiB"].items():
                add(f"{when} MiB {name}", mib)
        add("disk MiB (stores)", sum(result["disk MiB"].values()))
        add("graph tier s", result["graph tier s"])
        add("vector tier s", result["vector tier s"])
        add("chunks", result["chunks"])
        for tier, ms in result["edit->applied p99 ms"].items():
            add(f"edit->applied p99 ms {tier}", ms)
        for name, ms in result["query p99 ms"].items():
            add(f"{name} p99 ms", ms)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", nargs="*", default=["1k", "5k", "20k"], choices=list(STEPS),
                        help="none: only summarize the steps --include names")  # fmt: skip
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--update-results", action="store_true")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument(
        "--include",
        type=Path,
        help="steps an earlier run measured (JSON lines as this bench prints them)",
    )
    args = parser.parse_args()
    print(f"machine {machine()}; embedder hashing; steps {' '.join(args.steps)}", flush=True)
    results = []
    if args.include:
        for line in args.include.read_text().splitlines():
            if line.startswith("{"):
                results.append(json.loads(line))
                print(f"step {results[-1]['step']}: from {args.include}", flush=True)
    for step in args.steps:
        result = run_step(step, args.edits, args.requests)
        results.append(result)
        print(json.dumps(result), flush=True)
    grown = series(results)
    rows: dict[str, str] = {}
    for result in results:
        rows[f"{result['step']}: files, lines, symbols, chunks"] = (
            f"{result['files']}, {result['lines']}, {result['symbols']}, {result['chunks']}"
        )
        rows[f"{result['step']}: stack MiB peak / steady; stores on disk MiB"] = (
            f"{result['stack peak MiB (at one time)']} / {result['stack steady MiB']}"
            f" (peak PSS {result.get('stack peak PSS MiB (at one time)', '-')}); "
            + ", ".join(f"{k} {v:.0f}" for k, v in result["disk MiB"].items())
        )
        rows[f"{result['step']}: peak MiB by process"] = ", ".join(
            f"{k} {v}" for k, v in result["peak MiB"].items()
        )
        if result.get("PSS MiB by process at that peak"):
            rows[f"{result['step']}: PSS MiB by process at the stack's PSS peak"] = ", ".join(
                f"{k} {v}" for k, v in result["PSS MiB by process at that peak"].items()
            )
        rows[f"{result['step']}: cold index s graph / vector tier"] = (
            f"{result['graph tier s']} / {result['vector tier s']}"
        )
        rows[f"{result['step']}: p99 ms edit->applied; queries"] = (
            ", ".join(f"{k} {v}" for k, v in result["edit->applied p99 ms"].items())
            + "; "
            + ", ".join(f"{k} {v}" for k, v in result["query p99 ms"].items())
        )
    if len(results) > 1:
        rows["growth exponents (figure ~ files^k)"] = ", ".join(
            f"{name} {exponent(points):.2f}"
            for name, points in grown.items()
            if not name.startswith(("peak MiB bench", "steady MiB bench"))
        )
    print_rows(rows)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.update_results:
        write_plot(grown, PLOT, machine())
        figures = "; ".join(f"{k} {v}" for k, v in rows.items())
        update_results_row("scale", "python bench/scale.py", figures)


if __name__ == "__main__":
    main()
