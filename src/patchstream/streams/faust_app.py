"""The Faust app: the parse agent on ``patch-events`` with the previous state in a table.

The table is changelog-backed, so a restarted worker (or a rebalance to another worker)
recovers every file's previous state from Kafka. With a memory-only broker that restarted,
the table starts empty: events are then parsed as first versions, which the sinks handle
correctly because they diff against what the stores hold.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import faust

from patchstream.errors import ContractError
from patchstream.parsing.filestate import FileStateBuilder
from patchstream.schemas.state import FileState
from patchstream.settings import Settings
from patchstream.streams.blobs import BlobReader
from patchstream.streams.codec import dead_letter, decode_event, encode
from patchstream.streams.parse_stage import ParseStage
from patchstream.streams.topics import Topics

log = logging.getLogger("patchstream.parse")


def create_app(settings: Settings) -> faust.App:
    kafka = settings.kafka
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
        # Everything on the bus is bytes we decode ourselves, so bad input reaches the DLQ.
        key_serializer="raw",
        value_serializer="raw",
    )
    raw: dict[str, Any] = {"key_type": bytes, "value_type": bytes}
    raw_serializers: dict[str, Any] = {"key_serializer": "raw", "value_serializer": "raw"}
    patch_topic = app.topic(topics.patch_events, **raw, **raw_serializers)
    delta_topic = app.topic(topics.file_deltas, **raw, **raw_serializers)
    dlq_topic = app.topic(topics.dlq, **raw, **raw_serializers)
    states = app.Table(
        "file-states", default=None, partitions=kafka.partitions, key_type=bytes, value_type=bytes
    )
    stage = ParseStage(FileStateBuilder(settings.parsing), BlobReader(settings.pipeline.repos_dir))
    allowed = settings.pipeline.allowed_tenants

    async def reject(reason: str, value: bytes | None, key: bytes | None, message: Any) -> None:
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
                stored = states.get(patch.key.encode())
                previous = FileState.model_validate_json(stored) if stored else None
                # Parsing is CPU-bound: keep the event loop (heartbeats, commits) responsive.
                output = await asyncio.to_thread(stage.handle, patch, previous)
            except ContractError as exc:
                await reject(str(exc), value, key, message)
                continue
            except Exception as exc:  # a pathological file must not stop the worker
                log.exception("event=parse_failed offset=%s", message.offset)
                await reject(f"internal error: {type(exc).__name__}: {exc}", value, key, message)
                continue
            for follow_up in output.events:
                await patch_topic.send(key=follow_up.key.encode(), value=encode(follow_up))
            for delta in output.deltas:
                # Wait for the broker's ack so the offset is only committed after the delta is.
                sent = await delta_topic.send(key=patch.key.encode(), value=encode(delta))
                await sent
            if not output.stale:
                if output.state is None:
                    states.pop(patch.key.encode(), None)
                else:
                    states[patch.key.encode()] = output.state.model_dump_json().encode()

    return app
