"""The two sinks: what each does with a batch of deltas."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from patchstream.metrics import Metrics
from patchstream.schemas.state import FileDelta
from patchstream.schemas.traces import TraceEvent
from patchstream.stores.graph.base import GraphStore

if TYPE_CHECKING:  # the graph sink's process never loads pymilvus
    from patchstream.stores.vector.milvus import MilvusVectorStore


class GraphSink:
    """The batch in delivery order: one fence read and one atomic write per run of files."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store

    def __call__(self, deltas: Sequence[FileDelta]) -> None:
        self.store.apply_many(deltas)


class TraceSink:
    """Trace events: the runtime edges whose files still hold the traced content."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store

    def __call__(self, events: Sequence[TraceEvent]) -> None:
        self.store.apply_traces(events)


class VectorSink:
    """One embed call and one upsert per batch; :meth:`flush` seals what the batches wrote
    (the runner calls it once a fetch, before committing)."""

    def __init__(self, store: MilvusVectorStore, metrics: Metrics | None = None) -> None:
        self.store = store
        self.metrics = metrics

    def __call__(self, deltas: Sequence[FileDelta]) -> None:
        stats = self.store.apply(deltas, flush=False)
        if self.metrics is not None:
            self.metrics.chunk_counts(
                self.store.embedder.name,
                stats.chunks_embedded,
                stats.chunks_reused,
                stats.embed_seconds,
            )

    def flush(self) -> None:
        self.store.flush()
