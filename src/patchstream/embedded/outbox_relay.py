"""Replays the gateway's outbox into a broker that lost its log, and prunes what is applied.

Run by the supervisor of the embedded stack: it restarts the memory-only broker itself, so it
knows exactly when acknowledged events may have been lost. An entry is applied when both tiers
hold its file at its version or a newer one (a delete counts: the fence keeps its version).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Sequence

from patchstream.producers.outbox import Outbox, OutboxEntry, outbox_path
from patchstream.schemas.events import view_ref
from patchstream.settings import Settings
from patchstream.stores.graph.base import GraphStore
from patchstream.stores.graph.keys import scope_of
from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.streams.producer import make_producer
from patchstream.streams.topics import Topics

log = logging.getLogger("patchstream.outbox")


_BULK = 32  # from this many entries of one branch, read the branch's versions at once


def split_applied(
    entries: Sequence[OutboxEntry], graph: GraphStore, vectors: MilvusVectorStore
) -> tuple[list[OutboxEntry], list[OutboxEntry]]:
    """(applied in both tiers, not yet). A few writes of a branch are looked up one by one;
    an index run's hundreds are read with two queries for the branch."""
    by_branch: dict[tuple[str, str, str], list[OutboxEntry]] = defaultdict(list)
    for entry in entries:
        branch = view_ref(entry.ref, entry.workspace)
        by_branch[(entry.tenant, entry.repo, branch)].append(entry)
    done: set[int] = set()
    dropped = {tenant: graph.dropped_refs(tenant) for tenant, _, _ in by_branch}
    for (tenant, repo, branch), group in by_branch.items():
        # A dropped ref's entries up to the drop are done: replaying them would resurrect it.
        dropped_at = dropped[tenant].get(scope_of(tenant, repo, branch), -1)
        done.update(e.id for e in group if e.version <= dropped_at)
        group = [e for e in group if e.version > dropped_at]
        if len(group) >= _BULK:
            graph_versions = graph.file_versions(tenant, repo, branch)
            vector_versions = vectors.file_versions(tenant, repo, branch)
            versions = [(graph_versions.get(e.path), vector_versions.get(e.path)) for e in group]
        else:
            versions = []
            for e in group:
                fence = graph.file_version(tenant, repo, branch, e.path)
                versions.append((fence.version if fence else None,
                                 vectors.file_version(tenant, repo, branch, e.path)))  # fmt: skip
        for entry, (in_graph, in_vectors) in zip(group, versions, strict=True):
            if (
                in_graph is not None
                and in_vectors is not None
                and (min(in_graph, in_vectors) >= entry.version)
            ):
                done.add(entry.id)
    applied = [e for e in entries if e.id in done]
    pending = [e for e in entries if e.id not in done]
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
