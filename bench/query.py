"""Query bench: latency percentiles of search, callers (depth 2), impact and context through the
HTTP API, on the large corpus indexed by the real pipeline (whose cold index figures and peak
memory per process are reported too). Search and context are timed twice: with short
questions, and with issue text (SWE-bench Lite problem statements, cut to 4,000 characters, as
an agent pastes an issue: paragraphs, code blocks, tracebacks).

    python bench/query.py [--corpus large] [--requests 200]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    build_corpus,
    corpus_label,
    corpus_size,
    cpu_seconds,
    format_memory,
    index_corpus,
    machine,
    peak_rss_mib,
    print_rows,
    stack_settings,
    update_results_row,
)
from _stages import stage_profile
from patchstream.embedded.supervisor import Supervisor
from patchstream.stores.factory import open_graph_store
from pipeline import percentile

QUERIES = [
    "validate a model field", "retry with backoff", "parse a configuration file",
    "serialize to json", "generate test data strategies", "stream processing agent",
    "table changelog recovery", "schema for a dataclass", "shrink a failing example",
    "consumer group rebalance",
]  # fmt: skip


ISSUE_CHARS = 4000
_ISSUES = Path(__file__).resolve().parent / "localization" / "swebench" / "instances.json"


def issue_queries(count: int = 100) -> list[str]:
    """The first ``count`` problem statements of the SWE-bench set, by id, each cut to
    ``ISSUE_CHARS`` characters (text only: their repositories are not what is indexed)."""
    rows = json.loads(_ISSUES.read_text(encoding="utf-8"))["instances"]
    rows.sort(key=lambda row: row["instance_id"])
    return [row["problem_statement"][:ISSUE_CHARS] for row in rows[:count]]


def timed(call: object, *args: object, **kwargs: object) -> float:
    started = time.perf_counter()
    response = call(*args, **kwargs)  # type: ignore[operator]
    response.raise_for_status()
    return (time.perf_counter() - started) * 1000


def _search_state(client: httpx.Client) -> str:
    """Who answers the query service's searches: its in-process copy once it has loaded."""
    found = client.get("/v1/freshness", params={"repo": "corpus"}).json()
    return str(found["vector"].get("search", "milvus"))


def wait_for_search_copy(client: httpx.Client) -> str:
    """The search copy's state once it no longer loads (``ready``, or ``off`` and why): until
    then Milvus answers, and timing those answers measured the load, not the copy. The state
    reads ``loading N%``, so a test for equality with ``loading`` stopped at the first
    percent."""
    while (state := _search_state(client)).startswith("loading"):
        time.sleep(0.5)
    return state


def _gc_pauses(client: httpx.Client) -> Pauses:
    """The query service's garbage collections so far (its ``/metrics``): by generation,
    how many and their seconds in all."""
    found: dict[str, list[float]] = {}
    slots = {"patchstream_gc_pause_seconds_count": 0, "patchstream_gc_pause_seconds_sum": 1}
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            if (slot := slots.get(sample.name)) is not None:
                found.setdefault(sample.labels["generation"], [0.0, 0.0])[slot] = sample.value
    return {g: (n, s) for g, (n, s) in found.items()}


Pauses = dict[str, tuple[float, float]]


def _gc_during(before: Pauses, after: Pauses) -> str:
    return ", ".join(
        f"gen{g} {n - before.get(g, (0, 0))[0]:.0f} / {(s - before.get(g, (0, 0))[1]) * 1000:.0f}"
        for g, (n, s) in sorted(after.items())
    )


