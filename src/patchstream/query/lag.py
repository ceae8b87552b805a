"""Consumer lag of the pipeline's groups: end offset minus committed offset, per partition."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from patchstream.bus.topics import Topics
from patchstream.config.settings import KafkaSettings
from patchstream.metrics import Metrics
from patchstream.pacing import FetchPacer


@dataclass(frozen=True)
class GroupLag:
    group: str
    topic: str
    pending: int
    by_partition: dict[int, int]
    committed: dict[int, int] = field(default_factory=dict)


class LagProbe:
    """Reads committed and end offsets; results are cached for ``ttl_s`` seconds.

    The background refresh keeps one consumer (no group: end offsets and metadata) and one
    admin client (committed offsets of every group) open between refreshes. Starting and
    stopping a consumer per group every second cost the query service's event loop (and
    the broker) CPU at the rate requests were served; after any error both are reopened.
    """

    def __init__(
        self,
        kafka: KafkaSettings,
        ttl_s: float = 1.0,
        metrics: Metrics | None = None,
        idle_ttl_s: float = 0.0,
    ) -> None:
        self.kafka = kafka
        self.metrics = metrics
        self.topics = Topics.from_settings(kafka)
        self.ttl_s = ttl_s
        # While no offset moves and nobody reads the lag for ``kafka.idle_after_s``, the
        # background refresh runs every ``idle_ttl_s`` (0: always ``ttl_s``): six requests a
        # second to an idle broker, for nobody. A read of an older snapshot wakes it.
        self.pacer = FetchPacer(round(1000 * ttl_s), round(1000 * idle_ttl_s),
                                kafka.idle_after_s)  # fmt: skip
        self._wanted = asyncio.Event()
        self._cache: tuple[float, dict[str, GroupLag]] | None = None
        self._clients: tuple[AIOKafkaConsumer, AIOKafkaAdminClient] | None = None
        prefix = kafka.topic_prefix
        self.groups = {
            "parse": (f"{prefix}parse", self.topics.patch_events),
            "graph": (f"{prefix}graph-sink", self.topics.file_deltas),
            "vector": (f"{prefix}vector-sink", self.topics.file_deltas),
        }

    async def run(self) -> None:
        """Refresh in the background, so requests never wait on the bus."""
        try:
            while True:
                before = self._cache[1] if self._cache is not None else None
                # The bus may be down: keep the last snapshot and try again.
                with contextlib.suppress(Exception):
                    await self._refresh(keep_open=True)
                moved = self._cache is not None and self._cache[1] != before
                pause = self.pacer.next_wait_ms(moved or self._wanted.is_set()) / 1000
                self._wanted.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wanted.wait(), pause)
        finally:
            await self._close()

    async def lags(self) -> dict[str, GroupLag]:
        if self._cache is not None:
            if time.monotonic() - self._cache[0] > self.ttl_s:
                self._wanted.set()  # someone reads: back to refreshing every ttl_s
            return self._cache[1]
        return await self._refresh(keep_open=False)

    async def _open(self) -> tuple[AIOKafkaConsumer, AIOKafkaAdminClient]:
        if self._clients is None:
            bus = {"bootstrap_servers": self.kafka.bootstrap,
                   "request_timeout_ms": self.kafka.request_timeout_ms}  # fmt: skip
            consumer = AIOKafkaConsumer(enable_auto_commit=False, **bus)
            admin = AIOKafkaAdminClient(**bus)
            await consumer.start()
            try:
                await admin.start()
            except BaseException:
                await consumer.stop()
                raise
            self._clients = (consumer, admin)
        return self._clients

    async def _close(self) -> None:
        clients, self._clients = self._clients, None
        if clients is not None:
            with contextlib.suppress(Exception):
                await clients[0].stop()
            with contextlib.suppress(Exception):
                await clients[1].close()

    async def _refresh(self, keep_open: bool) -> dict[str, GroupLag]:
        try:
            result = await self._read(*await self._open())
        except BaseException:
            await self._close()  # reopened next time: the broker may have restarted
            raise
        if not keep_open:
            await self._close()
        self._cache = (time.monotonic(), result)
        return result

    async def _read(
        self, consumer: AIOKafkaConsumer, admin: AIOKafkaAdminClient
    ) -> dict[str, GroupLag]:
        partitions: dict[str, list[TopicPartition]] = {}
        for topic in {topic for _, topic in self.groups.values()}:
            known = consumer.partitions_for_topic(topic)
            if not known:
                await consumer._client.force_metadata_update()
                known = consumer.partitions_for_topic(topic)
            partitions[topic] = [TopicPartition(topic, p) for p in sorted(known or ())]
        every = [tp for tps in partitions.values() for tp in tps]
        ends = await consumer.end_offsets(every) if every else {}
        result: dict[str, GroupLag] = {}
        for tier, (group, topic) in self.groups.items():
            tps = partitions[topic]
            stored = await admin.list_consumer_group_offsets(group, partitions=tps) if tps else {}
            by_partition, offsets = {}, {}
            for tp in tps:
                found = stored.get(tp)
                committed = max(0, found.offset) if found is not None else 0
                end = ends.get(tp, 0)
                by_partition[tp.partition] = max(0, end - committed)
                offsets[tp.partition] = committed
                if self.metrics is not None:
                    self.metrics.partition_offsets(group, topic, tp.partition, committed, end)
            result[tier] = GroupLag(group, topic, sum(by_partition.values()), by_partition,
                                    offsets)  # fmt: skip
        return result
