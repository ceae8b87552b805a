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
class Backlog:
    """Events a group has not consumed yet, of one repository: how many were read (all of
    them when ``exact``), and when the oldest was produced (epoch seconds)."""

    events: int
    oldest_at: float
    exact: bool = True


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
        self._backlog: dict[str, tuple[float, dict[tuple[str, str], Backlog]]] = {}
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

    async def backlog_by_repo(
        self, tier: str = "parse", per_partition: int = 2000
    ) -> dict[tuple[str, str], Backlog]:
        """(tenant, repo) -> what ``tier``'s group has not consumed of it: the records from
        each partition's committed offset on (at most ``per_partition``), by their key
        (``tenant/repo/ref/path``). The bus, not a repository's own fence, is what tells a
        write stuck before the parse stage."""
        lags = await self.lags()
        lag = lags.get(tier)
        if lag is None or not lag.pending:
            return {}
        cached = self._backlog.get(tier)
        if cached is not None and time.monotonic() - cached[0] < max(self.ttl_s, 1.0):
            return cached[1]
        found = await self._backlog_of(lag, per_partition)
        self._backlog[tier] = (time.monotonic(), found)
        return found

    async def _backlog_of(
        self, lag: GroupLag, per_partition: int
    ) -> dict[tuple[str, str], Backlog]:
        consumer = AIOKafkaConsumer(bootstrap_servers=self.kafka.bootstrap,
                                    enable_auto_commit=False,
                                    request_timeout_ms=self.kafka.request_timeout_ms)  # fmt: skip
        await consumer.start()
        found: dict[tuple[str, str], Backlog] = {}
        try:
            behind = {p: n for p, n in lag.by_partition.items() if n}
            tps = [TopicPartition(lag.topic, p) for p in behind]
            consumer.assign(tps)
            for tp in tps:
                consumer.seek(tp, lag.committed.get(tp.partition, 0))
            wanted = {tp: min(behind[tp.partition], per_partition) for tp in tps}
            deadline = time.monotonic() + 5.0  # a slow broker costs a freshness answer little
            while any(wanted.values()) and time.monotonic() < deadline:
                batches = await consumer.getmany(*[tp for tp, n in wanted.items() if n],
                                                 timeout_ms=500, max_records=500)  # fmt: skip
                for tp, records in batches.items():
                    for record in records[: wanted[tp]]:
                        _count(found, record.key, record.timestamp / 1000,
                               behind[tp.partition] <= per_partition)  # fmt: skip
                    wanted[tp] = max(0, wanted[tp] - len(records))
        finally:
            await consumer.stop()
        return found

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


def _count(found: dict[tuple[str, str], Backlog], key: bytes | None, at: float,
           exact: bool) -> None:  # fmt: skip
    parts = (key or b"").decode("utf-8", "replace").split("/", 2)
    if len(parts) < 3:
        return  # not a file's event
    where = (parts[0], parts[1])
    held = found.get(where)
    if held is None:
        found[where] = Backlog(1, at, exact)
    else:
        found[where] = Backlog(held.events + 1, min(held.oldest_at, at), held.exact and exact)
