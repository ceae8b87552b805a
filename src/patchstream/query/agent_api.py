"""HTTP routes of the agent state layer: runs (``/v1/runs``) and sessions (``/v1/sessions``).

A stale ``state_version`` is 409 ``version_conflict`` with the current version; an event the
runtime does not allow in the run's status is 409 ``illegal_transition`` with the allowed
ones; a run or session of another tenant is 404, exactly as one that does not exist.
"""

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Query
from pydantic import BaseModel, Field

from patchstream.agent import sessions
from patchstream.agent.runs import EventIn, Run, RunCreate, RunRefused, RunStatus
from patchstream.agent.service import AgentStateService, NotFound, VersionConflict
from patchstream.agent.sessions import Diff, ScratchItem, Session, SessionPatch, ToolOutput, Turn
from patchstream.schemas.events import ID_PATTERN

RunId = Annotated[str, Path(pattern=ID_PATTERN)]
SessionId = Annotated[str, Path(pattern=ID_PATTERN)]
Actor = Annotated[str | None, Field(default=None, pattern=ID_PATTERN)]


class EventsIn(BaseModel):
    state_version: int = Field(ge=1, description="the version the writer read")
    events: list[EventIn] = Field(min_length=1, max_length=100)
    actor: Actor = None


class TransitionIn(BaseModel):
    state_version: int = Field(ge=1)
    to: RunStatus
    reason: str | None = Field(default=None, max_length=4000)
    approval_id: str | None = Field(default=None, pattern=ID_PATTERN)
    actor: Actor = None


class CreateIn(RunCreate):
    actor: Actor = None


class NoteIn(BaseModel):
    item_id: str | None = Field(default=None, pattern=ID_PATTERN)
    kind: str = Field(default="note", pattern=r"^(subgoal|plan|note)$")
    text: str = Field(min_length=1, max_length=2000)
    done: bool = False


@contextmanager
def _http_errors() -> Iterator[None]:
    try:
        yield
    except NotFound as exc:
        raise HTTPException(404, str(exc)) from exc
    except VersionConflict as exc:
        raise HTTPException(
            409, {"error": "version_conflict", "message": str(exc), "current_version": exc.current}
        ) from exc
    except RunRefused as exc:
        raise HTTPException(
            409,
            {
                "error": "illegal_transition",
                "message": str(exc),
                "status": exc.status.value,
                "allowed": exc.allowed,
            },
        ) from exc


