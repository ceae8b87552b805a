"""The metrics object: labels, sync lag arithmetic, DLQ reason codes, multiprocess sums."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from patchstream.config.settings import MetricsSettings
from patchstream.errors import ContractError
from patchstream.metrics import Metrics, dlq_reason_code
from patchstream.metrics.registry import MULTIPROC_ENV, RepoLabels
from patchstream.schemas.state import FileDelta
from patchstream.streams.codec import decode_event


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def _delta(repo: str, occurred: datetime | None) -> FileDelta:
    return FileDelta(event_id="e", tenant="acme", repo=repo, ref="main", path="a.py",
                     op="upsert", version=1, occurred_at=occurred)  # fmt: skip


def test_each_metrics_object_has_its_own_registry() -> None:
    first, second = Metrics("a"), Metrics("b")
    first.events.labels("parse", "parsed").inc(3)
    key = ("patchstream_events_total", (("outcome", "parsed"), ("stage", "parse")))
    assert _samples(first)[key] == 3
    assert key not in _samples(second)
    build = ("patchstream_build_info", (("python", sys.version.split()[0]), ("service", "a"),
                                        ("version", "0.1.0")))  # fmt: skip
    assert _samples(first)[build] == 1


def test_sync_lag_is_measured_from_occurred_at() -> None:
    metrics = Metrics("graph-sink", registry=CollectorRegistry())
    now = datetime(2026, 1, 1, tzinfo=UTC)
    metrics.applied(
        "graph",
        [_delta("shop", now - timedelta(seconds=3)), _delta("shop", now - timedelta(seconds=0.2)),
         _delta("shop", None)],
        now=now.timestamp(),
    )  # fmt: skip
    samples = _samples(metrics)
    labels = (("repo", "shop"), ("sink", "graph"), ("tenant", "acme"))
    assert samples[("patchstream_sync_lag_seconds_count", labels)] == 2  # None has no lag
    assert abs(samples[("patchstream_sync_lag_seconds_sum", labels)] - 3.2) < 1e-6
    assert samples[("patchstream_sync_lag_seconds_bucket", (("le", "0.25"), *labels))] == 1
    applied = ("patchstream_events_total", (("outcome", "applied"), ("stage", "graph-sink")))
    assert samples[applied] == 3


def test_repo_labels_are_capped_and_can_be_switched_off() -> None:
    labels = RepoLabels(enabled=True, cap=2)
    assert [labels(r) for r in ("a", "b", "c", "a", "d")] == ["a", "b", "_other", "a", "_other"]
    assert RepoLabels(enabled=False, cap=2)("a") == "_all"
    metrics = Metrics("s", MetricsSettings(max_repo_labels=1))
    now = datetime.now(UTC)
    metrics.applied("vector", [_delta("one", now), _delta("two", now), _delta("three", now)])
    repos = {dict(labels)["repo"] for (name, labels) in _samples(metrics)
             if name == "patchstream_sync_lag_seconds_count"}  # fmt: skip
    assert repos == {"one", "_other"}


def test_dlq_reasons_are_short_codes() -> None:
    codes = []
    for raw in (b"{not json", b"[1]", b'{"schema_version": 9}', b'{"tenant": "x"}', None):
        try:
            decode_event(raw)
        except ContractError as exc:
            codes.append(dlq_reason_code(exc))
    assert codes == ["not_json", "not_object", "schema_version", "invalid_event", "tombstone"]
    assert dlq_reason_code(RuntimeError("boom")) == "internal_error"
    assert dlq_reason_code(None) == "store_refused"


def test_consumer_lag_is_end_minus_committed() -> None:
    metrics = Metrics("query")
    metrics.partition_offsets("g", "t", 3, committed=40, end=45)
    metrics.partition_offsets("g", "t", 4, committed=50, end=50)
    samples = _samples(metrics)
    lag = "patchstream_consumer_lag_messages"
    assert samples[(lag, (("group", "g"), ("partition", "3"), ("topic", "t")))] == 5
    assert samples[(lag, (("group", "g"), ("partition", "4"), ("topic", "t")))] == 0


_WORKER = """
from patchstream.metrics import Metrics
m = Metrics("query")
m.events.labels("gateway", "published").inc({n})
m.partition_offsets("g", "t", 0, committed={n}, end=100)
"""


def test_worker_processes_share_one_view_in_multiprocess_mode(tmp_path: Path) -> None:
    env = {**os.environ, MULTIPROC_ENV: str(tmp_path)}
    for n in (2, 5):  # two worker processes, each with its own samples
        subprocess.run([sys.executable, "-c", _WORKER.format(n=n)], env=env, check=True)
    reader = subprocess.run(
        [sys.executable, "-c", "from patchstream.metrics import Metrics; "
         "import sys; sys.stdout.write(Metrics('query').render().decode())"],
        env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(reader.stdout)
        for s in family.samples
    }
    published = ("patchstream_events_total", (("outcome", "published"), ("stage", "gateway")))
    assert samples[published] == 7  # summed over the workers
    lag = ("patchstream_consumer_lag_messages", (("group", "g"), ("partition", "0"),
                                                ("topic", "t")))  # fmt: skip
    assert samples[lag] == 95  # a gauge: the most recent write, not a sum


def test_overlay_gauges_count_overlays_and_their_files_by_kind() -> None:
    from patchstream.stores.overlays import OverlayInfo

    metrics = Metrics("query")
    held = [OverlayInfo("shop", "main~a", "main", "workspace", 0.0, None, 2, 1, 9),
            OverlayInfo("shop", "main~b", "main", "workspace", 0.0, None, 1, 0, 3),
            OverlayInfo("shop", "feature", "main", "branch", 0.0, None, 5, 2, 40)]  # fmt: skip
    metrics.overlays_held(held)
    samples = _samples(metrics)
    assert samples[("patchstream_overlays", (("kind", "workspace"),))] == 2
    assert samples[("patchstream_overlay_files", (("kind", "workspace"),))] == 4
    assert samples[("patchstream_overlays", (("kind", "branch"),))] == 1
    assert samples[("patchstream_overlay_files", (("kind", "branch"),))] == 7
    metrics.overlays_held([])  # all dropped: the gauges go back to zero
    assert _samples(metrics)[("patchstream_overlays", (("kind", "branch"),))] == 0


def test_full_collections_are_counted_and_timed() -> None:
    metrics = Metrics("query")
    key = ("patchstream_gc_pause_seconds_count", (("generation", "2"),))
    before = _samples(metrics)[key]
    for _ in range(3):
        gc.collect()  # a full collection each
    after = _samples(metrics)
    assert after[key] == before + 3
    total = after[("patchstream_gc_pause_seconds_sum", (("generation", "2"),))]
    inf = after[("patchstream_gc_pause_seconds_bucket", (("generation", "2"), ("le", "+Inf")))]
    assert total > 0 and inf == after[key]
    Metrics("gateway")  # a second metrics object shares the process's hook, not a second one
    hooks = [h for h in gc.callbacks if getattr(h, "__self__", None) is metrics.gc_pauses]
    assert len(hooks) == 1


def test_gc_pauses_come_with_a_multiprocess_scrape(tmp_path: Path) -> None:
    env = {**os.environ, MULTIPROC_ENV: str(tmp_path)}
    reader = subprocess.run(
        [sys.executable, "-c", "import gc; from patchstream.metrics import Metrics; "
         "m = Metrics('query'); gc.collect(); "
         "import sys; sys.stdout.write(m.render().decode())"],
        env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    counts = {
        s.labels["generation"]: s.value
        for family in text_string_to_metric_families(reader.stdout)
        for s in family.samples
        if s.name == "patchstream_gc_pause_seconds_count"
    }
    assert counts["2"] >= 1
