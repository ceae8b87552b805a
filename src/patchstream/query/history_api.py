"""Who changed a file or a definition, when and why (``GET /v1/history``; the CLI's
``patchstream query history`` and the MCP tool ``history``).

The target is a path when the view holds that file or any commit touched it; otherwise a
symbol's name (``area``, ``Square.area``), answered with the commits whose hunks fell in a
definition of that name in each file that defines it. Only commits reachable from the view's
head are seen. Each commit carries the issues and pull/merge requests it names or was merged
by (``linked``); a file's answer adds the review comments on it (``discussions``).

Routes resolve annotations at runtime (FastAPI reads the local ``Tenant``): no postponed
annotations in this module.
"""

import asyncio
from collections.abc import Callable
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query

from patchstream.errors import ContractError
from patchstream.query.service import QueryService
from patchstream.schemas.events import NAME_PATTERN, VIEW_REF_PATTERN
from patchstream.schemas.paths import validate_repo_path
from patchstream.stores.graph.base import CommitHit

_PRINTABLE = r"^[^\x00-\x1f\x7f]+$"
MAX_SYMBOL_FILES = 5  # definitions of one name whose files' histories are read


def history_of(
    service: QueryService, tenant: str, repo: str, ref: str, target: str, limit: int
) -> dict[str, Any]:
    graph = service.graph
    commits: list[CommitHit] = []
    kind = "none"
    symbols: list[str] = []
    notes: list[dict[str, Any]] = []
    path = _as_path(target)
    if path is not None:
        commits = graph.history(tenant, repo, ref, path=path, limit=limit)
        notes = graph.path_discussions(tenant, repo, ref, [path], limit).get(path, [])
        held = graph.file_version(tenant, repo, ref, path) is not None
        kind = "file" if commits or held or notes else "none"
    if kind == "none":
        found = service.symbols_named(tenant, target, repo, ref)[:MAX_SYMBOL_FILES]
        by_sha: dict[str, CommitHit] = {}
        for symbol in found:
            symbols.append(symbol.id)
            for hit in graph.history(tenant, repo, ref, path=symbol.path, symbol=symbol.name,
                                     limit=limit):  # fmt: skip
                held_hit = by_sha.get(hit.sha)
                by_sha[hit.sha] = hit if held_hit is None else CommitHit(
                    **{**asdict(held_hit), "files": held_hit.files + hit.files})  # fmt: skip
        commits = sorted(by_sha.values(), key=lambda h: (h.date, h.sha), reverse=True)[:limit]
        kind = "symbol" if found else "none"
    return {"repo": repo, "ref": ref, "target": target, "kind": kind, "symbols": symbols,
            "commits": [asdict(hit) for hit in commits], "discussions": notes}  # fmt: skip


def _as_path(target: str) -> str | None:
    try:
        return validate_repo_path(target)
    except ContractError:
        return None


def history_router(
    tenant_resolver: Callable[..., str], service: Callable[[], QueryService]
) -> APIRouter:
    router = APIRouter()
    Tenant = Annotated[str, Depends(tenant_resolver)]  # noqa: N806

    @router.get("/v1/history")
    async def history(
        tenant: Tenant,
        repo: Annotated[str, Query(pattern=NAME_PATTERN)],
        target: Annotated[str, Query(min_length=1, max_length=1024, pattern=_PRINTABLE)],
        ref: Annotated[str, Query(pattern=VIEW_REF_PATTERN)] = "main",
        limit: Annotated[int, Query(ge=1, le=200)] = 20,
    ) -> dict[str, Any]:
        why = await asyncio.to_thread(service().unknown, tenant, repo, ref)
        if why is not None:
            raise HTTPException(404, why)
        answer = await asyncio.to_thread(history_of, service(), tenant, repo, ref, target, limit)
        if answer["kind"] == "none":
            raise HTTPException(404, f"no file or symbol {target!r} in {repo}@{ref}")
        return answer

    return router
