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
import os
from pathlib import Path
from typing import Any

import aiokafka
import faust

from patchstream.bus.producer import compression_type
from patchstream.bus.topics import Topics
from patchstream.config.settings import KafkaSettings, Settings
from patchstream.errors import ContractError, StoreUnavailable
from patchstream.metrics import Metrics, dlq_reason_code
from patchstream.parsing.jail import state_builder
from patchstream.schemas.events import PatchEvent
from patchstream.stores.factory import open_graph_store
from patchstream.streams.blobs import BlobReader
from patchstream.streams.codec import dead_letter, decode_event, encode
from patchstream.streams.event_batches import WhenQuiet, event_batches
from patchstream.streams.fetch_pacing import pace, pacer_for
from patchstream.streams.parse_batch import (
    Outcome,
    PreviousStates,
    parse_until_the_store_answers,
)
from patchstream.streams.parse_stage import ParseStage

log = logging.getLogger("patchstream.parse")
AGENT_CRASHED = 70  # the exit status of a worker whose parse agent failed (EX_SOFTWARE)


def _limit_fetch_wait(group_id: str, kafka: KafkaSettings) -> None:
    """Faust hard-codes ``fetch_max_wait_ms=1500`` for its consumer, and Tansu holds every
    fetch until that wait expires: up to 1.5 s per event. Faust builds its consumer from the
    ``aiokafka`` module, so the worker process swaps in a subclass that uses our wait for
    this app's group only, paced like every consumer here (``fetch_pacing``)."""
    original = getattr(aiokafka, "_patchstream_original", aiokafka.AIOKafkaConsumer)

    class Consumer(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._pacer = None
            if kwargs.get("group_id") == group_id:
                kwargs["fetch_max_wait_ms"] = kafka.fetch_max_wait_ms
                self._pacer = pacer_for(kafka)
            super().__init__(*args, **kwargs)

        async def start(self) -> None:
            await super().start()
            if self._pacer is not None:
                pace(self, self._pacer)

    aiokafka._patchstream_original = original
    aiokafka.AIOKafkaConsumer = Consumer


def create_app(settings: Settings, metrics: Metrics | None = None) -> faust.App:
    metrics = metrics or Metrics("parse", settings.metrics)
    kafka = settings.kafka
    _limit_fetch_wait(f"{kafka.topic_prefix}parse", kafka)
    topics = Topics.from_settings(kafka)
    app = faust.App(
        f"{kafka.topic_prefix}parse",
        broker=f"kafka://{kafka.bootstrap}",
        store="memory://",
        topic_partitions=kafka.partitions,
        topic_replication_factor=kafka.replication,
        producer_acks=-1 if kafka.acks == "all" else int(kafka.acks),
        producer_max_request_size=kafka.max_message_bytes,
        producer_compression_type=compression_type(kafka),
        consumer_max_fetch_size=kafka.max_message_bytes,
        consumer_auto_offset_reset="earliest",
        web_enabled=False,
        datadir=str(Path(settings.embedded.data_dir) / "faust"),
        table_standby_replicas=0,
        # A crashed worker's partitions move to the others within seconds, not a minute.
        broker_session_timeout=10.0,
        broker_heartbeat_interval=3.0,
        # No request waits longer than the configured timeout (Faust's own defaults are
        # 90 s for the broker and 20 min for the producer).
        broker_request_timeout=kafka.request_timeout_ms / 1000,
        producer_request_timeout=kafka.request_timeout_ms / 1000,
        # Everything on the bus is bytes we decode ourselves, so bad input reaches the DLQ.
        key_serializer="raw",
        value_serializer="raw",
    )
    raw: dict[str, Any] = {"key_type": bytes, "value_type": bytes}
    raw_serializers: dict[str, Any] = {"key_serializer": "raw", "value_serializer": "raw"}
    patch_topic = app.topic(topics.patch_events, **raw, **raw_serializers)
    delta_topic = app.topic(topics.file_deltas, **raw, **raw_serializers)
    dlq_topic = app.topic(topics.dlq, **raw, **raw_serializers)
    stage = ParseStage(state_builder(settings.parsing), BlobReader(settings.pipeline.repos_dir),
                       settings.parsing.max_file_bytes)  # fmt: skip
    states = PreviousStates(
        open_graph_store(settings),
        settings.parsing.tree_cache_size,
        int(settings.parsing.state_cache_mb * (1 << 20)),
    )
    allowed = settings.pipeline.allowed_tenants

    async def reject(
        reason: str,
        code: str,
        value: bytes | None,
        key: bytes | None,
        message: Any,
        applied: bool = False,  # a flagged file: parsed (last good state kept) and reported
    ) -> Any:
        if applied:
            metrics.dlq.labels("parse", code).inc()
        else:
            metrics.dead_lettered("parse", code)
        log.warning("event=%s stage=parse reason=%r offset=%s", "flagged" if applied else
                    "rejected", reason[:300], message.offset)  # fmt: skip
        return await dlq_topic.send(
            key=key,
            value=dead_letter(
                stage="parse",
                code=code,
                reason=reason,
                value=value,
                key=key,
                topic=message.topic,
                partition=message.partition,
                offset=message.offset,
            ),
        )

    pipeline = settings.pipeline

    def on_retry(attempt: int, delay: float, exc: StoreUnavailable) -> None:
        log.warning("event=store_unavailable stage=parse attempt=%d delay=%.1f error=%s",
                    attempt, delay, exc)  # fmt: skip
        metrics.store_retries.labels("graph").inc()

    async def parse_patches(patches: list[PatchEvent]) -> list[Outcome]:
        return await parse_until_the_store_answers(
            stage, states, patches, backoff_s=pipeline.retry_backoff_s, on_retry=on_retry
        )

    async def parse_stream(stream: Any) -> None:
        # Batches: one thread hop, one store query for the files' existence, and every
        # delta's ack awaited together. Faust acks the batch's offsets only after this body
        # has finished with it, so at-least-once holds exactly as for one event at a time.
        within = pipeline.parse_batch_wait_ms / 1000
        quiet = WhenQuiet(settings.parsing.sandbox_quiet_s, stage.builder.quiet)
        async for events in event_batches(stream, pipeline.parse_batch_size, within):
            acks: list[Any] = []
            decoded: list[tuple[Any, PatchEvent]] = []
            for event in events:
                try:
                    decoded.append((event, decode_event(event.value, allowed)))
                except ContractError as exc:
                    acks.append(await reject(str(exc), exc.code, event.value, event.key,
                                             event.message))  # fmt: skip
            patches = [patch for _, patch in decoded]
            outcomes = await parse_patches(patches)
            for (event, patch), outcome in zip(decoded, outcomes, strict=True):
                if outcome.output is None:
                    error = outcome.error
                    if isinstance(error, ContractError):
                        reason, code = str(error), error.code
                    else:
                        offset = event.message.offset
                        log.error("event=parse_failed offset=%s error=%s", offset,
                                  type(error).__name__, exc_info=error)  # fmt: skip
                        reason = f"internal error: {type(error).__name__}: {error}"
                        code = dlq_reason_code(error)
                    acks.append(await reject(reason, code, event.value, event.key, event.message))
                    continue
                output = outcome.output
                if output.flagged is not None:  # applied (last good kept), and said in the DLQ
                    acks.append(await reject(f"file skipped, its last good state kept: "
                                             f"{output.flagged}", "parse_failed", event.value,
                                             event.key, event.message, applied=True))  # fmt: skip
                if output.not_indexed is not None:  # removed, as a clean scan would skip it
                    log.info("event=not_indexed path=%r reason=%s", patch.path,
                             output.not_indexed)  # fmt: skip
                if output.withheld is not None:  # a flagged name: said, never the content
                    log.info("event=withheld path=%r reason=%s", patch.path, output.withheld)
                language = (output.state.language if output.state else None) or "none"
                metrics.parse_seconds.labels(language).observe(outcome.seconds)
                metrics.events.labels("parse", "stale" if output.stale else "parsed").inc()
                for follow_up in output.events:
                    acks.append(await patch_topic.send(key=follow_up.key.encode(),
                                                       value=encode(follow_up)))  # fmt: skip
                for delta in output.deltas:
                    acks.append(await delta_topic.send(key=patch.key.encode(),
                                                       value=encode(delta)))  # fmt: skip
            # The offsets are committed only after every delta of the batch is acknowledged.
            await asyncio.gather(*acks)
            quiet.touch()
        quiet.cancel()

    @app.agent(patch_topic)
    async def parse(stream: Any) -> None:
        """Crash-only: an error out of the stream (the restarted broker refused the deltas,
        say) would leave Faust's agent dead inside a live process, and its partitions
        unconsumed for good. The process exits instead; the supervisor starts a new one and
        the batch, never acknowledged, is delivered again."""
        try:
            await parse_stream(stream)
        except Exception as exc:
            log.critical("event=parse_agent_crashed error=%s: %s; exiting so that a fresh "
                         "worker takes over", type(exc).__name__, exc, exc_info=exc)  # fmt: skip
            logging.shutdown()
            os._exit(AGENT_CRASHED)

    return app
