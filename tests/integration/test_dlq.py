"""Dead letters on a real broker: listed with their reasons, replayed to their source topic."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid

from aiokafka import AIOKafkaConsumer, TopicPartition

from patchstream.bus.producer import make_producer
from patchstream.bus.topics import ensure_topics
from patchstream.config.settings import KafkaSettings
from patchstream.embedded.services import Service
from patchstream.streams.codec import dead_letter


def _cli(kafka: KafkaSettings, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    env["PATCHSTREAM_KAFKA"] = kafka.model_dump_json()
    done = subprocess.run([sys.executable, "-m", "patchstream.cli.main", "dlq", *args], env=env,
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    return done.stdout


async def _read_all(kafka: KafkaSettings, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    consumer = AIOKafkaConsumer(bootstrap_servers=kafka.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        ends = await consumer.end_offsets(parts)
        found = []
        pending = [tp for tp in parts if ends[tp] > 0]
        while pending:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                found += [(r.key, r.value) for r in records]
            pending = [tp for tp in pending if await consumer.position(tp) < ends[tp]]
        return found
    finally:
        await consumer.stop()


def test_dead_letters_are_listed_and_replayed_by_reason(tansu_service: Service) -> None:
    kafka = KafkaSettings(bootstrap=tansu_service.url, topic_prefix=f"d{uuid.uuid4().hex[:6]}.",
                          partitions=2)  # fmt: skip
    topics = asyncio.run(ensure_topics(kafka))
    letters = [
        ("parse", "not_json", topics.patch_events, b"k1", b"{broken"),
        ("graph-sink", "store_refused", topics.file_deltas, b"k2", b'{"delta": 1}'),
        ("parse", "not_json", topics.patch_events, b"k3", b"\xff\xfe binary"),
        ("parse", "bad_topic", "elsewhere.topic", b"k4", b"never replayed"),
    ]

    async def publish() -> None:
        producer = make_producer(kafka)
        await producer.start()
        for offset, (stage, code, topic, key, value) in enumerate(letters):
            record = dead_letter(stage=stage, code=code, reason=f"because {code}", value=value,
                                 key=key, topic=topic, partition=0, offset=offset)  # fmt: skip
            await producer.send_and_wait(topics.dlq, key=key, value=record)
        await producer.stop()

    asyncio.run(publish())
    listed = [json.loads(line) for line in _cli(kafka, "list", "--json").splitlines()]
    assert sorted(item["code"] for item in listed) == sorted(code for _, code, *_ in letters)
    assert {item["reason"] for item in listed} >= {"because not_json", "because store_refused"}
    out = _cli(kafka, "replay", "--reason", "not_json")
    assert "replayed 2 of 2" in out
    replayed = asyncio.run(_read_all(kafka, topics.patch_events))
    assert sorted(replayed) == [(b"k1", b"{broken"), (b"k3", b"\xff\xfe binary")]  # untouched
    assert asyncio.run(_read_all(kafka, topics.file_deltas)) == []
    out = _cli(kafka, "replay", "--reason", "bad_topic")  # never to a topic not of this stack
    assert "replayed 0 of 1" in out
