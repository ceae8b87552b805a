"""Sustained load bench: agents write, pushes arrive and queries run, all at once, at rising
write rates, on an indexed corpus. Per step it reports what the stack held: edit->applied per
tier (each write's version polled in the stores), search and context latency, the sync lag
(unapplied writes and the oldest one's age), and the sync-lag alert's expression on the sinks'
own histogram. The highest rate whose edit->graph p99 <= 500 ms and search/context p99 <=
150/300 ms, with no backlog left at the step's end, is the rate the stack holds. Afterwards
the stores must equal a clean rebuild of the files as last written (the fault soak's check):
nothing acknowledged lost.

A write is one file of the corpus with one line added (agents' edits of real code, 2-40 kB
files, spread over the tree); a push is ``--push-files`` such writes published together,
what a push's webhook turns into once the gateway has fetched it (the fetch is not timed
here). Queries run on their own thread at ``--query-rate`` per second, searches and 8k
contexts in turn, over the same HTTP API agents use.

A last step runs well above that rate (``--overload-rate`` for ``--overload-s``): the lag must
grow until the sync-lag alert's expression passes its threshold, queries must keep their
goals meanwhile, and after the writes drain the stores must still equal the clean rebuild.
The steps start once the cold index's tail (Milvus Lite compacting) has settled.

    python bench/load.py [--corpus medium] [--rates 2,4,8,16] [--step-s 45] [--agents 8]
        [--push-every-s 15] [--push-files 10] [--query-rate 4] [--overload-rate 48]
        [--overload-s 150] [--update-results]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    build_corpus,
    corpus_label,
    format_memory,
    machine,
    peak_rss_mib,
    print_rows,
    stack_settings,
    update_results_row,
)
from patchstream.embedded.supervisor import Supervisor
from patchstream.indexing.run import index_directory
from patchstream.schemas.events import PatchEvent
from patchstream.stores.factory import open_graph_store, open_vector_store
from patchstream.streams.producer import EventPublisher
from patchstream.testing.soak_reports import normalized
from pipeline import percentile
from query import QUERIES, settle

TENANT, CLEAN, REPO = "tload4f2", "tclean9e1", "corpus"  # names no code holds
GOALS = {"graph": 0.5, "search": 0.15, "context": 0.3}
ALERT_P95_S = 60.0  # dashboards/alerts.yml: PatchstreamSyncLagAboveSLO


@dataclass
class Step:
    rate: float
    seconds: float
    started: float = 0.0
    ended: float = 0.0
    writes: int = 0
    latency: dict[str, list[float]] = field(default_factory=lambda: {"graph": [], "vector": []})
    queries: dict[str, list[float]] = field(default_factory=lambda: {"search": [], "context": []})
    backlog_end: int = 0
    oldest_end_s: float = 0.0
    alert_p95_s: float | None = None

    def p99(self, name: str) -> float | None:
        values = self.latency.get(name) or self.queries.get(name) or []
        return percentile(values, 99) if values else None

    def holds(self) -> bool:
        return all((self.p99(name) or 0.0) <= goal for name, goal in GOALS.items()) and (
            self.backlog_end <= self.rate
        )  # at most a second's writes in flight when the step ends

    def line(self) -> str:
        def ms(name: str) -> str:
            value = self.p99(name)
            return "-" if value is None else f"{1000 * value:.0f}"

        alert = "-" if self.alert_p95_s is None else f"{self.alert_p95_s:.2f}"
        return (f"{self.rate:g}/s offered, {self.writes / max(1e-9, self.ended - self.started):.1f}"
                f"/s written; p99 ms graph {ms('graph')} vector {ms('vector')} search "
                f"{ms('search')} context {ms('context')}; backlog at end {self.backlog_end} "
                f"(oldest {self.oldest_end_s:.1f} s); sink p95 lag {alert} s; "
                f"{'holds' if self.holds() else 'does not hold'}")  # fmt: skip


class Load:
    """The writers, the watcher and the queries of one bench run."""

    def __init__(self, stack: Supervisor, corpus: Path, args: argparse.Namespace) -> None:
        self.stack, self.corpus, self.args = stack, corpus, args
        self.rng = random.Random(7)
        self.files = sorted(p.relative_to(corpus).as_posix() for p in corpus.rglob("*.py")
                            if 2_000 < p.stat().st_size < 40_000)  # fmt: skip
        self.current: dict[str, str] = {}
        self.pending: dict[str, list[tuple[int, float, Step]]] = {}  # path -> writes in flight
        self.vector_pending: dict[str, list[tuple[int, float, Step]]] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.step: Step | None = None
        self.written = 0
        self.stop_deadline = float("inf")

    def edit(self, path: str) -> str:
        """The file with one module-level line added before a top-level definition (or at
        the end): valid code that changes the module's chunk and shifts what follows."""
        text = self.current.get(path) or (self.corpus / path).read_text(errors="replace")
        lines = text.splitlines(keepends=True)
        tops = [i for i, line in enumerate(lines) if line.startswith(("def ", "class "))]
        at = self.rng.choice(tops) if tops else len(lines)
        if at == len(lines) and lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        self.written += 1
        text = (
            "".join(lines[:at]) + f"_load_{self.written} = {self.written}\n" + "".join(lines[at:])
        )
        self.current[path] = text
        return text

    async def write(self, publisher: EventPublisher, paths: list[str], step: Step) -> None:
        events = []
        for path in paths:
            version = time.time_ns()
            events.append(
                PatchEvent(
                    tenant=TENANT,
                    repo=REPO,
                    path=path,
                    op="upsert",
                    content=self.edit(path),
                    version=version,
                    source="agent",
                )
            )
        now = time.monotonic()
        await publisher.publish(events)
        with self.lock:
            for event in events:
                self.pending.setdefault(event.path, []).append((event.version, now, step))
                self.vector_pending.setdefault(event.path, []).append((event.version, now, step))
            step.writes += len(events)

    async def run_step(self, step: Step) -> None:
        """``step.rate`` single-file writes a second from ``--agents`` agents, and a push of
        ``--push-files`` every ``--push-every-s``, for ``step.seconds``."""
        args = self.args
        async with EventPublisher(self.stack.settings.kafka) as publisher:

            async def agent(index: int) -> None:
                interval = args.agents / step.rate
                await asyncio.sleep(interval * index / args.agents)
                while time.monotonic() < step.started + step.seconds:
                    await self.write(publisher, [self.rng.choice(self.files)], step)
                    await asyncio.sleep(interval * self.rng.uniform(0.5, 1.5))

            async def pusher() -> None:
                while time.monotonic() + args.push_every_s < step.started + step.seconds:
                    await asyncio.sleep(args.push_every_s)
                    await self.write(publisher, self.rng.sample(self.files, args.push_files), step)

            await asyncio.gather(*(agent(i) for i in range(args.agents)), pusher())

    def watch(self) -> None:
        """Poll each tier's fences; a write is applied once its file's fence reaches it."""
        graph, vectors = (
            open_graph_store(self.stack.settings),
            open_vector_store(self.stack.settings),
        )
        try:
            turn = 0
            while not self.stop.is_set() or self.pending or self.vector_pending:
                self._settle("graph", self.pending, graph.file_versions(TENANT, REPO, "main"))
                if turn % 5 == 0:  # Milvus reads cost more; 0.5 s resolution is enough there
                    self._settle("vector", self.vector_pending,
                                 vectors.file_versions(TENANT, REPO, "main"))  # fmt: skip
                turn += 1
                if self.stop.is_set() and time.monotonic() > self.stop_deadline:
                    return
                time.sleep(0.1)
        finally:
            graph.close()
            vectors.close()

    def _settle(self, tier: str, pending: dict[str, list[tuple[int, float, Step]]],
                fences: dict[str, int]) -> None:  # fmt: skip
        now = time.monotonic()
        with self.lock:
            for path in list(pending):
                fence = fences.get(path, -1)
                left = [w for w in pending[path] if w[0] > fence]
                for version, at, step in pending[path]:
                    if version <= fence:
                        step.latency[tier].append(now - at)
                if left:
                    pending[path] = left
                else:
                    del pending[path]

    def backlog(self) -> tuple[int, float]:
        with self.lock:
            ages = [
                time.monotonic() - at for writes in self.pending.values() for _, at, _ in writes
            ]
        return len(ages), max(ages, default=0.0)

    def query(self) -> None:
        client = httpx.Client(base_url=self.stack.settings.query.url, timeout=60,
                              headers={"Authorization": "Bearer bench-key"})  # fmt: skip
        turn = 0
        try:
            while not self.stop.is_set():
                step, started = self.step, time.monotonic()
                text = QUERIES[turn % len(QUERIES)]
                if turn % 2 == 0:
                    client.post("/v1/search", json={"query": text}).raise_for_status()
                    kind = "search"
                else:
                    client.post("/v1/context", json={"query": text, "budget_tokens": 8000}
                                ).raise_for_status()  # fmt: skip
                    kind = "context"
                if step is not None:
                    step.queries[kind].append(time.monotonic() - started)
                turn += 1
                time.sleep(max(0.0, 1 / self.args.query_rate - (time.monotonic() - started)))
        finally:
            client.close()


