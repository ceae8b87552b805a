"""A sink consumer: batch, apply with retries, commit only after the store has written.

- Malformed deltas go to the DLQ at once, with the reason.
- A store that is unreachable is retried with capped exponential backoff for as long as it
  takes: nothing can succeed, and skipping would lose data.
- A store that refuses one message is retried ``max_retries`` times, then the message goes
  to the DLQ and the partition moves on.
- Offsets are committed after the batch is written (or dead-lettered), never before.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiokafka import TopicPartition
from aiokafka.errors import KafkaError

from patchstream.bus.producer import make_producer
from patchstream.bus.topics import Topics
from patchstream.config.settings import Settings
from patchstream.errors import ContractError, StoreUnavailable
from patchstream.metrics import Metrics
from patchstream.streams.codec import dead_letter, decode_delta
from patchstream.streams.fetch_pacing import PacedConsumer, pacer_for

log = logging.getLogger("patchstream.sink")

ApplyBatch = Callable[[Sequence[Any]], None]
Decode = Callable[[bytes | None], Any]  # raises ContractError for what goes to the DLQ
_MAX_BACKOFF_S = 30.0
IDLE_LOOP_MS = 1000  # a quiet sink's empty loop: how long a stop may wait to be seen


class Record(Protocol):
    """What the runner reads of a consumed record (aiokafka's ``ConsumerRecord`` has it)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


class DeltaConsumer(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def getmany(
        self, *, timeout_ms: int, max_records: int
    ) -> Mapping[TopicPartition, Sequence[Record]]: ...
    async def commit(self, offsets: dict[TopicPartition, int]) -> None: ...


class RecordProducer(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def send_and_wait(
        self, topic: str, value: bytes | None = None, key: bytes | None = None
    ) -> Any: ...


# The bus clients a runner uses; tests hand in the in-memory ones of ``patchstream.testing``.
Clients = Callable[[], tuple[DeltaConsumer, RecordProducer]]


def is_unavailable(exc: BaseException) -> bool:
    """Whether an error means the store cannot be reached (retry forever) rather than that it
    refused a message (retry a few times, then dead-letter). Decided by type: adapters raise
    ``StoreUnavailable`` at their boundary; a bare socket error means the same."""
    return isinstance(exc, (StoreUnavailable, ConnectionError, TimeoutError))


def runs_by_size(records: Sequence[Record], max_bytes: int) -> list[Sequence[Record]]:
    """Consecutive runs of ``records`` whose values total at most ``max_bytes`` (a record
    larger than that is a run of its own). A fetch of 256 deltas is decoded and embedded a
    run at a time, so a sink's memory follows this bound rather than the fetch's."""
    runs: list[Sequence[Record]] = []
    start, size = 0, 0
    for index, record in enumerate(records):
        length = len(record.value or b"")
        if index > start and size + length > max_bytes:
            runs.append(records[start:index])
            start, size = index, 0
        size += length
    if start < len(records):
        runs.append(records[start:])
    return runs


@dataclass
class SinkStats:
    applied: int = 0
    dead_lettered: int = 0
    batches: int = 0
    retries: int = 0
    commit_failures: int = 0
    # The most recent errors only: a sink runs for months.
    errors: deque[str] = field(default_factory=lambda: deque(maxlen=20))


class SinkRunner:
    def __init__(
        self,
        name: str,
        settings: Settings,
        apply_batch: ApplyBatch,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        metrics: Metrics | None = None,
        store: str | None = None,
        clients: Clients | None = None,
        finish_fetch: Callable[[], None] | None = None,
        topic: str | None = None,
        decode: Decode = decode_delta,
    ) -> None:
        """``finish_fetch`` runs once every run of a fetch is written, before the commit (the
        vector sink flushes there: once a fetch, not once a run). ``topic`` and ``decode``:
        what is consumed (file deltas unless said; the graph sink also reads trace events)."""
        self.name = name
        self.metrics = metrics or Metrics(f"{name}-sink", settings.metrics)
        self.store = store or name
        self.settings = settings
        self.apply_batch = apply_batch
        self.finish_fetch = finish_fetch
        self.topics = Topics.from_settings(settings.kafka)
        self.topic = topic or self.topics.file_deltas
        self.decode = decode
        self.group_id = f"{settings.kafka.topic_prefix}{name}-sink"
        self.stats = SinkStats()
        self._sleep = sleep
        self._clients = clients or self._kafka_clients

    def _kafka_clients(self) -> tuple[DeltaConsumer, RecordProducer]:
        kafka = self.settings.kafka
        consumer = PacedConsumer(
            self.topic,
            pacer=pacer_for(kafka),
            bootstrap_servers=kafka.bootstrap,
            group_id=self.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=kafka.max_message_bytes,
            fetch_max_bytes=kafka.max_message_bytes * 2,
            fetch_max_wait_ms=kafka.fetch_max_wait_ms,
            request_timeout_ms=kafka.request_timeout_ms,
        )
        return consumer, make_producer(kafka)

    async def run(self, stop: asyncio.Event) -> None:
        consumer, producer = self._clients()
        await producer.start()
        await consumer.start()
        log.info("event=sink_started sink=%s group=%s", self.name, self.group_id)
        active_ms = self.settings.pipeline.sink_batch_wait_ms or 100
        last_records_at = time.monotonic()
        try:
            while not stop.is_set():
                # getmany returns as soon as records are fetched; its timeout only says how
                # often an empty loop comes round (to see ``stop``). A quiet sink comes round
                # every second, not five times a second: an idle stack's wake-ups add up.
                quiet = time.monotonic() - last_records_at >= self.settings.kafka.idle_after_s
                batches = await consumer.getmany(
                    timeout_ms=max(active_ms, IDLE_LOOP_MS) if quiet else active_ms,
                    max_records=self.settings.pipeline.sink_batch_size,
                )
                records = [r for partition in batches.values() for r in partition]
                if not records:
                    continue
                last_records_at = time.monotonic()
                await self.process(records, producer, stop)
                offsets = {
                    TopicPartition(tp.topic, tp.partition): msgs[-1].offset + 1
                    for tp, msgs in batches.items()
                    if msgs
                }
                try:
                    await consumer.commit(offsets)
                except KafkaError as exc:
                    # The group rebalanced (say, the broker restarted): whoever owns the
                    # partitions now gets the batch again, and the fences make that a no-op.
                    # Crashing here only delayed the sink by its restart backoff.
                    self.stats.commit_failures += 1
                    log.warning("event=commit_failed sink=%s error=%s", self.name,
                                type(exc).__name__)  # fmt: skip
        finally:
            await consumer.stop()
            await producer.stop()
            log.info("event=sink_stopped sink=%s applied=%d", self.name, self.stats.applied)

    async def process(
        self, records: Sequence[Record], producer: RecordProducer, stop: asyncio.Event
    ) -> None:
        """Write the records in runs of at most ``sink_batch_max_mb``, in delivery order."""
        max_bytes = int(self.settings.pipeline.sink_batch_max_mb * (1 << 20))
        for run in runs_by_size(records, max_bytes):
            await self._process_run(run, producer, stop)
        if self.finish_fetch is not None and not await self._write(self.finish_fetch, 0, stop):
            raise RuntimeError(  # nothing is committed: the fetch comes again after a restart
                f"{self.name} sink could not finish a fetch: {self.stats.errors[-1]}"
            )

    async def _process_run(
        self, records: Sequence[Record], producer: RecordProducer, stop: asyncio.Event
    ) -> None:
        good: list[tuple[Record, Any]] = []
        for record in records:
            try:
                good.append((record, self.decode(record.value)))
            except ContractError as exc:
                await self._dead_letter(producer, record, str(exc), exc.code, attempts=1)
        if not good:
            return
        self.stats.batches += 1
        if await self._apply([d for _, d in good], stop):
            self.stats.applied += len(good)
            self.metrics.applied(self.name, (d for _, d in good))
            return
        # The batch keeps failing: find the messages that cannot be written, one by one.
        for record, delta in good:
            if await self._apply([delta], stop):
                self.stats.applied += 1
                self.metrics.applied(self.name, [delta])
            else:
                await self._dead_letter(
                    producer,
                    record,
                    self.stats.errors[-1] if self.stats.errors else "store error",
                    "store_refused",
                    attempts=self.settings.pipeline.max_retries + 1,
                )

    async def _apply(self, deltas: list[Any], stop: asyncio.Event) -> bool:
        return await self._write(lambda: self.apply_batch(deltas), len(deltas), stop)

    async def _write(self, write: Callable[[], object], deltas: int, stop: asyncio.Event) -> bool:
        """``write`` in a thread, retried as the policy says; False once the store refused it
        ``max_retries`` times."""
        pipeline = self.settings.pipeline
        attempt = 0
        while True:
            try:
                with self.metrics.store_write_seconds.labels(self.store).time():
                    await asyncio.to_thread(write)
                return True
            except Exception as exc:
                message = f"{type(exc).__name__}: {exc}"
                self.stats.errors.append(message[:500])
                unavailable = is_unavailable(exc)
                if not unavailable and attempt >= pipeline.max_retries:
                    log.error(
                        "event=apply_failed sink=%s deltas=%d error=%r",
                        self.name,
                        deltas,
                        message,
                    )
                    return False
                if stop.is_set() and unavailable:
                    raise  # shutting down with the store gone: do not commit, redeliver later
                delay = min(_MAX_BACKOFF_S, pipeline.retry_backoff_s * (2**attempt))
                log.warning(
                    "event=apply_retry sink=%s attempt=%d unavailable=%s delay=%.2f error=%r",
                    self.name,
                    attempt + 1,
                    unavailable,
                    delay,
                    message,
                )
                self.stats.retries += 1
                self.metrics.store_retries.labels(self.store).inc()
                attempt += 1
                await self._sleep(delay)

    async def _dead_letter(
        self,
        producer: RecordProducer,
        record: Record,
        reason: str,
        code: str,
        attempts: int,
    ) -> None:
        self.stats.dead_lettered += 1
        self.metrics.dead_lettered(f"{self.name}-sink", code)
        log.warning(
            "event=dead_letter sink=%s reason=%r offset=%s", self.name, reason, record.offset
        )
        await producer.send_and_wait(
            self.topics.dlq,
            key=record.key,
            value=dead_letter(
                stage=f"{self.name}-sink",
                code=code,
                reason=reason,
                value=record.value,
                key=record.key,
                topic=record.topic,
                partition=record.partition,
                offset=record.offset,
                attempts=attempts,
            ),
        )
