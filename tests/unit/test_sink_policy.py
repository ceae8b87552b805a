"""The retry and dead-letter policy of the sinks and the parse stage, on the in-memory bus
and a manual clock: every delay the policy asks for is asserted, and nothing sleeps."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest

from patchstream.bus.topics import Topics
from patchstream.config.settings import MetricsSettings, PipelineSettings, Settings
from patchstream.consumers.runner import SinkRunner
from patchstream.errors import StoreRefused, StoreUnavailable
from patchstream.metrics import Metrics
from patchstream.parsing.filestate import FileStateBuilder
from patchstream.schemas.events import PatchEvent
from patchstream.schemas.state import FileDelta
from patchstream.streams.blobs import BlobReader
from patchstream.streams.codec import encode
from patchstream.streams.parse_batch import PreviousStates, parse_until_the_store_answers
from patchstream.streams.parse_stage import ParseStage
from patchstream.testing import ManualClock, MemoryBus, MemoryConsumer, MemoryProducer
from tests.integration.deltas import upsert
from tests.unit.test_parse_batch import FlakyGraph

SETTINGS = Settings(
    pipeline=PipelineSettings(max_retries=2, retry_backoff_s=0.5, sink_batch_size=10),
    metrics=MetricsSettings(enabled=False),
)
TOPICS = Topics.from_settings(SETTINGS.kafka)


class Store:
    """Writes paths to a list. ``outage`` calls fail as unreachable; ``poison`` is refused."""

    def __init__(self, outage: int = 0, poison: str | None = None) -> None:
        self.outage = outage
        self.poison = poison
        self.written: list[str] = []
        self.calls = 0

    def __call__(self, deltas: Sequence[FileDelta]) -> None:
        self.calls += 1
        if self.outage > 0:
            self.outage -= 1
            raise StoreUnavailable("not answering", store="falkordb")
        if any(d.path == self.poison for d in deltas):
            raise StoreRefused(f"constraint violated by {self.poison}")
        self.written.extend(d.path for d in deltas)


def _run(bus: MemoryBus, store: Store, clock: ManualClock) -> SinkRunner:
    stop = asyncio.Event()
    runner = SinkRunner(
        "graph",
        SETTINGS,
        store,
        sleep=clock.sleep,
        metrics=Metrics("test-sink", SETTINGS.metrics),
        clients=bus.clients(TOPICS.file_deltas, "graph-sink", when_drained=stop.set),
    )
    asyncio.run(asyncio.wait_for(runner.run(stop), timeout=30))
    return runner


def _publish(bus: MemoryBus, *paths: str) -> None:
    for i, path in enumerate(paths):
        bus.append(TOPICS.file_deltas, encode(upsert("t", path, "def f():\n    pass\n", i + 1)),
                   key=path.encode())  # fmt: skip


def test_an_outage_is_waited_out_with_capped_exponential_backoff_and_never_dead_lettered() -> None:
    bus, clock = MemoryBus(), ManualClock()
    _publish(bus, "a.py", "b.py")
    store = Store(outage=9)
    runner = _run(bus, store, clock)
    assert store.written == ["a.py", "b.py"]
    # 0.5 doubling, capped at 30 s; 9 failures, then the batch is written.
    assert clock.sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert runner.stats.dead_lettered == 0 and bus.values(TOPICS.dlq) == []
    assert bus.committed[("graph-sink", TOPICS.file_deltas)] == 2


def test_a_refused_message_is_retried_then_dead_lettered_and_the_others_are_written() -> None:
    bus, clock = MemoryBus(), ManualClock()
    _publish(bus, "a.py", "poison.py", "c.py")
    store = Store(poison="poison.py")
    runner = _run(bus, store, clock)
    assert store.written == ["a.py", "c.py"]
    # The batch: max_retries=2 retries; then poison.py alone: 2 more. a.py and c.py at once.
    assert clock.sleeps == [0.5, 1.0, 0.5, 1.0]
    letters = [json.loads(v or b"") for v in bus.values(TOPICS.dlq)]
    assert [(d["code"], d["offset"], d["attempts"]) for d in letters] == [("store_refused", 1, 3)]
    assert "poison.py" in letters[0]["reason"]
    assert runner.stats.dead_lettered == 1
    assert bus.committed[("graph-sink", TOPICS.file_deltas)] == 3


def test_a_malformed_delta_goes_to_the_dlq_at_once_with_its_reason() -> None:
    bus, clock = MemoryBus(), ManualClock()
    bus.append(TOPICS.file_deltas, b'{"not": "a delta"}', key=b"x")
    _publish(bus, "a.py")
    store = Store()
    _run(bus, store, clock)
    assert store.written == ["a.py"] and clock.sleeps == []
    (letter,) = [json.loads(v or b"") for v in bus.values(TOPICS.dlq)]
    assert letter["code"] and letter["offset"] == 0 and letter["attempts"] == 1
    assert json.loads(letter["value"]) == {"not": "a delta"}  # the message, untouched


def test_nothing_is_committed_when_shutting_down_during_an_outage_so_it_is_redelivered() -> None:
    bus, clock = MemoryBus(), ManualClock()
    _publish(bus, "a.py", "b.py")
    stop = asyncio.Event()
    store = Store(outage=1_000)

    async def sleep_then_stop(seconds: float) -> None:
        await clock.sleep(seconds)
        if len(clock.sleeps) == 3:
            stop.set()  # a SIGTERM while the store is down

    runner = SinkRunner("graph", SETTINGS, store, sleep=sleep_then_stop,
                        metrics=Metrics("test-sink", SETTINGS.metrics),
                        clients=bus.clients(TOPICS.file_deltas, "graph-sink"))  # fmt: skip
    with pytest.raises(StoreUnavailable):
        asyncio.run(asyncio.wait_for(runner.run(stop), timeout=30))
    assert ("graph-sink", TOPICS.file_deltas) not in bus.committed and store.written == []
    # The restarted sink (a new consumer from the same bus) gets both again and writes them.
    healthy = Store()
    _run(bus, healthy, ManualClock())
    assert healthy.written == ["a.py", "b.py"]


def test_the_parse_stage_waits_out_a_graph_outage_with_the_same_backoff() -> None:
    clock = ManualClock()
    retries: list[tuple[int, float]] = []
    states = PreviousStates(FlakyGraph(outages=4), capacity=16)  # type: ignore[arg-type]
    stage = ParseStage(FileStateBuilder(), BlobReader(""))
    events = [PatchEvent(tenant="t", repo="r", path="a.py", op="upsert", version=1,
                         content="def f():\n    return 1\n", source="agent")]  # fmt: skip
    outcomes = asyncio.run(
        parse_until_the_store_answers(
            stage, states, events, backoff_s=0.5, max_backoff_s=2.0, sleep=clock.sleep,
            on_retry=lambda attempt, delay, _exc: retries.append((attempt, delay)),
        )
    )  # fmt: skip
    assert clock.sleeps == [0.5, 1.0, 2.0, 2.0]
    assert retries == [(1, 0.5), (2, 1.0), (3, 2.0), (4, 2.0)]
    assert outcomes[0].error is None and outcomes[0].output is not None


def test_a_failed_commit_after_a_rebalance_keeps_the_sink_running() -> None:
    """The broker restarted and the group rebalanced: the commit fails. The sink goes on with
    the next batch instead of crashing, and the uncommitted batch comes again to whoever owns
    the partition (here: the same sink after a restart), where the fences make it a no-op."""
    bus, clock = MemoryBus(), ManualClock()
    _publish(bus, "a.py")
    stop = asyncio.Event()
    consumers: list[MemoryConsumer] = []

    def clients() -> tuple[MemoryConsumer, MemoryProducer]:
        consumer = MemoryConsumer(bus, TOPICS.file_deltas, "graph-sink", when_drained=stop.set)
        consumer.refuse_commits = 1
        consumers.append(consumer)
        return consumer, MemoryProducer(bus)

    store = Store()
    runner = SinkRunner("graph", SETTINGS, store, sleep=clock.sleep,
                        metrics=Metrics("test-sink", SETTINGS.metrics),
                        clients=clients)  # type: ignore[arg-type]  # fmt: skip
    asyncio.run(asyncio.wait_for(runner.run(stop), timeout=30))
    assert store.written == ["a.py"] and runner.stats.commit_failures == 1
    assert ("graph-sink", TOPICS.file_deltas) not in bus.committed
    _publish(bus, "b.py")
    stop.clear()
    asyncio.run(asyncio.wait_for(runner.run(stop), timeout=30))  # the same runner, restarted
    assert store.written == ["a.py", "a.py", "b.py"]  # a.py again: it was never committed


def test_a_fetch_over_the_byte_bound_is_written_in_runs_in_delivery_order() -> None:
    bus, clock = MemoryBus(), ManualClock()
    paths = [f"m{i}.py" for i in range(6)]
    _publish(bus, *paths)
    one = len(encode(upsert("t", "m0.py", "def f():\n    pass\n", 1)))
    store = Store()
    settings = SETTINGS.model_copy(
        update={"pipeline": SETTINGS.pipeline.model_copy(
            update={"sink_batch_max_mb": (2.5 * one) / (1 << 20)})}  # two deltas a run
    )  # fmt: skip
    finished: list[int] = []  # how many paths were written when the fetch was finished
    outage = [2]

    def finish() -> None:  # the vector sink's flush: once a fetch, retried like a write
        if outage[0] > 0:
            outage[0] -= 1
            raise StoreUnavailable("flush: not answering", store="milvus")
        finished.append(len(store.written))

    stop = asyncio.Event()
    runner = SinkRunner(
        "vector", settings, store, sleep=clock.sleep,
        metrics=Metrics("test-sink", SETTINGS.metrics), finish_fetch=finish,
        clients=bus.clients(TOPICS.file_deltas, "vector-sink", when_drained=stop.set),
    )  # fmt: skip
    asyncio.run(asyncio.wait_for(runner.run(stop), timeout=30))
    assert store.written == paths
    assert store.calls == 3  # one fetch of 6 (the batch size is 10), written 2 + 2 + 2
    assert finished == [6]  # once, after every run
    assert clock.sleeps == [0.5, 1.0]
    assert runner.stats.applied == 6
    assert bus.committed[("vector-sink", TOPICS.file_deltas)] == 6


def test_runs_by_size_keeps_an_oversized_record_alone_and_loses_none() -> None:
    from patchstream.consumers.runner import runs_by_size

    class R:
        def __init__(self, n: int) -> None:
            self.value = b"x" * n

    records = [R(3), R(3), R(10), R(1), R(4), R(0)]
    runs = runs_by_size(records, 6)  # type: ignore[arg-type]
    assert [[len(r.value) for r in run] for run in runs] == [[3, 3], [10], [1, 4, 0]]
    assert runs_by_size([], 6) == []  # type: ignore[arg-type]


def test_a_fetch_whose_finish_is_refused_is_never_committed() -> None:
    bus, clock = MemoryBus(), ManualClock()
    _publish(bus, "a.py", "b.py")
    store = Store()

    def finish() -> None:
        raise StoreRefused("flush refused")

    stop = asyncio.Event()
    runner = SinkRunner(
        "vector", SETTINGS, store, sleep=clock.sleep, finish_fetch=finish,
        metrics=Metrics("test-sink", SETTINGS.metrics),
        clients=bus.clients(TOPICS.file_deltas, "vector-sink", when_drained=stop.set),
    )  # fmt: skip
    with pytest.raises(RuntimeError, match="could not finish a fetch"):
        asyncio.run(asyncio.wait_for(runner.run(stop), timeout=30))
    assert store.written == ["a.py", "b.py"]
    assert clock.sleeps == [0.5, 1.0]  # max_retries 2, then it gives up
    assert ("vector-sink", TOPICS.file_deltas) not in bus.committed  # redelivered after restart


def test_a_quiet_sink_comes_round_once_a_second_and_a_busy_one_at_its_batch_wait() -> None:
    """A sink's poll returns as soon as records come; its timeout only paces the empty loop
    (to see a stop). Quiet for ``kafka.idle_after_s``, it loops every IDLE_LOOP_MS instead of
    every ``sink_batch_wait_ms``: an idle stack's sinks woke five times a second each."""
    from patchstream.config.settings import KafkaSettings
    from patchstream.consumers.runner import IDLE_LOOP_MS

    settings = SETTINGS.model_copy(update={"kafka": KafkaSettings(idle_after_s=0.2)})
    bus = MemoryBus()
    _publish(bus, "a.py")
    stop = asyncio.Event()
    waits: list[int] = []

    class Recording(MemoryConsumer):
        async def getmany(self, *, timeout_ms: int, max_records: int) -> dict:  # type: ignore[type-arg]
            waits.append(timeout_ms)
            found = await super().getmany(timeout_ms=timeout_ms, max_records=max_records)
            if not found:
                await asyncio.sleep(0.05)  # an empty poll takes time (a real one, its timeout)
                if timeout_ms == IDLE_LOOP_MS:
                    stop.set()
            return found

    consumer = Recording(bus, TOPICS.file_deltas, "graph-sink")
    runner = SinkRunner("graph", settings, Store(), sleep=asyncio.sleep,
                        metrics=Metrics("test-sink", settings.metrics),
                        clients=lambda: (consumer, MemoryProducer(bus)))  # fmt: skip
    asyncio.run(asyncio.wait_for(runner.run(stop), timeout=30))
    batch_wait = settings.pipeline.sink_batch_wait_ms
    assert waits[0] == batch_wait and waits[-1] == IDLE_LOOP_MS
    assert set(waits) == {batch_wait, IDLE_LOOP_MS}
    assert waits.index(IDLE_LOOP_MS) >= 3  # a few short loops first: 0.2 s of quiet
