"""Overlays as a user manages them: list, show, declare, drop, and the expiry of idle agent
workspaces (``/v1/overlays``; the CLI's ``patchstream workspace``).

An agent workspace is created by its first write (or declared here) and expires after
``query.workspace_ttl_s`` without writes; a branch overlay is declared over its base and
lives until it is dropped.

Routes resolve annotations at runtime (FastAPI reads the local ``Tenant``): no postponed
annotations in this module.
"""

import logging
import time
from collections.abc import Callable
from typing import Annotated, Any, Self

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field, model_validator

from patchstream.schemas.events import _NAME_PATTERN, VIEW_REF_PATTERN, check_name, view_ref
from patchstream.stores.graph.base import GraphStore
from patchstream.stores.graph.keys import scope_of
from patchstream.stores.overlays import OverlayInfo, split_workspace
from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.stores.vector.search_mirror import SearchMirror

log = logging.getLogger("patchstream.overlays")


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


class DeclareIn(BaseModel):
    repo: str = Field(pattern=_NAME_PATTERN)
    ref: str = Field(pattern=_NAME_PATTERN, description="the branch, or a workspace's base")
    workspace: str | None = Field(default=None, pattern=_NAME_PATTERN)
    base: str | None = Field(default=None, pattern=_NAME_PATTERN, description="a branch's base")

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        for name in (self.repo, self.ref, self.workspace, self.base):
            if name is not None:
                check_name(name)
        if (self.workspace is None) == (self.base is None):
            raise ValueError("name either a workspace (over ref) or a base (for the branch ref)")
        return self


def overlay_info(overlay: OverlayInfo) -> dict[str, Any]:
    return dict(overlay.__dict__)


def overlay_router(tenant_resolver: Callable[..., str], overlays: Callable[[], OverlayService]
                   ) -> APIRouter:  # fmt: skip
    router = APIRouter()
    Tenant = Annotated[str, Depends(tenant_resolver)]  # noqa: N806
    Repo = Annotated[str, Query(pattern=_NAME_PATTERN)]  # noqa: N806
    Ref = Annotated[str, Query(pattern=VIEW_REF_PATTERN)]  # noqa: N806

    @router.get("/v1/overlays")
    def listing(tenant: Tenant, repo: Annotated[str | None, Query(pattern=_NAME_PATTERN)] = None
                ) -> dict[str, Any]:  # fmt: skip
        return {"overlays": [overlay_info(o) for o in overlays().overlays(tenant, repo)]}

    @router.get("/v1/overlays/show")
    def show(tenant: Tenant, repo: Repo, ref: Ref) -> dict[str, Any]:
        found = overlays().show(tenant, repo, ref)
        if found is None:
            raise HTTPException(404, f"{ref!r} is not an overlay of {repo!r}")
        return overlay_info(found)

    @router.post("/v1/overlays", status_code=201)
    def declare(body: DeclareIn, tenant: Tenant) -> dict[str, Any]:
        ref = view_ref(body.ref, body.workspace)
        try:
            found = overlays().declare(tenant, body.repo, ref, body.base or body.ref)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from exc
        return overlay_info(found)

    @router.delete("/v1/overlays")
    def drop(tenant: Tenant, repo: Repo, ref: Ref) -> dict[str, Any]:
        service = overlays()
        already = service.show(tenant, repo, ref) is None
        removed = service.drop(tenant, repo, ref)
        if removed is None:
            raise HTTPException(404, f"{ref!r} is not an overlay of {repo!r}")
        return {"dropped": ref, "symbols": removed, "already_dropped": already}

    return router