def sync_lag_counts(stack: Supervisor) -> dict[str, dict[float, float]]:
    """Each sink's ``patchstream_sync_lag_seconds`` buckets (le -> cumulative count), read
    from its own /metrics as Prometheus would scrape it."""
    from prometheus_client.parser import text_string_to_metric_families

    counts: dict[str, dict[float, float]] = {}
    host = stack.settings.metrics.host
    for worker in stack.workers:
        if worker.service not in ("graph-sink", "vector-sink") or not worker.metrics_port:
            continue
        text = httpx.get(f"http://{host}:{worker.metrics_port}/metrics", timeout=10).text
        for family in text_string_to_metric_families(text):
            if family.name != "patchstream_sync_lag_seconds":
                continue
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    sink = counts.setdefault(sample.labels["sink"], {})
                    le = float(sample.labels["le"])
                    sink[le] = sink.get(le, 0.0) + sample.value
    return counts


def sync_lag_p95(before: dict[str, dict[float, float]],
                 after: dict[str, dict[float, float]]) -> float | None:  # fmt: skip
    """The alert's expression over the step: the worst sink's p95 of the lags observed in
    it, interpolated within its bucket as ``histogram_quantile`` does."""
    worst = None
    for sink, buckets in after.items():
        earlier = before.get(sink, {})
        cumulative = sorted((le, n - earlier.get(le, 0.0)) for le, n in buckets.items())
        total = cumulative[-1][1] if cumulative else 0.0
        if total <= 0:
            continue
        rank, lower, below = 0.95 * total, 0.0, 0.0
        for le, count in cumulative:
            if count >= rank:
                if le == float("inf"):  # past the last bound: Prometheus answers that bound
                    value = lower
                else:
                    value = lower + (le - lower) * (rank - below) / max(1e-9, count - below)
                worst = value if worst is None else max(worst, value)
                break
            lower, below = le, count
    return worst


