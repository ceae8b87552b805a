"""The supervisor's stall tender against a real broker: a group that holds pending events
and commits nothing is named for a restart once its patience runs out, and a group that
commits is left alone."""

from __future__ import annotations

import asyncio
import uuid

from aiokafka import AIOKafkaConsumer, TopicPartition

from patchstream.embedded.services import Service
from patchstream.embedded.stall_watch import StallTender
from patchstream.settings import KafkaSettings
from patchstream.streams.producer import make_producer
from patchstream.streams.topics import ensure_topics


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
