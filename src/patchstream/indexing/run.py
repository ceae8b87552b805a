"""``patchstream index``: publish a directory as snapshot events and wait until both tiers
applied them. Files whose content hash both tiers already hold are not published again;
files the index holds but the directory no longer has are deleted."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aiokafka.errors import KafkaError

from patchstream.config.settings import Settings
from patchstream.errors import StoreError, StoreUnavailable
from patchstream.indexing.capacity import check_capacity
from patchstream.indexing.plan import IndexPlan, plan_index
from patchstream.parsing.prose import unparsed_by_extension
from patchstream.producers.outbox import Outbox, outbox_path, publish_durably
from patchstream.producers.tree_scan import ScanResult, scan_directory
from patchstream.schemas.events import PatchEvent
from patchstream.stores.factory import open_graph_store, open_vector_store
from patchstream.stores.overlay_service import check_branch_base, held_view
from patchstream.streams.producer import EventPublisher

_Store = TypeVar("_Store")
log = logging.getLogger("patchstream.index")
_PUBLISH_CHUNK = 500
_BROKER_WAIT_S = 60.0  # a broker that is restarting is waited for, not reported as gone


async def _open_publisher(settings: Settings, wait_s: float) -> EventPublisher:
    """A started publisher; a broker that does not answer yet is retried for ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        publisher = EventPublisher(settings.kafka)
        try:
            return await publisher.__aenter__()
        except KafkaError as exc:
            await publisher.__aexit__(None, None, None)
            if time.monotonic() > deadline:
                raise
            log.warning("event=index_waiting store=broker error=%s", type(exc).__name__)
            await asyncio.sleep(1.0)


@dataclass
class IndexSummary:
    tenant: str
    repo: str
    ref: str
    version: int
    files_scanned: int = 0
    published: int = 0
    unchanged: int = 0
    deleted: int = 0
    commits: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    # Files whose content stayed here (too large, binary, secret): path, reason, in words.
    withheld: list[dict[str, str]] = field(default_factory=list)
    # Files of a language with no grammar here, by extension: their text is searchable,
    # they have no symbols (flagged no_grammar).
    unparsed: dict[str, int] = field(default_factory=dict)
    # Writes the server refused, each alone (path, its answer): the run went on without them.
    refused: list[dict[str, str]] = field(default_factory=list)
    graph_applied: int = 0
    vectors_applied: int = 0
    symbols: int = 0
    edges: int = 0
    references: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    # Why the counts above are missing, when the stores could not count in time (the index
    # itself is done: they are a report, never a reason to fail it).
    counts_unavailable: str | None = None
    seconds: float = 0.0
    graph_seconds: float | None = None  # from the start until the graph tier had every file
    vector_seconds: float | None = None  # the same for the vector tier
    complete: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def scanned(self, scan: ScanResult) -> None:
        self.files_scanned = len(scan.files)
        self.skipped = dict(scan.skipped)
        self.withheld = [{"path": w.path, "reason": w.reason, "detail": w.detail}
                         for w in scan.withheld]  # fmt: skip
        self.unparsed = unparsed_by_extension(scan.files)

    def count(self, plan: IndexPlan) -> None:
        self.unchanged, self.deleted, self.commits = plan.unchanged, plan.deleted, plan.commits
        if plan.invalid_paths:
            self.skipped["invalid_path"] = self.skipped.get("invalid_path", 0) + plan.invalid_paths


class Progress:
    """Three bars on a terminal (published / graph applied / vectors applied), log lines
    otherwise."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.bars: list[Any] = []
        self.last_log = 0.0
        if enabled and sys.stderr.isatty():
            from tqdm import tqdm

            self.bars = [
                tqdm(total=total, desc=name, unit="file", position=i, leave=True)
                for i, name in enumerate(("published", "graph applied", "vectors applied"))
            ]

    def update(self, published: int, graph: int, vectors: int) -> None:
        if self.bars:
            for bar, value in zip(self.bars, (published, graph, vectors), strict=True):
                bar.n = min(value, self.total)
                bar.refresh()
        elif time.monotonic() - self.last_log > 2.0:
            self.last_log = time.monotonic()
            log.info(
                "event=index_progress total=%d published=%d graph_applied=%d vectors_applied=%d",
                self.total,
                published,
                graph,
                vectors,
            )

    def close(self) -> None:
        for bar in self.bars:
            bar.close()


async def _opened(open_store: Callable[[], _Store], wait_s: float) -> _Store:
    """A store that does not answer yet (restarting, loading) is waited for, saying which."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return await asyncio.to_thread(open_store)
        except StoreUnavailable as exc:
            if time.monotonic() > deadline:
                raise
            log.warning("event=index_waiting store=%s error=%s", exc.store, exc)
            await asyncio.sleep(1.0)


