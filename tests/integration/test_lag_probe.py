"""The query service's consumer-lag probe against a real broker: end minus committed offsets
per group and partition, followed as commits move, with its clients kept open between
refreshes and closed when it stops."""

from __future__ import annotations

import asyncio
import time
import uuid

from aiokafka import AIOKafkaConsumer, TopicPartition

from patchstream.bus.producer import make_producer
from patchstream.bus.topics import ensure_topics
from patchstream.config.settings import KafkaSettings
from patchstream.embedded.services import Service
from patchstream.query.lag import LagProbe


async def _until(condition: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


def test_pending_events_follow_commits_per_group_and_partition(tansu_service: Service) -> None:
    kafka = KafkaSettings(bootstrap=tansu_service.url, topic_prefix=f"l{uuid.uuid4().hex[:6]}.",
                          partitions=2)  # fmt: skip

    async def scenario() -> None:
        topics = await ensure_topics(kafka)
        producer = make_producer(kafka)
        await producer.start()
        try:
            for partition, count in ((0, 5), (1, 3)):
                for i in range(count):
                    await producer.send_and_wait(topics.patch_events, b"{}", key=b"k%d" % i,
                                                 partition=partition)  # fmt: skip
        finally:
            await producer.stop()
        committer = AIOKafkaConsumer(bootstrap_servers=kafka.bootstrap, enable_auto_commit=False,
                                     group_id=f"{kafka.topic_prefix}parse")  # fmt: skip
        await committer.start()
        first = TopicPartition(topics.patch_events, 0)
        committer.assign([first])
        await committer.commit({first: 2})

        once = await LagProbe(kafka, ttl_s=0).lags()  # a one-shot read opens and closes
        assert once["parse"].by_partition == {0: 3, 1: 3} and once["parse"].pending == 6
        assert once["graph"].pending == 0 and once["vector"].pending == 0

        probe = LagProbe(kafka, ttl_s=0.05)
        running = asyncio.create_task(probe.run())
        try:
            await _until(lambda: probe._cache is not None)
            clients = probe._clients
            assert clients is not None  # kept between refreshes
            await committer.commit({first: 5})
            await _until(lambda: probe._cache is not None and
                         probe._cache[1]["parse"].by_partition == {0: 0, 1: 3})  # fmt: skip
            assert probe._clients is clients  # the same clients all along
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await committer.stop()
        assert probe._clients is None  # closed when the probe stops

    asyncio.run(scenario())


def test_a_quiet_bus_is_read_less_often_and_a_reader_wakes_the_probe(
    tansu_service: Service,
) -> None:
    """An idle query service read six offsets a second from the broker for nobody. Once no
    offset moves and nobody reads for ``idle_after_s``, the probe refreshes every
    ``idle_ttl_s``; a reader of an older snapshot brings the short refresh back at once."""
    kafka = KafkaSettings(bootstrap=tansu_service.url, topic_prefix=f"q{uuid.uuid4().hex[:6]}.",
                          partitions=1, idle_after_s=0.3)  # fmt: skip

    async def scenario() -> None:
        topics = await ensure_topics(kafka)
        probe = LagProbe(kafka, ttl_s=0.05, idle_ttl_s=30.0)
        refreshes: list[float] = []
        refresh = probe._refresh

        async def counted(keep_open: bool) -> object:
            refreshes.append(time.monotonic())
            return await refresh(keep_open)

        probe._refresh = counted  # type: ignore[method-assign]
        running = asyncio.create_task(probe.run())
        committer = AIOKafkaConsumer(bootstrap_servers=kafka.bootstrap, enable_auto_commit=False,
                                     group_id=f"{kafka.topic_prefix}parse")  # fmt: skip
        await committer.start()
        try:
            await _until(lambda: len(refreshes) >= 3)  # active: every 50 ms
            await asyncio.sleep(1.0)  # quiet past idle_after_s: the 30 s wait has begun
            quiet_since = len(refreshes)
            await asyncio.sleep(1.0)
            assert len(refreshes) == quiet_since  # nothing read in a second of quiet
            producer = make_producer(kafka)
            await producer.start()
            try:
                await producer.send_and_wait(topics.patch_events, b"{}", key=b"k")
            finally:
                await producer.stop()
            stale = await probe.lags()  # older than ttl_s: answered, and the probe woken
            assert stale["parse"].pending == 0
            await _until(lambda: probe._cache is not None
                         and probe._cache[1]["parse"].pending == 1, timeout=5.0)  # fmt: skip
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await committer.stop()

    asyncio.run(scenario())


def test_the_parse_backlog_is_counted_per_repository_with_its_oldest_event(
    tansu_service: Service,
) -> None:
    """Issue #53: a runaway parse held later writes while `query freshness` said pending=0:
    what the parse stage has not consumed is read from the bus, by the events' keys."""
    kafka = KafkaSettings(bootstrap=tansu_service.url, topic_prefix=f"b{uuid.uuid4().hex[:6]}.",
                          partitions=2)  # fmt: skip

    async def scenario() -> None:
        topics = await ensure_topics(kafka)
        producer = make_producer(kafka)
        await producer.start()
        try:
            for i in range(5):
                await producer.send_and_wait(topics.patch_events, b"{}", partition=i % 2,
                                             key=f"acme/shop/main/m{i}.py".encode())  # fmt: skip
            await asyncio.sleep(0.05)
            for i in range(2):
                await producer.send_and_wait(topics.patch_events, b"{}", partition=i % 2,
                                             key=f"acme/web/main~ws/w{i}.ts".encode())  # fmt: skip
        finally:
            await producer.stop()
        committer = AIOKafkaConsumer(bootstrap_servers=kafka.bootstrap, enable_auto_commit=False,
                                     group_id=f"{kafka.topic_prefix}parse")  # fmt: skip
        await committer.start()
        first = TopicPartition(topics.patch_events, 0)
        committer.assign([first])
        await committer.commit({first: 1})  # m0.py parsed: 4 of shop's events remain
        await committer.stop()
        before = time.time()
        backlog = await LagProbe(kafka, ttl_s=0).backlog_by_repo()
        assert {k: v.events for k, v in backlog.items()} == {("acme", "shop"): 4,
                                                            ("acme", "web"): 2}  # fmt: skip
        shop, web = backlog[("acme", "shop")], backlog[("acme", "web")]
        assert shop.exact and shop.oldest_at <= web.oldest_at <= before
        assert before - shop.oldest_at < 30  # the record's own time, not the probe's

    asyncio.run(scenario())