async def call_mapped(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a blocking state call in a thread, its typed errors as HTTP statuses."""
    with _http_errors():
        return await asyncio.to_thread(fn, *args)


def agent_router(
    tenant_resolver: Callable[..., str],
    agent: Callable[[], AgentStateService],
    published: Callable[[str], None],
    context: Callable[[str, str, int, Run], Awaitable[dict[str, Any]]],
) -> APIRouter:
    """``published(tenant)`` has the tenant's new run events sent to the bus (in the
    background: the store is canonical);
    ``context(tenant, query, budget, run)`` projects fresh context for a resume."""
    router = APIRouter()
    Tenant = Annotated[str, Depends(tenant_resolver)]  # noqa: N806

    call = call_mapped

    async def written(tenant: str, result: Any) -> Any:
        published(tenant)
        return result

    @router.post("/v1/runs", status_code=201)
    async def create_run(body: CreateIn, tenant: Tenant) -> Run:
        spec = RunCreate.model_validate(body.model_dump(exclude={"actor"}))
        run = await call(agent().create_run, tenant, spec, body.actor)
        if run.session_id:

            def link(s: Session) -> Session:
                return sessions.patch(s, SessionPatch(active_run=run.run_id, repo=run.repo))

            await call(agent().update_session, tenant, run.session_id, link)
        return await written(tenant, run)  # type: ignore[no-any-return]

    @router.get("/v1/runs")
    async def list_runs(
        tenant: Tenant,
        status: RunStatus | None = None,
        session: Annotated[str | None, Query(pattern=ID_PATTERN)] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
    ) -> dict[str, Any]:
        found = await call(
            agent().list_runs, tenant, status.value if status else None, session, limit
        )
        return {"runs": found}

    @router.get("/v1/runs/{run_id}")
    async def get_run(run_id: RunId, tenant: Tenant) -> Run:
        return await call(agent().get_run, tenant, run_id)  # type: ignore[no-any-return]

    @router.post("/v1/runs/{run_id}/events")
    async def append(run_id: RunId, body: EventsIn, tenant: Tenant) -> Run:
        run = await call(
            agent().append, tenant, run_id, body.state_version, body.events, body.actor
        )
        return await written(tenant, run)  # type: ignore[no-any-return]

    @router.post("/v1/runs/{run_id}/transition")
    async def transition(run_id: RunId, body: TransitionIn, tenant: Tenant) -> Run:
        run = await call(
            agent().transition,
            tenant,
            run_id,
            body.state_version,
            body.to,
            body.reason,
            body.actor,
            body.approval_id,
        )
        return await written(tenant, run)  # type: ignore[no-any-return]

    @router.get("/v1/runs/{run_id}/events")
    async def events(
        run_id: RunId,
        tenant: Tenant,
        after: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
    ) -> dict[str, Any]:
        found = await call(agent().events, tenant, run_id, after, limit)
        return {"events": [e.model_dump(mode="json", exclude_none=True) for e in found]}

    @router.get("/v1/runs/{run_id}/resume")
    async def resume(
        run_id: RunId,
        tenant: Tenant,
        budget_tokens: Annotated[int, Query(ge=64, le=200_000)] = 4000,
    ) -> dict[str, Any]:
        state = await call(agent().resume, tenant, run_id)
        run: Run = state.run
        symbols = sorted({s for change in state.changes for s in change.changed})
        query = " ".join(p for p in (run.goal, run.current_step or "") if p)
        return {
            "run": run.model_dump(mode="json"),
            "uncertain_actions": [a.model_dump(mode="json") for a in state.uncertain],
            "checkpoint": run.checkpoint.model_dump(mode="json") if run.checkpoint else None,
            "code_changes": {
                "since": state.since,
                "files": [
                    {**asdict(c), "applied_at": c.applied_at.timestamp()} for c in state.changes
                ],
                "symbols": symbols,
            },
            "context": await context(tenant, query, budget_tokens, run),
            "note": "Resume from this state, never from a transcript; check every uncertain "
            "action's effect before repeating it.",
        }

    # -- sessions ---------------------------------------------------------------------------

    async def update(tenant: str, session_id: str, change: Callable[[Session], Session]) -> Session:
        return await call(agent().update_session, tenant, session_id, change)  # type: ignore[no-any-return]

    @router.get("/v1/sessions/{session_id}")
    async def get_session(session_id: SessionId, tenant: Tenant) -> Session:
        return await call(agent().get_session, tenant, session_id)  # type: ignore[no-any-return]

    @router.patch("/v1/sessions/{session_id}")
    async def patch_session(session_id: SessionId, body: SessionPatch, tenant: Tenant) -> Session:
        return await update(tenant, session_id, lambda s: sessions.patch(s, body))

    @router.post("/v1/sessions/{session_id}/turns")
    async def add_turn(session_id: SessionId, body: Turn, tenant: Tenant) -> Session:
        counter = agent().count_tokens
        return await update(tenant, session_id, lambda s: sessions.add_turn(s, body, counter))

    @router.post("/v1/sessions/{session_id}/scratchpad")
    async def add_note(session_id: SessionId, body: NoteIn, tenant: Tenant) -> Session:
        item = ScratchItem(
            item_id=body.item_id or f"item-{uuid.uuid4().hex[:10]}",
            kind=body.kind,
            text=body.text,
            done=body.done,
            at=agent().clock(),
        )
        return await update(tenant, session_id, lambda s: sessions.note(s, item))

    @router.post("/v1/sessions/{session_id}/diffs")
    async def add_diff(session_id: SessionId, body: Diff, tenant: Tenant) -> Session:
        diff = body.model_copy(update={"at": agent().clock()})
        return await update(tenant, session_id, lambda s: sessions.add_diff(s, diff))

    @router.post("/v1/sessions/{session_id}/tool-output")
    async def add_output(session_id: SessionId, body: ToolOutput, tenant: Tenant) -> Session:
        output = body.model_copy(update={"at": agent().clock()})
        return await update(tenant, session_id, lambda s: sessions.add_tool_output(s, output))

    return router