def compare(stack: Supervisor, load: Load, corpus: Path) -> str:
    """The stores against a clean rebuild of the files as last written."""
    for path, text in load.current.items():
        (corpus / path).write_text(text)
    summary = asyncio.run(index_directory(stack.settings, corpus, repo=REPO, tenant=CLEAN,
                                          progress=False))  # fmt: skip
    if not summary.complete:
        return f"the clean rebuild did not complete: {summary.as_dict()}"
    graph, vectors = open_graph_store(stack.settings), open_vector_store(stack.settings)
    try:
        mine = normalized(graph.snapshot(TENANT), vectors.rows(TENANT), TENANT)
        theirs = normalized(graph.snapshot(CLEAN), vectors.rows(CLEAN), CLEAN)
    finally:
        graph.close()
        vectors.close()
    found = []
    for name, a, b in zip(("symbols", "edges", "chunks"), mine, theirs, strict=True):
        if a != b:
            found.append(f"{name}: {len(a - b)} extra, {len(b - a)} missing")
            for row in sorted(a - b)[:2] + sorted(b - a)[:2]:  # what to look at first
                print(f"  {name} {'extra' if row in a else 'missing'}: {row[:240]}", flush=True)
    return "; ".join(found) or "equal"


def run_step(stack: Supervisor, load: Load, step: Step) -> Step:
    step.started = time.monotonic()
    load.step = step
    before = sync_lag_counts(stack)
    asyncio.run(load.run_step(step))
    step.ended = time.monotonic()
    step.backlog_end, step.oldest_end_s = load.backlog()
    step.alert_p95_s = sync_lag_p95(before, sync_lag_counts(stack))
    print(step.line(), flush=True)
    return step


