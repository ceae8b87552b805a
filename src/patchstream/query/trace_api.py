"""What became of a trace (``POST /v1/traces/status``): for each caller file, the last trace
event the graph applied and how many of its calls it kept, found stale or did not know. The
CLI's ``patchstream trace`` waits on it.

Routes resolve annotations at runtime (FastAPI reads the local ``Tenant``): no postponed
annotations in this module.
"""

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, Self

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field, field_validator, model_validator

from patchstream.errors import ContractError
from patchstream.schemas.events import NAME_PATTERN, check_name
from patchstream.schemas.paths import validate_repo_path
from patchstream.stores.graph.base import GraphStore

MAX_PATHS = 10_000


class TraceStatusIn(BaseModel):
    repo: str = Field(pattern=NAME_PATTERN)
    ref: str = Field(default="main", pattern=NAME_PATTERN)
    paths: list[str] = Field(min_length=1, max_length=MAX_PATHS)

    @field_validator("paths")
    @classmethod
    def _safe_paths(cls, value: list[str]) -> list[str]:
        try:
            return [validate_repo_path(path) for path in value]
        except ContractError as exc:
            raise ValueError(str(exc)) from exc

    @model_validator(mode="after")
    def _names(self) -> Self:
        check_name(self.repo)
        check_name(self.ref)
        return self


def trace_router(tenant_resolver: Callable[..., str], graph: Callable[[], GraphStore]
                 ) -> APIRouter:  # fmt: skip
    router = APIRouter()
    Tenant = Annotated[str, Depends(tenant_resolver)]  # noqa: N806

    @router.post("/v1/traces/status")
    async def trace_status(body: TraceStatusIn, tenant: Tenant) -> dict[str, Any]:
        marks = await asyncio.to_thread(
            graph().trace_marks, tenant, body.repo, body.ref, body.paths
        )
        return {"files": {path: {"event_id": m.event_id, "kept": m.kept, "stale": m.stale,
                                 "unknown": m.unknown} for path, m in marks.items()}}  # fmt: skip

    return router
