"""Every metric patchstream exports, created on one registry.

Processes that fork workers (``query-service --workers N``) run in prometheus-client's
multiprocess mode: ``PROMETHEUS_MULTIPROC_DIR`` is set before the workers start, each worker
writes its samples there, and a scrape of any worker sums them. Gauges say how they combine.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

from patchstream import __version__
from patchstream.config.settings import MetricsSettings
from patchstream.errors import ContractError
from patchstream.metrics.gc_pauses import process_gc_pauses
from patchstream.stores.overlays import OverlayInfo

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST
OTHER_REPOS = "_other"
ALL_REPOS = "_all"

# Sync lag spans a 50 ms incremental edit to a cold index of a large repository.
_LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
_FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


def dlq_reason_code(exc: BaseException | None) -> str:
    """A bounded label for why a message was dead-lettered (the full text goes in the DLQ)."""
    if exc is None:
        return "store_refused"
    if isinstance(exc, ContractError):
        return exc.code
    return "internal_error"


class Applied(Protocol):
    """What a sink wrote, as the sync-lag histogram reads it (a file delta, a trace event)."""

    @property
    def tenant(self) -> str: ...
    @property
    def repo(self) -> str: ...
    @property
    def occurred_at(self) -> datetime | None: ...


class RepoLabels:
    """At most ``cap`` repository label values per process; later repositories share one."""

    def __init__(self, enabled: bool, cap: int) -> None:
        self.enabled = enabled
        self.cap = cap
        self.seen: set[str] = set()

    def __call__(self, repo: str) -> str:
        if not self.enabled:
            return ALL_REPOS
        if repo in self.seen:
            return repo
        if len(self.seen) >= self.cap:
            return OTHER_REPOS
        self.seen.add(repo)
        return repo


class Metrics:
    """The process's metrics. ``service`` names the process kind in ``build_info``."""

    def __init__(
        self,
        service: str,
        settings: MetricsSettings | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.settings = settings or MetricsSettings()
        self.registry = registry or CollectorRegistry()
        self.service = service
        self.repo_label = RepoLabels(self.settings.repo_labels, self.settings.max_repo_labels)
        r = self.registry
        self.gc_pauses = process_gc_pauses()
        r.register(self.gc_pauses)
        self.build_info = Gauge(
            "patchstream_build_info", "Version of the running process (always 1).",
            ["service", "version", "python"], registry=r, multiprocess_mode="max",
        )  # fmt: skip
        self.build_info.labels(service, __version__, platform.python_version()).set(1)
        self.sync_lag = Histogram(
            "patchstream_sync_lag_seconds",
            "From the change at its source (occurred_at) to applied by a sink.",
            ["sink", "tenant", "repo"], buckets=_LAG_BUCKETS, registry=r,
        )  # fmt: skip
        self.events = Counter(
            "patchstream_events_total", "Messages handled, by stage and outcome.",
            ["stage", "outcome"], registry=r,
        )  # fmt: skip
        self.rate_limited = Counter(
            "patchstream_http_rate_limited_total",
            "Requests refused (429) for being over their API key's rate.", ["client"], registry=r,
        )  # fmt: skip
        self.dlq = Counter(
            "patchstream_dlq_messages_total", "Messages sent to the dead letter topic.",
            ["stage", "reason"], registry=r,
        )  # fmt: skip
        self.parse_seconds = Histogram(
            "patchstream_parse_seconds", "Parse stage time per patch event (read, parse, diff).",
            ["language"], buckets=_FAST_BUCKETS, registry=r,
        )  # fmt: skip
        self.store_write_seconds = Histogram(
            "patchstream_store_write_seconds", "One sink batch written to a store.",
            ["store"], buckets=_FAST_BUCKETS, registry=r,
        )  # fmt: skip
        self.store_retries = Counter(
            "patchstream_store_retries_total", "Store writes retried after an error.",
            ["store"], registry=r,
        )  # fmt: skip
        self.chunks = Counter(
            "patchstream_chunks_total",
            "Chunks written to the vector store: embedded, or reused by content hash.",
            ["embedder", "outcome"], registry=r,
        )  # fmt: skip
        self.embed_seconds = Histogram(
            "patchstream_embed_seconds", "One embedder call.",
            ["embedder"], buckets=_FAST_BUCKETS, registry=r,
        )  # fmt: skip
        self.http_seconds = Histogram(
            "patchstream_http_request_seconds", "HTTP requests, by route template and status.",
            ["service", "endpoint", "method", "status"], buckets=_FAST_BUCKETS, registry=r,
        )  # fmt: skip
        self.consumer_lag = Gauge(
            "patchstream_consumer_lag_messages", "End offset minus committed offset.",
            ["group", "topic", "partition"], registry=r, multiprocess_mode="mostrecent",
        )  # fmt: skip
        self.committed_offset = Gauge(
            "patchstream_consumer_committed_offset", "The group's committed offset.",
            ["group", "topic", "partition"], registry=r, multiprocess_mode="mostrecent",
        )  # fmt: skip
        self.end_offset = Gauge(
            "patchstream_topic_end_offset", "The partition's end (high-water) offset.",
            ["topic", "partition"], registry=r, multiprocess_mode="mostrecent",
        )  # fmt: skip

        self.run_transitions = Counter(
            "patchstream_run_transitions_total", "Runs entering a status (CREATED at creation).",
            ["status"], registry=r,
        )  # fmt: skip
        self.run_refused = Counter(
            "patchstream_run_refused_total",
            "Run events the runtime refused (illegal transition, budget, uncertain actions).",
            ["status"], registry=r,
        )  # fmt: skip
        self.run_conflicts = Counter(
            "patchstream_run_version_conflicts_total",
            "Writes of runs and sessions that named a stale state_version.",
            ["kind"], registry=r,
        )  # fmt: skip
        self.run_resumes = Counter(
            "patchstream_run_resumes_total", "Runs resumed through /resume.", ["status"],
            registry=r,
        )  # fmt: skip

        self.memory_decisions = Counter(
            "patchstream_memory_decisions_total",
            "Memory policy decisions: active, quarantined, refused, approved, deleted.",
            ["outcome"], registry=r,
        )  # fmt: skip

        self.overlays = Gauge(
            "patchstream_overlays", "Overlays (agent workspaces, branch overlays) held.",
            ["kind"], registry=r, multiprocess_mode="mostrecent",
        )  # fmt: skip
        self.overlay_files = Gauge(
            "patchstream_overlay_files", "Files the overlays hold (written or deleted there).",
            ["kind"], registry=r, multiprocess_mode="mostrecent",
        )  # fmt: skip

    # -- recording helpers: one call per thing that happened --------------------------------

    def overlays_held(self, overlays: Iterable[OverlayInfo]) -> None:
        """What the last expiry sweep left: overlays and their files, by kind."""
        counts = {"workspace": [0, 0], "branch": [0, 0]}
        for overlay in overlays:
            held = counts.setdefault(overlay.kind, [0, 0])
            held[0] += 1
            held[1] += overlay.files + overlay.deleted
        for kind, (number, files) in counts.items():
            self.overlays.labels(kind).set(number)
            self.overlay_files.labels(kind).set(files)

    def agent_state(self, what: str, label: str) -> None:
        """One thing the agent state runtime did: transition, refused, conflict or resume."""
        counters = {"transition": self.run_transitions, "refused": self.run_refused,
                    "conflict": self.run_conflicts, "resume": self.run_resumes}  # fmt: skip
        counters[what].labels(label).inc()

    def applied(self, sink: str, deltas: Iterable[Applied], now: float | None = None) -> None:
        """Deltas (or trace events) a sink has written: their sync lag, and the count."""
        now = time.time() if now is None else now
        count = 0
        for delta in deltas:
            count += 1
            if delta.occurred_at is None:
                continue
            occurred = delta.occurred_at
            if occurred.tzinfo is None:
                occurred = occurred.replace(tzinfo=UTC)
            lag = max(0.0, now - occurred.timestamp())
            self.sync_lag.labels(sink, delta.tenant, self.repo_label(delta.repo)).observe(lag)
        self.events.labels(f"{sink}-sink", "applied").inc(count)

    def dead_lettered(self, stage: str, reason: str) -> None:
        self.events.labels(stage, "dead_lettered").inc()
        self.dlq.labels(stage, reason).inc()

    def chunk_counts(self, embedder: str, embedded: int, reused: int, seconds: float) -> None:
        self.chunks.labels(embedder, "embedded").inc(embedded)
        self.chunks.labels(embedder, "reused").inc(reused)
        if embedded:
            self.embed_seconds.labels(embedder).observe(seconds)

    def partition_offsets(
        self, group: str, topic: str, partition: int, committed: int, end: int
    ) -> None:
        labels = (group, topic, str(partition))
        self.committed_offset.labels(*labels).set(committed)
        self.end_offset.labels(topic, str(partition)).set(end)
        self.consumer_lag.labels(*labels).set(max(0, end - committed))

    # -- exposition ------------------------------------------------------------------------

    def exposition_registry(self) -> CollectorRegistry:
        """What a scrape reads: this registry, or every worker's samples in multiprocess mode."""
        if os.environ.get(MULTIPROC_ENV):
            combined = CollectorRegistry()
            MultiProcessCollector(combined)  # type: ignore[no-untyped-call]
            combined.register(self.gc_pauses)  # the serving worker's own pauses
            return combined
        return self.registry

    def render(self) -> bytes:
        return generate_latest(self.exposition_registry())


def prepare_multiprocess_metrics(data_dir: Path, name: str) -> Path:
    """Before forking workers: point ``PROMETHEUS_MULTIPROC_DIR`` at an empty directory (the
    one already set, or ``<data_dir>/metrics/<name>``). Workers inherit it, so each writes its
    samples there and any of them serves the sum."""
    existing = os.environ.get(MULTIPROC_ENV)
    slug = "".join(c if c.isalnum() else "_" for c in name)
    directory = Path(existing) if existing else data_dir.resolve() / "metrics" / slug
    if directory.is_dir():  # samples of a previous run's processes would be summed in
        for stale in directory.glob("*.db"):
            stale.unlink()
    directory.mkdir(parents=True, exist_ok=True)
    os.environ[MULTIPROC_ENV] = str(directory)
    return directory
