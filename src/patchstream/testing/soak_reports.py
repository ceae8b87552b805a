"""What a soak round reports: a tenant's store rows normalized so two correct indexes of
the same files compare equal, the files where two differ, and the bus's state (lag per
partition, groups, the dead-letter topic) for a round that failed in CI."""

from __future__ import annotations

import json
from collections import Counter

from patchstream.bus.topics import Topics
from patchstream.config.settings import Settings
from patchstream.stores.graph.base import GraphSnapshot

# Properties that differ between two correct indexes of the same files at other times.
_PER_RUN = {"version", "applied_at", "event_id", "batch_id", "actor", "session_id", "run_id",
            "source", "commit", "updated_at", "fp"}  # fmt: skip


async def bus_state(settings: Settings) -> str:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    from patchstream.query.lag import LagProbe

    probe = LagProbe(settings.kafka)
    lines = ["--- bus state"]
    for tier, lag in (await probe.lags()).items():
        lines.append(
            f"{tier} ({lag.group}): pending {lag.pending} by partition {lag.by_partition}, "
            f"committed {lag.committed}"
        )
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap)
    await admin.start()
    try:  # Tansu describes a group's state and members, not their assignments
        for group, _ in probe.groups.values():
            for response in await admin.describe_consumer_groups([group]):
                for described in response.groups:
                    lines.append(f"{group}: state {described[2]}, {len(described[5])} members")
    finally:
        await admin.close()
    dlq = Topics.from_settings(settings.kafka).dlq
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.kafka.bootstrap)
    await consumer.start()
    try:
        ends = await consumer.end_offsets(
            [TopicPartition(dlq, p) for p in sorted(consumer.partitions_for_topic(dlq) or ())]
        )
        lines.append(f"{dlq}: {sum(ends.values())} records")
    finally:
        await consumer.stop()
    return "\n".join(lines)


def differing_files(extra: set[str], missing: set[str], shown: int = 4) -> str:
    """Which files (scope|path, the first word of a normalized row) the differing rows
    belong to: what a failed round's message needs to say where to look."""
    parts = []
    for name, rows in (("extra", extra), ("missing", missing)):
        files = Counter(row.split(" ", 1)[0] for row in rows)
        if files:
            top = ", ".join(f"{uid} x{n}" for uid, n in files.most_common(shown))
            parts.append(f"{name} in {len(files)} files: {top}")
    return f" ({'; '.join(parts)})" if parts else ""


def normalized(
    graph: GraphSnapshot, rows: set[tuple[str, ...]], tenant: str
) -> tuple[set[str], set[str], set[str]]:
    """Symbols, edges and chunks of a tenant, with the tenant's name and per-run fields out."""

    def plain(value: str) -> str:
        return value.replace(tenant, "<tenant>")

    symbols = set()
    for scope, symbol_id, props in graph.symbols:
        visible = {k: v for k, v in json.loads(props).items() if k not in _PER_RUN}
        symbols.add(plain(f"{scope} {symbol_id} {json.dumps(visible, sort_keys=True)}"))
    edges = {plain(" ".join(edge)) for edge in graph.edges}
    chunks = {plain(" ".join(row[1:])) for row in rows}  # pk: a hash with the tenant in it
    return symbols, edges, chunks
