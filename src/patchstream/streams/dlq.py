"""The dead letter topic, read back and replayed.

``read_dead_letters`` reads every record of ``patch-events.dlq`` (no consumer group: reading
never moves anyone's offsets). ``replay`` publishes the rejected messages again, untouched, to
the topic they came from, so a fixed bug or a store that is back gets them through; the
sinks' version fences make a replay of something already applied a no-op.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, TopicPartition

from patchstream.bus.producer import make_producer
from patchstream.bus.topics import Topics
from patchstream.config.settings import KafkaSettings


@dataclass(frozen=True)
class DeadLetter:
    dlq_partition: int
    dlq_offset: int
    stage: str
    code: str | None
    reason: str
    attempts: int
    topic: str
    key: bytes | None
    value: bytes | None
    rejected_at: str | None

    def summary(self) -> dict[str, object]:
        return {"dlq": f"{self.dlq_partition}:{self.dlq_offset}", "stage": self.stage,
                "code": self.code, "reason": self.reason[:300], "attempts": self.attempts,
                "topic": self.topic, "key": self.key.decode("utf-8", "replace") if self.key
                else None, "rejected_at": self.rejected_at}  # fmt: skip


def _parse(partition: int, offset: int, raw: bytes) -> DeadLetter | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    if record.get("value_base64") is not None:
        value: bytes | None = base64.b64decode(record["value_base64"])
    elif record.get("value") is not None:
        value = str(record["value"]).encode("utf-8")
    else:
        value = None
    key = record.get("key")
    return DeadLetter(
        dlq_partition=partition,
        dlq_offset=offset,
        stage=str(record.get("stage", "")),
        code=record.get("code"),
        reason=str(record.get("reason", "")),
        attempts=int(record.get("attempts", 1)),
        topic=str(record.get("topic", "")),
        key=str(key).encode("utf-8") if key is not None else None,
        value=value,
        rejected_at=record.get("rejected_at"),
    )


async def read_dead_letters(kafka: KafkaSettings) -> list[DeadLetter]:
    """Every record of the DLQ, oldest first per partition."""
    topic = Topics.from_settings(kafka).dlq
    consumer = AIOKafkaConsumer(bootstrap_servers=kafka.bootstrap, enable_auto_commit=False,
                                fetch_max_wait_ms=kafka.fetch_max_wait_ms,
                                request_timeout_ms=kafka.request_timeout_ms)  # fmt: skip
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        if not partitions:
            return []
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        found: list[DeadLetter] = []
        remaining = {tp for tp in partitions if ends[tp] > 0}
        while remaining:
            batches = await consumer.getmany(*remaining, timeout_ms=1000)
            for tp, records in batches.items():
                for record in records:
                    letter = _parse(tp.partition, record.offset, record.value or b"")
                    if letter is not None:
                        found.append(letter)
                if await consumer.position(tp) >= ends[tp]:
                    remaining.discard(tp)
        return found
    finally:
        await consumer.stop()


def select(
    letters: Iterable[DeadLetter], code: str | None = None, stage: str | None = None
) -> list[DeadLetter]:
    return [
        letter
        for letter in letters
        if (code is None or letter.code == code) and (stage is None or letter.stage == stage)
    ]


async def replay(kafka: KafkaSettings, letters: Iterable[DeadLetter]) -> int:
    """Publish each letter's message to its source topic (only this stack's own topics)."""
    topics = Topics.from_settings(kafka)
    allowed = {topics.patch_events, topics.file_deltas}
    producer = make_producer(kafka)
    await producer.start()
    sent = 0
    try:
        for letter in letters:
            if letter.topic not in allowed or letter.value is None:
                continue
            await producer.send_and_wait(letter.topic, key=letter.key, value=letter.value)
            sent += 1
    finally:
        await producer.stop()
    return sent
