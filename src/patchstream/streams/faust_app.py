"""The Faust app: the parse agent on ``patch-events``.

Where the previous state of a file lives: in the worker's memory (an LRU of recent files,
which stays hot because a file's events always land on the same partition) and, on a miss,
in the graph store, the durable truth of the structure. A restarted or rebalanced worker, or
one whose memory-only broker restarted, therefore finds every file's last applied structure.
(A changelog-backed Faust table was tried first: after a worker crash, Faust's table
recovery against Tansu reported completion and then never fetched again.)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import aiokafka
import faust

from patchstream.errors import ContractError
from patchstream.metrics import Metrics, dlq_reason_code
from patchstream.parsing.filestate import FileStateBuilder
from patchstream.schemas.events import PatchEvent
from patchstream.schemas.state import FileState
from patchstream.settings import Settings
from patchstream.stores.factory import open_graph_store
from patchstream.stores.graph.base import GraphStore
from patchstream.streams.blobs import BlobReader
from patchstream.streams.codec import dead_letter, decode_event, encode
from patchstream.streams.parse_stage import ParseStage
from patchstream.streams.topics import Topics

log = logging.getLogger("patchstream.parse")


def _limit_fetch_wait(group_id: str, milliseconds: int) -> None:
    """Faust hard-codes ``fetch_max_wait_ms=1500`` for its consumer, and Tansu holds every
    fetch until that wait expires: up to 1.5 s per event. Faust builds its consumer from the
    ``aiokafka`` module, so the worker process swaps in a subclass that uses our wait for
    this app's group only."""
    original = getattr(aiokafka, "_patchstream_original", aiokafka.AIOKafkaConsumer)

    class Consumer(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if kwargs.get("group_id") == group_id:
                kwargs["fetch_max_wait_ms"] = milliseconds
            super().__init__(*args, **kwargs)

    aiokafka._patchstream_original = original
    aiokafka.AIOKafkaConsumer = Consumer


class PreviousStates:
    """Recent files' states in memory; the graph store's view of a file on a miss."""

    def __init__(self, graph: GraphStore, capacity: int) -> None:
        self.graph = graph
        self.capacity = max(1, capacity)
        self.recent: OrderedDict[str, FileState | None] = OrderedDict()

    def get(self, event: PatchEvent) -> FileState | None:
        if event.key in self.recent:
            self.recent.move_to_end(event.key)
            return self.recent[event.key]
        return self.graph.file_state(
            event.tenant, event.repo, event.ref, event.path, event.workspace
        )

    def put(self, event: PatchEvent, state: FileState | None) -> None:
        self.recent[event.key] = state
        self.recent.move_to_end(event.key)
        while len(self.recent) > self.capacity:
            self.recent.popitem(last=False)


def create_app(settings: Settings, metrics: Metrics | None = None) -> faust.App:
    metrics = metrics or Metrics("parse", settings.metrics)
    kafka = settings.kafka
    _limit_fetch_wait(f"{kafka.topic_prefix}parse", kafka.fetch_max_wait_ms)
    topics = Topics.from_settings(kafka)
    app = faust.App(
        f"{kafka.topic_prefix}parse",
        broker=f"kafka://{kafka.bootstrap}",
        store="memory://",
        topic_partitions=kafka.partitions,
        topic_replication_factor=kafka.replication,
        producer_acks=-1 if kafka.acks == "all" else int(kafka.acks),
        producer_max_request_size=kafka.max_message_bytes,
        consumer_max_fetch_size=kafka.max_message_bytes,
        consumer_auto_offset_reset="earliest",
        web_enabled=False,
        datadir=str(Path(settings.embedded.data_dir) / "faust"),
        table_standby_replicas=0,
        # A crashed worker's partitions move to the others within seconds, not a minute.
        broker_session_timeout=10.0,
        broker_heartbeat_interval=3.0,
        # Everything on the bus is bytes we decode ourselves, so bad input reaches the DLQ.
        key_serializer="raw",
        value_serializer="raw",
    )
    raw: dict[str, Any] = {"key_type": bytes, "value_type": bytes}
    raw_serializers: dict[str, Any] = {"key_serializer": "raw", "value_serializer": "raw"}
    patch_topic = app.topic(topics.patch_events, **raw, **raw_serializers)
    delta_topic = app.topic(topics.file_deltas, **raw, **raw_serializers)
    dlq_topic = app.topic(topics.dlq, **raw, **raw_serializers)
    stage = ParseStage(FileStateBuilder(settings.parsing), BlobReader(settings.pipeline.repos_dir))
    states = PreviousStates(open_graph_store(settings), settings.parsing.tree_cache_size)
    allowed = settings.pipeline.allowed_tenants

    async def reject(
        reason: str, code: str, value: bytes | None, key: bytes | None, message: Any
    ) -> None:
        metrics.dead_lettered("parse", code)
        log.warning("event=rejected stage=parse reason=%r offset=%s", reason, message.offset)
        await dlq_topic.send(
            key=key,
            value=dead_letter(
                stage="parse",
                reason=reason,
                value=value,
                key=key,
                topic=message.topic,
                partition=message.partition,
                offset=message.offset,
            ),
        )

    @app.agent(patch_topic)
    async def parse(stream: Any) -> None:
        async for event in stream.events():
            message = event.message
            key, value = event.key, event.value
            try:
                patch = decode_event(value, allowed)
                # Parsing and store reads block: keep the loop (heartbeats, commits) responsive.
                previous = await asyncio.to_thread(states.get, patch)
                started = time.perf_counter()
                output = await asyncio.to_thread(stage.handle, patch, previous)
            except ContractError as exc:
                await reject(str(exc), exc.code, value, key, message)
                continue
            except Exception as exc:  # a pathological file must not stop the worker
                log.exception("event=parse_failed offset=%s", message.offset)
                reason = f"internal error: {type(exc).__name__}: {exc}"
                await reject(reason, dlq_reason_code(exc), value, key, message)
                continue
            language = (output.state.language if output.state else None) or "none"
            metrics.parse_seconds.labels(language).observe(time.perf_counter() - started)
            metrics.events.labels("parse", "stale" if output.stale else "parsed").inc()
            for follow_up in output.events:
                await patch_topic.send(key=follow_up.key.encode(), value=encode(follow_up))
            for delta in output.deltas:
                # Wait for the broker's ack so the offset is only committed after the delta is.
                sent = await delta_topic.send(key=patch.key.encode(), value=encode(delta))
                await sent
            if not output.stale:
                states.put(patch, output.state)

    return app
