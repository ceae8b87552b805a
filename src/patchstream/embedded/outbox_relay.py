"""Replays the gateway's outbox into a broker that lost its log, and prunes what is applied.

Run by the supervisor of the embedded stack: it restarts the memory-only broker itself, so it
knows exactly when acknowledged events may have been lost. An entry is applied when both tiers
hold its file at its version or a newer one (a delete counts: the fence keeps its version).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from patchstream.producers.outbox import Outbox, OutboxEntry, outbox_path
from patchstream.settings import Settings
from patchstream.stores.graph.base import GraphStore
from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.streams.producer import make_producer
from patchstream.streams.topics import Topics

log = logging.getLogger("patchstream.outbox")


def split_applied(
    entries: Sequence[OutboxEntry], graph: GraphStore, vectors: MilvusVectorStore
) -> tuple[list[OutboxEntry], list[OutboxEntry]]:
    """(applied in both tiers, not yet)."""
    applied: list[OutboxEntry] = []
    pending: list[OutboxEntry] = []
    for entry in entries:
        branch = entry.ref if entry.workspace is None else f"{entry.ref}~{entry.workspace}"
        fence = graph.file_version(entry.tenant, entry.repo, branch, entry.path)
        vector = vectors.file_version(entry.tenant, entry.repo, branch, entry.path)
        done = fence is not None and fence.version >= entry.version
        done = done and vector is not None and vector >= entry.version
        (applied if done else pending).append(entry)
    return applied, pending


async def republish(settings: Settings, entries: Sequence[OutboxEntry]) -> int:
    """Publish the entries again, untouched, in acknowledgement order."""
    if not entries:
        return 0
    topic = Topics.from_settings(settings.kafka).patch_events
    producer = make_producer(settings.kafka)
    await producer.start()
    try:
        for entry in entries:
            await producer.send_and_wait(topic, key=entry.key, value=entry.value)
    finally:
        await producer.stop()
    return len(entries)


def replay_and_prune(
    settings: Settings, graph: GraphStore, vectors: MilvusVectorStore, replay: bool
) -> tuple[int, int]:
    """Prune applied entries; with ``replay``, republish the others. (replayed, pruned)."""
    path = outbox_path(settings)
    if not path.exists():
        return 0, 0
    outbox = Outbox(path)
    replayed = pruned = 0
    try:
        after = 0
        while batch := outbox.pending(limit=1000, after_id=after):
            after = batch[-1].id
            applied, pending = split_applied(batch, graph, vectors)
            outbox.remove(e.id for e in applied)
            pruned += len(applied)
            if replay:
                replayed += asyncio.run(republish(settings, pending))
    finally:
        outbox.close()
    if replayed or pruned:
        log.info("event=outbox replayed=%d pruned=%d", replayed, pruned)
    return replayed, pruned
