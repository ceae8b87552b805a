"""Publishing patch and trace events: keyed by file, ``acks=all``, awaited until acked."""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType

from patchstream.bus.producer import make_producer
from patchstream.bus.topics import Topics, ensure_topics
from patchstream.config.settings import KafkaSettings
from patchstream.schemas.events import PatchEvent
from patchstream.schemas.traces import TraceEvent
from patchstream.streams.codec import encode


class EventPublisher:
    def __init__(self, kafka: KafkaSettings) -> None:
        self.kafka = kafka
        self.topics = Topics.from_settings(kafka)
        self.producer = make_producer(kafka, linger_ms=5)

    async def __aenter__(self) -> EventPublisher:
        try:
            await ensure_topics(self.kafka)
            await self.producer.start()
        except BaseException:
            await self.producer.stop()  # a broker that is down: no producer left unclosed
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.producer.stop()

    async def publish(self, events: Iterable[PatchEvent]) -> int:
        """Send every event and wait until the broker acknowledged all of them."""
        return await self._send(self.topics.patch_events, events)

    async def publish_traces(self, events: Iterable[TraceEvent]) -> int:
        """Send trace events, keyed by their caller file, and wait for every ack."""
        return await self._send(self.topics.trace_events, events)

    async def _send(self, topic: str, events: Iterable[PatchEvent | TraceEvent]) -> int:
        futures = [
            await self.producer.send(topic, key=event.key.encode(), value=encode(event))
            for event in events
        ]
        for future in futures:
            await future
        return len(futures)

    async def publish_raw(self, key: bytes | None, value: bytes) -> None:
        """Send bytes as they are (tests use it to feed malformed events)."""
        await self.producer.send_and_wait(self.topics.patch_events, key=key, value=value)