def overloaded(step: Step | None) -> str:
    """What a step above capacity showed: the lag alert's expression against its threshold,
    and whether queries kept their goals while the writes piled up."""
    if step is None:
        return "not run (--overload-s 0)"
    fires = step.alert_p95_s is not None and step.alert_p95_s > ALERT_P95_S
    queries = all((step.p99(name) or 0.0) <= GOALS[name] for name in ("search", "context"))
    return (
        f"{step.rate:g}/s for {step.seconds:.0f} s: {step.line()}; lag alert "
        f"(p95 > {ALERT_P95_S:.0f} s) {'fires' if fires else 'does not fire'}; queries "
        f"{'within' if queries else 'outside'} their goals"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="medium", choices=["small", "medium", "large", "npm"])
    parser.add_argument("--rates", default="2,4,8,16", help="writes per second, one step each")
    parser.add_argument("--step-s", type=float, default=45.0)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--push-every-s", type=float, default=15.0)
    parser.add_argument("--push-files", type=int, default=10)
    parser.add_argument("--query-rate", type=float, default=4.0)
    parser.add_argument(
        "--overload-rate",
        type=float,
        default=48.0,
        help="a last step above what the stack holds (writes per second)",
    )
    parser.add_argument(
        "--overload-s",
        type=float,
        default=150.0,
        help="its length: long enough for the lag alert's 60 s (0: no such step)",
    )
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = build_corpus(args.corpus, Path(tmp) / "corpus")
        print(f"corpus {corpus_label(args.corpus)}; rates {rates}/s, {args.step_s:.0f} s each, "
              f"{args.agents} agents, a push of {args.push_files} files every "
              f"{args.push_every_s:.0f} s, {args.query_rate:g} queries/s; machine {machine()}",
              flush=True)  # fmt: skip
        stack = Supervisor(stack_settings(Path(tmp), "lbench."))
        try:
            stack.start()
            indexed = asyncio.run(index_directory(stack.settings, corpus, repo=REPO,
                                                  tenant=TENANT, progress=False))  # fmt: skip
            if not indexed.complete:
                raise SystemExit(f"the index did not complete: {indexed.as_dict()}")
            settled = settle(stack)  # the steps measure the stack, not its cold index's tail
            load = Load(stack, corpus, args)
            watcher = threading.Thread(target=load.watch, daemon=True)
            querier = threading.Thread(target=load.query, daemon=True)
            watcher.start()
            querier.start()
            steps, overload = [], None
            for rate in rates:
                steps.append(run_step(stack, load, Step(rate, args.step_s)))
                if steps[-1].oldest_end_s > 60:  # far past what it holds: nothing new follows
                    break
            if args.overload_s > 0:
                overload = run_step(stack, load, Step(args.overload_rate, args.overload_s))
            load.step = None
            peaks = peak_rss_mib(stack)
            peaks.pop("bench driver (indexer)", None)  # the writers, watcher and queries
            load.stop_deadline = time.monotonic() + 600
            load.stop.set()
            watcher.join(610)
            drained = not load.pending and not load.vector_pending
            querier.join(60)
            equal = compare(stack, load, corpus) if drained else "not drained in 600 s"
        finally:
            stack.stop()
    held = [s.rate for s in steps if s.holds()]
    rows = {
        "corpus": corpus_label(args.corpus),
        "settled after the cold index": settled,
        "steps": ", ".join(f"[{step.line()}]" for step in steps),  # no "|": a table cell
        "highest write rate held (goals: graph p99 <= 500 ms, search/context <= 150/300)":
            f"{max(held):g}/s" if held else "none of the steps",
        "above it": overloaded(overload),
        "after the load: stores vs a clean rebuild": equal,
        "peak RSS MiB, the stack in all (goal <= 2048)": f"{sum(peaks.values()):.0f}",
        "peak RSS MiB by process": format_memory(peaks),
    }  # fmt: skip
    print_rows(rows)
    if args.update_results:
        update_results_row("load", "python bench/load.py",
                           "; ".join(f"{k} {v}" for k, v in rows.items()))  # fmt: skip


if __name__ == "__main__":
    main()
