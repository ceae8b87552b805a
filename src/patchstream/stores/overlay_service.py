"""Overlays as a user manages them, store side: declare, show, drop (tombstones first) and
the expiry of idle agent workspaces. The HTTP routes (``query/overlay_api.py``) and the
janitor (``agent/janitor.py``) both use it."""

from __future__ import annotations

import logging
import re
import time

from patchstream.errors import ContractError
from patchstream.schemas.events import _NAME_PATTERN, check_name
from patchstream.stores.graph.base import GraphStore
from patchstream.stores.graph.keys import scope_of
from patchstream.stores.overlays import OverlayInfo, held_by_both, merged_hashes, split_workspace
from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.stores.vector.search_mirror import SearchMirror

log = logging.getLogger("patchstream.overlays")


def held_view(
    graph: GraphStore, vectors: MilvusVectorStore, tenant: str, repo: str, ref: str
) -> dict[str, str | None]:
    """Path -> the hash both tiers hold for it in ``ref``'s view (its overlays merged): what
    an index compares a directory with, locally or through ``GET /v1/files``."""
    chain = graph.overlay_chain(tenant, repo, ref)
    return held_by_both(
        merged_hashes(graph.file_hashes, graph.file_versions, tenant, repo, chain),
        merged_hashes(vectors.file_hashes, vectors.file_versions, tenant, repo, chain),
    )


class RefInUseError(ValueError):
    """A ref other overlays read as their base: dropping it would leave them reading a gap."""


def check_branch_base(graph: GraphStore, tenant: str, repo: str, ref: str, base: str) -> None:
    """A branch overlay's base must be a branch that is indexed (an overlay over nothing
    would store every file as its own) and must not read the branch itself. ContractError
    says which."""
    if not re.fullmatch(_NAME_PATTERN, base) or "~" in base:
        raise ContractError(f"base {base!r} is not a branch name")
    try:
        check_name(base)
    except ValueError as exc:
        raise ContractError(str(exc)) from exc
    if ref in graph.overlay_chain(tenant, repo, base):
        raise ContractError(f"{ref!r} over {base!r} would be a cycle")
    known = graph.known_refs(tenant, repo)
    if base not in known:
        listed = ", ".join(sorted(known)) or "none"
        raise ContractError(f"base {base!r} of {repo!r} is not indexed (refs: {listed});"
                            f" index it first")  # fmt: skip


class OverlayService:
    def __init__(
        self, graph: GraphStore, vectors: MilvusVectorStore, ttl_s: float, grace_s: float = 600.0,
        mirror: SearchMirror | None = None,
    ) -> None:  # fmt: skip
        self.graph = graph
        self.vectors = vectors
        self.mirror = mirror  # the query service's copy of the chunk index, if it keeps one
        self.ttl_s = ttl_s  # an agent workspace idle this long is dropped
        self.grace_s = grace_s  # a closed branch overlay is dropped this long after closing

    def overlays(self, tenant: str, repo: str | None = None) -> list[OverlayInfo]:
        return self.graph.overlays(tenant, repo)

    def show(self, tenant: str, repo: str, ref: str) -> OverlayInfo | None:
        return next((o for o in self.graph.overlays(tenant, repo) if o.ref == ref), None)

    def declare(self, tenant: str, repo: str, ref: str, base: str) -> OverlayInfo:
        kind = "workspace" if split_workspace(ref)[1] is not None else "branch"
        if kind == "workspace" and split_workspace(ref)[0] != base:
            raise ValueError(f"a workspace {ref!r} is an overlay of {split_workspace(ref)[0]!r}")
        if ref in self.graph.overlay_chain(tenant, repo, base):
            raise ValueError(f"{ref!r} over {base!r} would be a cycle")
        self.graph.declare_overlay(tenant, repo, ref, base, kind)
        found = self.show(tenant, repo, ref)
        assert found is not None
        return found

    def drop(self, tenant: str, repo: str, ref: str) -> int | None:
        """Drop an overlay's rows in both stores and its registration: the symbols removed;
        0 if it was dropped before (dropping is idempotent); None if ``ref`` never was an
        overlay (a plain branch is never dropped here)."""
        if self.show(tenant, repo, ref) is None:
            return 0 if scope_of(tenant, repo, ref) in self.graph.dropped_refs(tenant) else None
        return self._drop(tenant, repo, ref)

    def drop_ref(self, tenant: str, repo: str, ref: str) -> int | None:
        """Drop any ref of a repository (a branch deleted upstream, a rebuild that was only
        compared), fenced as an overlay's drop is: the symbols removed, 0 if it was dropped
        before, None if the repository never had it. ``RefInUseError`` while overlays read it."""
        over = sorted(o.ref for o in self.graph.overlays(tenant, repo) if o.base == ref)
        if over:
            raise RefInUseError(f"{ref!r} is the base of {', '.join(over)}: drop those first")
        if ref not in self.graph.refs(tenant, repo) and self.show(tenant, repo, ref) is None:
            return 0 if scope_of(tenant, repo, ref) in self.graph.dropped_refs(tenant) else None
        return self._drop(tenant, repo, ref)

    def drop_repo(self, tenant: str, repo: str) -> dict[str, int]:
        """Every ref of a repository dropped (overlays first, each fenced): ref -> symbols
        removed; empty when the repository holds nothing."""
        overlays = [o.ref for o in self.graph.overlays(tenant, repo)]
        branches = [r for r in self.graph.refs(tenant, repo) if r not in overlays]
        # An overlay over an overlay goes before its base: longest chains first.
        overlays.sort(key=lambda r: -len(self.graph.overlay_chain(tenant, repo, r)))
        return {ref: self._drop(tenant, repo, ref) for ref in [*overlays, *branches]}

    def _drop(self, tenant: str, repo: str, ref: str) -> int:
        # Tombstones first: a delta still in flight (the topic, a sink's retry, the outbox's
        # replay after a restart) is then stale in both stores instead of bringing it back.
        dropped_at = time.time_ns()
        self.graph.fence_dropped_ref(tenant, repo, ref, dropped_at)
        self.vectors.fence_dropped_ref(tenant, repo, ref, dropped_at)
        self.vectors.delete_ref(tenant, repo, ref)
        if self.mirror is not None:
            self.mirror.forget(tenant, scope_of(tenant, repo, ref))
        removed = self.graph.delete_ref(tenant, repo, ref)
        self.graph.forget_overlay(tenant, repo, ref)
        log.info("event=overlay_dropped tenant=%s repo=%s ref=%s symbols=%d", tenant, repo, ref,
                 removed)  # fmt: skip
        return removed

    def expire(self, tenant: str, now: float | None = None) -> tuple[list[str], list[OverlayInfo]]:
        """Drop the agent workspaces idle for longer than the TTL and the overlays closed
        (branch deleted or merged) longer than the grace: (dropped, the rest)."""
        now = time.time() if now is None else now
        dropped: list[str] = []
        kept: list[OverlayInfo] = []
        for overlay in self.graph.overlays(tenant):
            last = overlay.last_write_at or overlay.created_at
            idle = overlay.kind == "workspace" and now - last > self.ttl_s
            closed = overlay.closed_at is not None and now - overlay.closed_at > self.grace_s
            if idle or closed:
                self._drop(tenant, overlay.repo, overlay.ref)  # listed just now: no re-check
                dropped.append(f"{overlay.repo}@{overlay.ref}")
            else:
                kept.append(overlay)
        return dropped, kept
