"""Consumer lag of the pipeline's groups: end offset minus committed offset, per partition."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, TopicPartition

from patchstream.metrics import Metrics
from patchstream.settings import KafkaSettings
from patchstream.streams.topics import Topics


@dataclass(frozen=True)
class GroupLag:
    group: str
    topic: str
    pending: int
    by_partition: dict[int, int]


class LagProbe:
    """Reads committed and end offsets; results are cached for ``ttl_s`` seconds."""

    def __init__(
        self, kafka: KafkaSettings, ttl_s: float = 1.0, metrics: Metrics | None = None
    ) -> None:
        self.kafka = kafka
        self.metrics = metrics
        self.topics = Topics.from_settings(kafka)
        self.ttl_s = ttl_s
        self._cache: tuple[float, dict[str, GroupLag]] | None = None
        prefix = kafka.topic_prefix
        self.groups = {
            "parse": (f"{prefix}parse", self.topics.patch_events),
            "graph": (f"{prefix}graph-sink", self.topics.file_deltas),
            "vector": (f"{prefix}vector-sink", self.topics.file_deltas),
        }

    async def run(self) -> None:
        """Refresh in the background, so requests never wait on the bus."""
        while True:
            # The bus may be down: keep the last snapshot and try again.
            with contextlib.suppress(Exception):
                await self._refresh()
            await asyncio.sleep(self.ttl_s)

    async def lags(self) -> dict[str, GroupLag]:
        if self._cache is not None:
            return self._cache[1]
        return await self._refresh()

    async def _refresh(self) -> dict[str, GroupLag]:
        result: dict[str, GroupLag] = {}
        for tier, (group, topic) in self.groups.items():
            consumer = AIOKafkaConsumer(
                bootstrap_servers=self.kafka.bootstrap,
                group_id=group,
                enable_auto_commit=False,
                request_timeout_ms=self.kafka.request_timeout_ms,
            )
            await consumer.start()
            try:
                partitions = sorted(consumer.partitions_for_topic(topic) or set())
                if not partitions:
                    await consumer._client.force_metadata_update()
                    partitions = sorted(consumer.partitions_for_topic(topic) or set())
                tps = [TopicPartition(topic, p) for p in partitions]
                ends = await consumer.end_offsets(tps) if tps else {}
                by_partition = {}
                for tp in tps:
                    committed = await consumer.committed(tp) or 0
                    end = ends.get(tp, 0)
                    by_partition[tp.partition] = max(0, end - committed)
                    if self.metrics is not None:
                        self.metrics.partition_offsets(group, topic, tp.partition, committed, end)
            finally:
                await consumer.stop()
            result[tier] = GroupLag(group, topic, sum(by_partition.values()), by_partition)
        self._cache = (time.monotonic(), result)
        return result