async def index_directory(
    settings: Settings,
    root: Path,
    *,
    repo: str,
    tenant: str = "default",
    ref: str = "main",
    timeout_s: float = 3600.0,
    progress: bool = True,
    commits: int = 100,
    base: str | None = None,
) -> IndexSummary:
    """Publish what the stores lack of ``root`` and wait for both tiers. With ``base``,
    ``ref`` becomes an overlay of it: only the files that differ from the base (and the
    deletions) are published and stored."""
    started = time.monotonic()
    version = time.time_ns()
    summary = IndexSummary(tenant=tenant, repo=repo, ref=ref, version=version)
    scan = scan_directory(root, settings.parsing.max_file_bytes)
    summary.scanned(scan)
    graph = await _opened(lambda: open_graph_store(settings), timeout_s)
    vectors = await _opened(lambda: open_vector_store(settings), timeout_s)
    try:
        if base is not None:
            check_branch_base(graph, tenant, repo, ref, base)
            graph.declare_overlay(tenant, repo, ref, base, "branch")
        plan = plan_index(root, scan, held_view(graph, vectors, tenant, repo, ref), commits)
        summary.count(plan)
        # Refused here, before anything is published, rather than killed mid-index.
        added = sum(len(w.content) for w in plan.writes if w.content)
        if (fits := check_capacity(settings, added)) is not None:
            log.info("event=index_memory_estimate source_mb=%.1f needed_mib=%.0f "
                     "available_mib=%.0f", fits.source_mb, fits.needed_mib,
                     fits.available_mib)  # fmt: skip
        common = {"tenant": tenant, "repo": repo, "ref": ref, "version": version,
                  "source": "snapshot", "actor": "patchstream-index",
                  "batch_id": f"index-{version}"}  # fmt: skip
        events = [PatchEvent(path=w.path, op=w.op, content=w.content,
                             content_hash=None if w.withheld else w.content_hash,
                             withheld=w.withheld, commit=w.commit, **common)
                  for w in plan.writes]  # fmt: skip
        bars = Progress(len(events), progress)
        outbox = Outbox(outbox_path(settings)) if settings.gateway.outbox else None
        try:
            publisher = await _open_publisher(settings, _BROKER_WAIT_S)
            try:
                for start in range(0, len(events), _PUBLISH_CHUNK):
                    chunk = events[start : start + _PUBLISH_CHUNK]
                    await publish_durably(outbox, chunk, publisher.publish,
                                          durable_broker=settings.kafka.durable)  # fmt: skip
                    summary.published += len(chunk)
                    bars.update(summary.published, 0, 0)
            finally:
                await publisher.__aexit__(None, None, None)
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    summary.graph_applied = graph.count_applied(tenant, repo, ref, version)
                    summary.vectors_applied = vectors.count_applied(tenant, repo, ref, version)
                except StoreUnavailable as exc:  # restarting: say which, and keep waiting
                    log.warning("event=index_waiting store=%s error=%s", exc.store, exc)
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(1.0)
                    continue
                elapsed = round(time.monotonic() - started, 3)
                if summary.graph_seconds is None and summary.graph_applied >= len(events):
                    summary.graph_seconds = elapsed
                if summary.vector_seconds is None and summary.vectors_applied >= len(events):
                    summary.vector_seconds = elapsed
                bars.update(summary.published, summary.graph_applied, summary.vectors_applied)
                done = min(summary.graph_applied, summary.vectors_applied) >= len(events)
                if done or time.monotonic() > deadline:
                    summary.complete = done
                    break
                await asyncio.sleep(0.25)
        finally:
            bars.close()
            if outbox is not None:
                outbox.close()
        try:
            summary.symbols, summary.edges, summary.references = graph.scope_counts(
                tenant, repo, ref
            )
            summary.chunks_embedded, summary.chunks_reused = vectors.embed_counts(
                tenant, repo, ref, version
            )
        except StoreError as exc:  # at 20k files a count over every symbol timed out
            summary.counts_unavailable = f"{type(exc).__name__}: {exc}"[:300]
            log.warning("event=index_counts_unavailable repo=%s ref=%s error=%s", repo, ref,
                        summary.counts_unavailable)  # fmt: skip
    finally:
        graph.close()
        vectors.close()
    summary.seconds = round(time.monotonic() - started, 3)
    return summary
