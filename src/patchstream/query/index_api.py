"""What a remote ``patchstream index`` reads (the client holds no store address or
credential): the files a ref's view holds with the content hash both tiers agree on, in
pages (``GET /v1/files``), and how many files of the ref both tiers have applied since a
version (``GET /v1/index/progress``). The client compares hashes itself and uploads only
what differs through the gateway's ``/v1/patches``. A progress read that finds every
expected file in the vector tier first brings the search copy up to it, so an index the
client reports complete is searchable at once (the copy otherwise trails by up to 2 s).

Routes resolve annotations at runtime (FastAPI reads the local ``Tenant``): no postponed
annotations in this module.
"""

import asyncio
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query

from patchstream.schemas.events import _NAME_PATTERN, VIEW_REF_PATTERN, check_name
from patchstream.stores.graph.base import GraphStore
from patchstream.stores.overlay_service import held_view
from patchstream.stores.overlays import split_workspace
from patchstream.stores.vector.milvus import MilvusVectorStore

MAX_PAGE = 10_000
_PATH_CURSOR = r"^[^\x00-\x1f\x7f]*$"


def page_of(held: dict[str, str | None], after: str, limit: int) -> dict[str, Any]:
    """The files after ``after`` in path order, at most ``limit``; ``next`` resumes."""
    paths = sorted(path for path in held if path > after)
    page = paths[:limit]
    return {
        "files": [{"path": path, "hash": held[path]} for path in page],
        "next": page[-1] if len(paths) > limit else None,
    }


def index_router(
    tenant_resolver: Callable[..., str],
    stores: Callable[[], tuple[GraphStore, MilvusVectorStore]],
    settle: Callable[[str], None] | None = None,
) -> APIRouter:
    """``settle(tenant)`` brings the tenant's search copy up to Milvus (None: no copy)."""
    router = APIRouter()
    Tenant = Annotated[str, Depends(tenant_resolver)]  # noqa: N806
    Repo = Annotated[str, Query(pattern=_NAME_PATTERN)]  # noqa: N806
    Ref = Annotated[str, Query(pattern=VIEW_REF_PATTERN)]  # noqa: N806

    def checked(repo: str, ref: str) -> None:
        try:
            check_name(repo)
            branch, workspace = split_workspace(ref)
            check_name(branch)
            if workspace is not None:
                check_name(workspace)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from exc

    @router.get("/v1/files")
    async def files(
        tenant: Tenant,
        repo: Repo,
        ref: Ref = "main",
        after: Annotated[str, Query(max_length=1024, pattern=_PATH_CURSOR)] = "",
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 5000,
    ) -> dict[str, Any]:
        checked(repo, ref)
        graph, vectors = stores()
        held = await asyncio.to_thread(held_view, graph, vectors, tenant, repo, ref)
        return page_of(held, after, limit)

    @router.get("/v1/index/progress")
    async def progress(
        tenant: Tenant,
        repo: Repo,
        since: Annotated[int, Query(ge=0, le=2**63 - 1)],
        ref: Ref = "main",
        expect: Annotated[int | None, Query(ge=0, le=2**31)] = None,
    ) -> dict[str, Any]:
        checked(repo, ref)
        graph, vectors = stores()
        applied = await asyncio.gather(
            asyncio.to_thread(graph.count_applied, tenant, repo, ref, since),
            asyncio.to_thread(vectors.count_applied, tenant, repo, ref, since),
        )
        if settle is not None and expect is not None and min(applied) >= expect:
            await asyncio.to_thread(settle, tenant)  # read after the count: holds what it saw
        return {"tenant": tenant, "graph_applied": applied[0], "vectors_applied": applied[1]}

    return router
