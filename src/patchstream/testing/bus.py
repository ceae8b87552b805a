"""An in-memory bus and a manual clock for testing stream stages without a broker or sleeps.

The runtime never imports this module. Tests build a ``MemoryBus``, hand a ``SinkRunner``
its clients (``bus.clients(topic, group)``) and a ``ManualClock``'s ``sleep``, and then
assert on what was written, committed and dead-lettered, and on the delays the policy
asked for. A consumer made again from the same bus starts at the group's committed offsets,
which is what a crashed and restarted sink sees.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from aiokafka import TopicPartition
from aiokafka.errors import CommitFailedError

from patchstream.consumers.runner import DeltaConsumer, RecordProducer


@dataclass(frozen=True)
class MemoryRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass
class MemoryBus:
    """Topics of one partition each, and committed offsets per consumer group."""

    topics: dict[str, list[MemoryRecord]] = field(default_factory=lambda: defaultdict(list))
    committed: dict[tuple[str, str], int] = field(default_factory=dict)

    def append(self, topic: str, value: bytes | None, key: bytes | None = None) -> MemoryRecord:
        record = MemoryRecord(topic, 0, len(self.topics[topic]), key, value)
        self.topics[topic].append(record)
        return record

    def values(self, topic: str) -> list[bytes | None]:
        return [record.value for record in self.topics[topic]]

    def clients(
        self, topic: str, group: str, when_drained: Callable[[], None] | None = None
    ) -> Callable[[], tuple[DeltaConsumer, RecordProducer]]:
        """A factory for ``SinkRunner(clients=...)``; ``when_drained`` runs whenever a poll
        finds nothing left (tests set the runner's stop event there)."""
        return lambda: (MemoryConsumer(self, topic, group, when_drained), MemoryProducer(self))


class MemoryConsumer:
    """Reads one topic from the group's committed offset; commits what it is told to."""

    def __init__(
        self,
        bus: MemoryBus,
        topic: str,
        group: str,
        when_drained: Callable[[], None] | None = None,
    ) -> None:
        self.bus = bus
        self.topic = topic
        self.group = group
        self.when_drained = when_drained
        self.position = bus.committed.get((group, topic), 0)
        self.commits: list[dict[TopicPartition, int]] = []
        self.refuse_commits = 0  # the next commits fail as after a rebalance

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def getmany(
        self, *, timeout_ms: int, max_records: int
    ) -> dict[TopicPartition, list[MemoryRecord]]:
        await asyncio.sleep(0)  # a real poll yields to the loop too
        records = self.bus.topics[self.topic][self.position : self.position + max_records]
        if not records:
            if self.when_drained is not None:
                self.when_drained()
            return {}
        self.position += len(records)
        return {TopicPartition(self.topic, 0): list(records)}

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        if self.refuse_commits > 0:
            self.refuse_commits -= 1
            raise CommitFailedError("the group rebalanced (in-memory bus)")
        self.commits.append(dict(offsets))
        for tp, offset in offsets.items():
            self.bus.committed[(self.group, tp.topic)] = offset


class MemoryProducer:
    """Appends to the bus; ``refuse`` makes the next sends fail as a broker outage would."""

    def __init__(self, bus: MemoryBus) -> None:
        self.bus = bus
        self.refuse = 0

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def send_and_wait(
        self, topic: str, value: bytes | None = None, key: bytes | None = None
    ) -> MemoryRecord:
        if self.refuse > 0:
            self.refuse -= 1
            raise ConnectionError("the in-memory broker refused the send")
        return self.bus.append(topic, value, key)


@dataclass
class ManualClock:
    """``sleep`` returns at once and records the delay; ``now`` advances by it."""

    now: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)

    def monotonic(self) -> float:
        return self.now
