"""A paced consumer against the real broker: an idle one asks for records far less often, and
the first record after a quiet spell still arrives and brings the short wait back."""

from __future__ import annotations

import asyncio
import time
import uuid

from patchstream.bus.producer import make_producer
from patchstream.bus.topics import ensure_topics
from patchstream.config.settings import KafkaSettings
from patchstream.embedded.services import Service
from patchstream.streams.fetch_pacing import FetchPacer, PacedConsumer


async def _until(condition: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def _answers_during(pacer: FetchPacer, seconds: float) -> int:
    before = pacer.answers
    await asyncio.sleep(seconds)
    return pacer.answers - before


def test_an_idle_consumer_fetches_less_and_wakes_at_the_first_record(
    tansu_service: Service,
) -> None:
    kafka = KafkaSettings(bootstrap=tansu_service.url, topic_prefix=f"p{uuid.uuid4().hex[:6]}.",
                          partitions=1)  # fmt: skip

    async def scenario() -> None:
        topics = await ensure_topics(kafka)
        pacer = FetchPacer(active_ms=50, idle_ms=1000, idle_after_s=1.0)
        consumer = PacedConsumer(
            topics.patch_events, pacer=pacer, group_id=f"{kafka.topic_prefix}g",
            fetch_max_wait_ms=50, bootstrap_servers=kafka.bootstrap,
            auto_offset_reset="earliest",
        )  # fmt: skip
        producer = make_producer(kafka)
        await consumer.start()
        await producer.start()
        received: list[bytes] = []

        async def consume() -> None:  # as a sink does: fetch after fetch
            while True:
                batches = await consumer.getmany(timeout_ms=100)
                received.extend(r.value for rs in batches.values() for r in rs)

        consuming = asyncio.create_task(consume())
        try:
            await _until(lambda: pacer.answers > 0)  # assigned and fetching
            await _until(lambda: pacer.wait_ms == 1000)  # quiet for a second
            idle = await _answers_during(pacer, 4.0)
            # A fetch is answered when its wait expires: about 4 in 4 s at 1,000 ms, against
            # about 80 at 50 ms. The bound leaves room for a loaded machine.
            assert 1 <= idle <= 6, idle
            await producer.send_and_wait(topics.patch_events, b"{}", key=b"k")
            await _until(lambda: received == [b"{}"])
            busy = await _answers_during(pacer, 0.5)  # within the second before it is idle
            assert busy >= 3, busy
        finally:
            consuming.cancel()
            await asyncio.gather(consuming, return_exceptions=True)
            await producer.stop()
            await consumer.stop()

    asyncio.run(scenario())