def settle(
    stack: Supervisor, quiet_cpu_s: float = 0.1, window_s: float = 2.0, limit_s: float = 300.0
) -> str:
    """Wait until the vector tier is quiet: the timed requests measure a settled service, not
    one sharing the cores with Milvus Lite's compaction after a bulk load (niced, it yields,
    and so it lasts longer). The rest of the stack idles at a steady few percent (Tansu, the
    consumers' fetch polls) and is not waited on. Says how long that took."""
    tier = ("milvus", "vector-sink")
    started = time.perf_counter()
    before = cpu_seconds(stack)
    busy = 0.0
    while time.perf_counter() - started < limit_s:
        time.sleep(window_s)
        now = cpu_seconds(stack)
        used = sum(now.get(name, 0.0) - before.get(name, 0.0) for name in tier)
        before = now
        if used < quiet_cpu_s:
            break
        busy += used
    waited = time.perf_counter() - started
    return f"{waited:.0f} s (Milvus Lite and the vector sink used {busy:.1f} CPU s meanwhile)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="large", choices=["small", "medium", "large", "npm"])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--update-results", action="store_true")
    parser.add_argument("--learned-ranking", choices=("on", "off"), default="on",
                        help="the learned file order (default) or the fused")  # fmt: skip
    args = parser.parse_args()
    rows: dict[str, str] = {}
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = build_corpus(args.corpus, Path(tmp) / "corpus")
        files, lines, size = corpus_size(corpus)
        print(f"corpus {corpus_label(args.corpus)}: {files} source files, {lines} lines, "
              f"{size / 1e6:.1f} MB; requests {args.requests}; learned file order "
              f"{args.learned_ranking}; machine {machine()}", flush=True)  # fmt: skip
        settings = stack_settings(Path(tmp), "qbench.")
        learned = args.learned_ranking == "on"
        settings = settings.model_copy(update={"query": settings.query.model_copy(
            update={"learned_file_ranking": learned})})  # fmt: skip
        stack = Supervisor(settings)
        try:
            stack.start()
            summary = index_corpus(stack, corpus)
            rows["corpus"] = (f"{corpus_label(args.corpus)}, {summary.files_scanned} files, "
                              f"{lines} lines, {summary.symbols} symbols, "
                              f"{summary.chunks_embedded} chunks")  # fmt: skip
            rows["cold index (hashing) s: graph tier / vector tier"] = (
                f"{summary.graph_seconds:.0f} / {summary.vector_seconds:.0f}"
            )
            rows["cold index files/s, lines/s, symbols/s"] = (
                f"{summary.files_scanned / summary.seconds:.1f}, {lines / summary.seconds:.0f}, "
                f"{summary.symbols / summary.seconds:.0f}"
            )
            client = httpx.Client(base_url=stack.settings.query.url, timeout=60,
                                  headers={"Authorization": "Bearer bench-key"})  # fmt: skip
            loading = time.perf_counter()
            search = wait_for_search_copy(client)
            rows["search copy"] = (f"{search}, {time.perf_counter() - loading:.0f} s after the "
                                   "index completed")  # fmt: skip
            rows["stack settled (background work after the index)"] = settle(stack)
            graph = open_graph_store(stack.settings)
            functions = [s for q in ("run", "validate", "get", "send", "example", "process")
                         for s in graph.symbols_by_name("bench", q)]  # fmt: skip
            graph.close()
            ids = [s.id for s in functions] or ["corpus::none::x"]
            timings: dict[str, list[float]] = {"search": [], "callers d2": [], "impact d3": [],
                                               "context 8k": [], "search (issue text)": [],
                                               "context 8k (issue text)": []}  # fmt: skip
            issues = issue_queries()
            rows["issue text queries"] = (f"{len(issues)} SWE-bench Lite problem statements, "
                                          f"{sum(map(len, issues)) / len(issues):.0f} characters "
                                          f"on average (cut at {ISSUE_CHARS})")  # fmt: skip
            collected = _gc_pauses(client)
            for _ in range(10):  # warm-up
                client.post("/v1/search", json={"query": rng.choice(QUERIES)})
            cpu_before, wall_before = cpu_seconds(stack), time.perf_counter()
            for _ in range(args.requests):
                query = rng.choice(QUERIES)
                symbol = quote(rng.choice(ids), safe="/:")
                timings["search"].append(timed(client.post, "/v1/search", json={"query": query}))
                timings["callers d2"].append(
                    timed(client.get, f"/v1/symbols/{symbol}/callers", params={"depth": 2})
                )
                timings["impact d3"].append(
                    timed(client.get, f"/v1/symbols/{symbol}/impact", params={"depth": 3})
                )
                timings["context 8k"].append(
                    timed(client.post, "/v1/context", json={"query": query, "budget_tokens": 8000})
                )
                issue = rng.choice(issues)
                timings["search (issue text)"].append(
                    timed(client.post, "/v1/search", json={"query": issue})
                )
                timings["context 8k (issue text)"].append(
                    timed(client.post, "/v1/context", json={"query": issue, "budget_tokens": 8000})
                )
            cpu_after, wall = cpu_seconds(stack), time.perf_counter() - wall_before
            rows["CPU s of each process during the requests"] = (
                f"{wall:.0f} s of requests: "
                + ", ".join(f"{name} {cpu_after[name] - used:.1f}" for name, used
                            in cpu_before.items() if cpu_after.get(name, 0) - used >= 0.05)
            )  # fmt: skip
            rows["query service GC during the requests, by generation: count / total ms"] = (
                _gc_during(collected, _gc_pauses(client))
            )
            client.close()
            for name, values in timings.items():
                rows[f"{name} ms p50/p95/p99"] = (f"{percentile(values, 50):.1f}/"
                                                  f"{percentile(values, 95):.1f}/"
                                                  f"{percentile(values, 99):.1f}")  # fmt: skip
            rows["peak RSS MiB"] = format_memory(peak_rss_mib(stack))
            rows["stages p50 ms (bench process)"] = stage_profile(
                stack.settings, "bench", QUERIES, min(args.requests, 100)
            )
        finally:
            stack.stop()
    print_rows(rows)
    if args.update_results:
        update_results_row(
            f"query {args.corpus}",
            f"python bench/query.py --corpus {args.corpus}",
            "; ".join(f"{k} {v}" for k, v in rows.items()),
        )


if __name__ == "__main__":
    main()
