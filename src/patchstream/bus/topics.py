"""Topic names and their creation. Topics are created explicitly: a producer-created topic
would get the broker's default partition count."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from patchstream.config.settings import KafkaSettings


@dataclass(frozen=True)
class Topics:
    patch_events: str
    file_deltas: str
    dlq: str
    run_events: str
    trace_events: str

    @classmethod
    def from_settings(cls, kafka: KafkaSettings) -> Topics:
        prefix = kafka.topic_prefix
        return cls(
            patch_events=f"{prefix}patch-events",
            file_deltas=f"{prefix}file-deltas",
            dlq=f"{prefix}patch-events.dlq",
            run_events=f"{prefix}run-events",
            trace_events=f"{prefix}trace-events",
        )

    def all(self) -> tuple[str, ...]:
        return (self.patch_events, self.file_deltas, self.dlq, self.run_events,
                self.trace_events)  # fmt: skip


async def ensure_topics(kafka: KafkaSettings) -> Topics:
    """Create the pipeline's topics with the configured partitions (existing ones are kept)."""
    topics = Topics.from_settings(kafka)
    admin = AIOKafkaAdminClient(
        bootstrap_servers=kafka.bootstrap, request_timeout_ms=kafka.request_timeout_ms
    )
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [
            NewTopic(name, num_partitions=kafka.partitions, replication_factor=kafka.replication)
            for name in topics.all()
            if name not in existing
        ]
        if wanted:
            # Another process may have created them meanwhile.
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(wanted)
    finally:
        await admin.close()
    return topics
