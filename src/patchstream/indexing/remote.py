"""``patchstream index`` as a client of a shared server: no store address or credential.

It reads what the ref's view holds through the query service (``GET /v1/files``: path and
the hash both tiers agree on, in pages), plans locally what differs (``indexing.plan``, the
same planner as the local index), uploads only that through the gateway (``POST
/v1/patches`` as snapshot writes, gzipped, in requests bounded by count and bytes), and follows the
server's progress (``GET /v1/index/progress``) until both tiers applied every write. The
key decides the tenant; ``--base`` declares the branch overlay through ``POST /v1/overlays``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from patchstream.client import PatchClient, PatchRefused
from patchstream.config.settings import Settings
from patchstream.indexing.plan import PlannedWrite, plan_index
from patchstream.indexing.run import IndexSummary, Progress
from patchstream.producers.tree_scan import scan_directory
from patchstream.query.client import QueryClient

log = logging.getLogger("patchstream.index")
PAGE = 5000  # paths per /v1/files page
MAX_WRITES = 1000  # the gateway's writes per request
_OVERHEAD = 512  # JSON around one write's content
_NOTHING_WRITTEN = 2**63 - 1


def batches(writes: list[PlannedWrite], max_bytes: int) -> Iterator[list[PlannedWrite]]:
    """Writes in requests of at most ``MAX_WRITES`` and ``max_bytes`` of body, as the gateway
    counts it (inflated, JSON-encoded: escaping can make content six times longer); a file
    over that goes alone (and is refused alone, its path named)."""
    budget = max_bytes - 4096  # the request's envelope
    batch: list[PlannedWrite] = []
    size = 0
    for write in writes:
        cost = _encoded_size(write.content) + _OVERHEAD
        if batch and (len(batch) >= MAX_WRITES or size + cost > budget):
            yield batch
            batch, size = [], 0
        batch.append(write)
        size += cost
    if batch:
        yield batch


def _encoded_size(content: str | None) -> int:
    """Bytes of ``content`` as a JSON string (ASCII-escaped, as ``httpx`` sends it)."""
    return len(json.dumps(content)) if content is not None else 0


def held_remotely(query: QueryClient, repo: str, ref: str) -> dict[str, str | None]:
    held: dict[str, str | None] = {}
    after = ""
    while True:
        params = {"repo": repo, "ref": ref, "after": after, "limit": PAGE}
        page = query.call("GET", "/v1/files", params=params)
        held.update({item["path"]: item["hash"] for item in page["files"]})
        if not page["next"]:
            return held
        after = page["next"]


def index_remote(
    settings: Settings,
    root: Path,
    *,
    repo: str,
    ref: str = "main",
    timeout_s: float = 3600.0,
    progress: bool = True,
    commits: int = 100,
    base: str | None = None,
) -> IndexSummary:
    """Index ``root`` into the server ``settings.gateway.url`` / ``settings.query.url`` name."""
    started = time.monotonic()
    summary = IndexSummary(tenant="", repo=repo, ref=ref, version=time.time_ns())
    scan = scan_directory(root, settings.parsing.max_file_bytes)
    summary.scanned(scan)
    query = QueryClient(settings.query)
    gateway = PatchClient(settings.gateway.url, settings.gateway.api_key.get_secret_value(),
                          timeout_s=120.0, compress=True)  # fmt: skip
    try:
        if base is not None:
            query.call("POST", "/v1/overlays", json={"repo": repo, "ref": ref, "base": base})
        plan = plan_index(root, scan, held_remotely(query, repo, ref), commits)
        summary.count(plan)
        bars = Progress(len(plan.writes), progress)
        try:
            # Counted from the server's version of the first write (never the client's clock).
            since = _upload(gateway, plan.writes, repo, ref, summary, bars,
                            settings.gateway.max_request_bytes)  # fmt: skip
            deadline = time.monotonic() + timeout_s
            while True:
                state = query.call("GET", "/v1/index/progress",
                                   params={"repo": repo, "ref": ref, "since": since,
                                           "expect": summary.published})  # fmt: skip
                summary.tenant = state["tenant"]
                summary.graph_applied = state["graph_applied"]
                summary.vectors_applied = state["vectors_applied"]
                bars.update(summary.published, summary.graph_applied, summary.vectors_applied)
                elapsed = round(time.monotonic() - started, 3)
                if summary.graph_seconds is None and summary.graph_applied >= summary.published:
                    summary.graph_seconds = elapsed
                if summary.vector_seconds is None and summary.vectors_applied >= summary.published:
                    summary.vector_seconds = elapsed
                done = min(summary.graph_applied, summary.vectors_applied) >= summary.published
                if done or time.monotonic() > deadline:
                    summary.complete = done
                    break
                time.sleep(0.25)
        finally:
            bars.close()
    finally:
        query.http.close()
        gateway.close()
    summary.seconds = round(time.monotonic() - started, 3)
    return summary


def _upload(
    gateway: PatchClient, writes: list[PlannedWrite], repo: str, ref: str,
    summary: IndexSummary, bars: Progress, max_bytes: int,
) -> int:  # fmt: skip
    """Every write through the gateway; the server's version of the first (what progress
    counts from; with nothing to write, a version no file has)."""
    since = _NOTHING_WRITTEN
    batch_id = f"index-{summary.version}"
    pending = list(batches(writes, max_bytes))
    while pending:
        batch = pending.pop(0)
        body: list[dict[str, Any]] = [
            {"repo": repo, "ref": ref, "path": w.path, "op": w.op, "actor": "patchstream-index",
             **({"content": w.content} if w.content is not None else {}),
             **({"withheld": w.withheld.model_dump()} if w.withheld is not None else {}),
             **({"commit": w.commit} if w.commit is not None else {})}
            for w in batch
        ]  # fmt: skip
        try:
            receipt = gateway.write(body, source="snapshot", batch_id=batch_id)
        except PatchRefused as exc:  # one file's trouble costs that file, not the run
            if len(batch) > 1:
                pending[:0] = [[write] for write in batch]
            else:
                summary.refused.append({"path": batch[0].path, "reason": str(exc)[:500]})
            continue
        since = min(since, int(receipt["version"]))
        summary.published += len(batch)
        bars.update(summary.published, 0, 0)
    return since
