"""Overlays as a user manages them: list, show, declare, drop, and the expiry of idle agent
workspaces (``/v1/overlays``; the CLI's ``patchstream workspace``); and dropping any ref of a
repository, or the whole repository (``/v1/refs``, ``/v1/repos``; ``patchstream repo drop``).

An agent workspace is created by its first write (or declared here) and expires after
``query.workspace_ttl_s`` without writes; a branch overlay is declared over its base and
lives until it is dropped.

Routes resolve annotations at runtime (FastAPI reads the local ``Tenant``): no postponed
annotations in this module.
"""

import logging
from collections.abc import Callable
from typing import Annotated, Any, Self

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field, model_validator

from patchstream.errors import ContractError
from patchstream.schemas.events import _NAME_PATTERN, VIEW_REF_PATTERN, check_name, view_ref
from patchstream.stores.overlay_service import OverlayService, RefInUseError, check_branch_base
from patchstream.stores.overlays import OverlayInfo

log = logging.getLogger("patchstream.overlays")


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


def overlay_router(tenant_resolver: Callable[..., str], overlays: Callable[[], OverlayService],
                   admin: Callable[..., None] = lambda: None) -> APIRouter:  # fmt: skip
    """``admin``: the dependency that refuses a key without the admin role (dropping a whole
    ref or repository is an operator's act; an agent drops its own workspace)."""
    router = APIRouter()
    Tenant = Annotated[str, Depends(tenant_resolver)]  # noqa: N806
    Admin = Annotated[None, Depends(admin)]  # noqa: N806
    Ref = Annotated[str, Query(pattern=VIEW_REF_PATTERN)]  # noqa: N806

    def checked_repo(repo: Annotated[str, Query(pattern=_NAME_PATTERN)]) -> str:
        """The pattern, and no ``..`` or empty component (``a/../b`` would alias a name)."""
        try:
            return check_name(repo)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from exc

    Repo = Annotated[str, Depends(checked_repo)]  # noqa: N806

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
            if body.base is not None:  # a branch: over an indexed branch, never over itself
                check_branch_base(overlays().graph, tenant, body.repo, ref, body.base)
            found = overlays().declare(tenant, body.repo, ref, body.base or body.ref)
        except (ValueError, ContractError) as exc:
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

    @router.delete("/v1/refs")
    def drop_ref(tenant: Tenant, repo: Repo, ref: Ref, _admin: Admin) -> dict[str, Any]:
        """Drop one ref of a repository (a branch or an overlay), fenced: no replay of an
        older event brings it back; a later write makes it again."""
        try:
            removed = overlays().drop_ref(tenant, repo, ref)
        except RefInUseError as exc:
            raise HTTPException(409, str(exc)) from exc
        if removed is None:
            raise HTTPException(404, f"{repo!r} has no ref {ref!r}")
        log.info("event=ref_dropped tenant=%s repo=%s ref=%s", tenant, repo, ref)
        return {"repo": repo, "dropped": ref, "symbols": removed}

    @router.delete("/v1/repos")
    def drop_repo(tenant: Tenant, repo: Repo, _admin: Admin) -> dict[str, Any]:
        """Drop every ref of a repository, each fenced as ``/v1/refs`` does."""
        dropped = overlays().drop_repo(tenant, repo)
        if not dropped:
            raise HTTPException(404, f"no repository {repo!r} is indexed")
        log.info("event=repo_dropped tenant=%s repo=%s refs=%d", tenant, repo, len(dropped))
        return {"repo": repo, "refs": dropped, "symbols": sum(dropped.values())}

    return router
