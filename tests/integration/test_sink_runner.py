"""The sink consumer over a real broker: retries, dead letters, commits after writes."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Sequence

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from patchstream.bus.topics import Topics, ensure_topics
from patchstream.config.settings import KafkaSettings, PipelineSettings, Settings
from patchstream.consumers.runner import SinkRunner, is_unavailable
from patchstream.embedded.services import Service, ensure_port_free, free_port, start_tansu
from patchstream.errors import ConfigError, StoreError, StoreRefused, StoreUnavailable
from patchstream.schemas.state import FileDelta
from patchstream.stores.graph.falkordb import FalkorGraphStore
from patchstream.streams.codec import encode
from tests.integration.deltas import upsert


class FlakyStore:
    """Writes deltas to a list; refuses ``poison.py`` always and everything once at first."""

    def __init__(self) -> None:
        self.written: list[str] = []
        self.calls = 0

    def __call__(self, deltas: Sequence[FileDelta]) -> None:
        self.calls += 1
        if self.calls == 1:
            raise StoreError("transient: the first write of the run fails")
        if any(d.path == "poison.py" for d in deltas):
            raise StoreError("constraint violated by poison.py")
        self.written.extend(d.path for d in deltas)


def _settings(service: Service) -> Settings:
    return Settings(
        kafka=KafkaSettings(
            bootstrap=f"127.0.0.1:{service.port}",
            topic_prefix=f"sink{uuid.uuid4().hex[:6]}.",
            partitions=2,
        ),
        pipeline=PipelineSettings(max_retries=2, retry_backoff_s=0.01, sink_batch_wait_ms=50),
    )


async def _produce(settings: Settings, records: list[tuple[bytes, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap, acks="all")
    await producer.start()
    try:
        for key, value in records:
            await producer.send_and_wait(Topics.from_settings(settings.kafka).file_deltas,
                                         key=key, value=value)  # fmt: skip
    finally:
        await producer.stop()


async def _read(settings: Settings, topic: str, count: int) -> list[bytes]:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=settings.kafka.bootstrap,
                                auto_offset_reset="earliest", enable_auto_commit=False)  # fmt: skip
    await consumer.start()
    found: list[bytes] = []
    try:
        for _ in range(60):
            batch = await consumer.getmany(timeout_ms=250)
            found += [r.value for rs in batch.values() for r in rs]
            if len(found) >= count:
                break
    finally:
        await consumer.stop()
    return found


def test_retries_dead_letters_and_commits(tansu_service: Service) -> None:
    settings = _settings(tansu_service)
    store = FlakyStore()

    async def scenario() -> tuple[list[bytes], dict[str, int]]:
        topics = await ensure_topics(settings.kafka)
        records = [(f"k{i}".encode(), encode(upsert("t", f"f{i}.py", f"x = {i}\n", 1)))
                   for i in range(6)]  # fmt: skip
        records.insert(3, (b"kp", encode(upsert("t", "poison.py", "y = 1\n", 1))))
        records.insert(1, (b"kb", b"{broken"))
        await _produce(settings, records)
        runner = SinkRunner("graph", settings, store)
        stop = asyncio.Event()
        task = asyncio.create_task(runner.run(stop))
        for _ in range(200):
            if len(store.written) == 6 and runner.stats.dead_lettered == 2:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # let the commit of the last batch land
        stop.set()
        await task
        dead = await _read(settings, topics.dlq, 2)
        probe = AIOKafkaConsumer(bootstrap_servers=settings.kafka.bootstrap,
                                 group_id=runner.group_id, enable_auto_commit=False)  # fmt: skip
        await probe.start()
        try:
            committed = {
                str(p): await probe.committed(TopicPartition(topics.file_deltas, p)) or 0
                for p in range(settings.kafka.partitions)
            }
        finally:
            await probe.stop()
        return dead, committed

    dead, committed = asyncio.run(scenario())
    assert sorted(store.written) == [f"f{i}.py" for i in range(6)]
    reasons = {json.loads(d)["key"]: json.loads(d) for d in dead}
    assert reasons["kb"]["reason"].startswith("invalid file delta")
    assert reasons["kb"]["attempts"] == 1
    assert "poison.py" in reasons["kp"]["reason"] and reasons["kp"]["attempts"] == 3
    assert reasons["kp"]["stage"] == "graph-sink"
    assert sum(committed.values()) == 8  # every message, dead-lettered ones included


def test_retry_or_dead_letter_is_decided_by_type(falkordb_service: Service) -> None:
    assert is_unavailable(StoreRefused("UNAVAILABLE Connection refused")) is False  # words: no
    assert is_unavailable(StoreUnavailable("reworded by a new driver")) is True
    assert is_unavailable(ConnectionRefusedError("refused")) is True
    # The adapters type real failures at their boundary.
    with pytest.raises(StoreUnavailable):  # the client connects as it is made
        FalkorGraphStore(port=free_port(), timeout_s=2.0).file_version("acme", "shop", "main", "a")
    live = FalkorGraphStore(port=falkordb_service.port)
    live.apply(upsert("tref", "pkg/a.py", "def a():\n    return 1\n", 1))
    with pytest.raises(StoreRefused):
        live._read("tref", "MATCH (n) RETURN n.nope(", {})
    live.drop_tenant("tref")
    live.close()


def test_a_taken_port_is_refused_clearly(tansu_service: Service, tmp_path: object) -> None:
    with pytest.raises(ConfigError, match="already in use"):
        ensure_port_free("tansu", "127.0.0.1", tansu_service.port)
    with pytest.raises(ConfigError, match="already in use"):
        start_tansu(tmp_path, tansu_service.port, port_wait_s=1.0)  # type: ignore[arg-type]
