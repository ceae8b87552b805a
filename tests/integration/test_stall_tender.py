"""The supervisor's stall tender against a real broker: a group that holds pending events
and commits nothing is named for a restart once its patience runs out, and a group that
commits is left alone."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition

from patchstream.bus.producer import make_producer
from patchstream.bus.topics import ensure_topics
from patchstream.config.settings import EmbeddedSettings, GatewaySettings, KafkaSettings, Settings
from patchstream.embedded.services import Service
from patchstream.embedded.stall_watch import StallTender
from patchstream.embedded.supervisor import Supervisor, Worker


def test_a_group_with_pending_events_and_no_commit_is_restarted(tansu_service: Service) -> None:
    kafka = KafkaSettings(bootstrap=tansu_service.url, topic_prefix=f"s{uuid.uuid4().hex[:6]}.",
                          partitions=2)  # fmt: skip

    async def publish_and_commit_deltas() -> None:
        topics = await ensure_topics(kafka)
        producer = make_producer(kafka)
        await producer.start()
        try:
            for topic in (topics.patch_events, topics.file_deltas):
                await producer.send_and_wait(topic, b"{}", key=b"k", partition=0)
        finally:
            await producer.stop()
        for group in ("graph-sink", "vector-sink"):  # the sinks consumed their delta
            committer = AIOKafkaConsumer(bootstrap_servers=kafka.bootstrap,
                                         enable_auto_commit=False,
                                         group_id=f"{kafka.topic_prefix}{group}")  # fmt: skip
            await committer.start()
            first = TopicPartition(topics.file_deltas, 0)
            committer.assign([first])
            await committer.commit({first: 1})
            await committer.stop()

    asyncio.run(publish_and_commit_deltas())
    killed: list[str] = []
    tender = StallTender(stall_s=30)
    tender.tend(0.0, kafka, killed.append)  # first sight of the pending event
    tender.tend(29.0, kafka, killed.append)  # reads again a quarter period later at most
    assert killed == []
    tender.tend(37.0, kafka, killed.append)
    assert killed == ["parse"]  # the parse group never committed its event; the sinks did
    tender.tend(90.0, kafka, killed.append)
    assert killed == ["parse"]  # restarted at 37: it has 60 s now
    tender.tend(98.0, kafka, killed.append)
    assert killed == ["parse", "parse"]


def test_the_supervisor_restarts_the_stalled_tier_and_only_it(
    tansu_service: Service, tmp_path: Path
) -> None:
    """``up``'s check with stand-in processes: the parse tier, whose event stays pending with
    no commit past its patience, is killed and started again; the sinks, with nothing
    pending, keep their processes."""
    settings = Settings(
        kafka=KafkaSettings(bootstrap=tansu_service.url, partitions=2,
                            topic_prefix=f"u{uuid.uuid4().hex[:6]}."),
        embedded=EmbeddedSettings(data_dir=str(tmp_path), consumer_stall_s=30,
                                  reconcile_interval_s=0),
        gateway=GatewaySettings(outbox=False),
    )  # fmt: skip

    async def publish() -> None:
        topics = await ensure_topics(settings.kafka)
        producer = make_producer(settings.kafka)
        await producer.start()
        try:
            await producer.send_and_wait(topics.patch_events, b"{}", key=b"k", partition=1)
        finally:
            await producer.stop()

    asyncio.run(publish())
    supervisor = Supervisor(settings)
    supervisor.workers = [
        Worker(name, [sys.executable, "-c", "import time; time.sleep(120)"],
               tmp_path / f"{name}.log", service=service)
        for name, service in (("parse-0", "parse"), ("graph-sink", "graph-sink"))
    ]  # fmt: skip
    env = supervisor.environment()
    for worker in supervisor.workers:
        worker.start(env)
    first = {w.name: w.process.pid for w in supervisor.workers if w.process is not None}
    try:
        supervisor.check()  # first sight of the pending event
        watch = supervisor.stalls.watch
        assert watch is not None and watch._seen
        for seen in watch._seen.values():  # as if 31 s had passed without a commit
            seen.since -= 31
        supervisor.stalls.next_check = 0.0
        supervisor.check()  # kills the parse tier
        supervisor.check()  # and starts it again, without backoff
        now = {w.name: w.process.pid for w in supervisor.workers if w.process is not None}
        assert now["graph-sink"] == first["graph-sink"]
        assert now["parse-0"] != first["parse-0"]
        assert all(w.alive() for w in supervisor.workers)
    finally:
        supervisor.stop()
