"""``POST /v1/discussions``: an export of issues and pull/merge requests, read by the gateway.

``patchstream import discussions`` on a team server sends the export's lines here in
batches; the gateway reads them with the same reader as a local import, so every page's
version is the platform's ``updated_at`` (a re-import of an old export cannot overwrite a
newer edit a webhook brought) and the page text is the gateway's rendering, never the
client's. The key decides the tenant; the pages go to the repository's ``ref``.

(No ``from __future__ import annotations``: FastAPI reads the route's annotations at
definition, and the tenant dependency is a local name.)
"""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel, Field, ValidationError

from patchstream.errors import ContractError
from patchstream.producers.discussion_import import read_export
from patchstream.producers.discussions import page_events
from patchstream.schemas.events import PatchEvent, refuse_bad_names
from patchstream.schemas.read_tokens import make_read_token

MAX_LINES = 1000  # per request; a larger export is several requests


class DiscussionImport(BaseModel):
    repo: str = Field(max_length=200)
    ref: str = Field(default="main", max_length=200, description="the default branch")
    lines: list[str] = Field(min_length=1, max_length=MAX_LINES,
                             description="JSON Lines of GitHub or GitLab REST objects")  # fmt: skip
    first_line: int = Field(
        default=1, ge=1, le=10**9, description="the number of lines[0] in the export"
    )
    pull_numbers: list[Annotated[int, Field(ge=1, lt=1_000_000_000)]] = Field(
        default=[], max_length=100_000,
        description="GitHub PR numbers of the whole export: a comment on one is a PR's",
    )  # fmt: skip


def add_import_route(
    app: FastAPI,
    tenant: Callable[..., str],
    publish: Callable[[list[PatchEvent]], Awaitable[None]],
) -> None:
    Tenant = Annotated[str, Depends(tenant)]  # noqa: N806

    @app.post("/v1/discussions", status_code=202)
    async def import_discussions(body: DiscussionImport, key_tenant: Tenant) -> dict[str, Any]:
        try:
            refuse_bad_names(repo=body.repo, ref=body.ref)
        except ContractError as exc:
            raise HTTPException(422, str(exc)) from exc
        plan = read_export(body.lines, body.pull_numbers)
        try:
            events = page_events(key_tenant, body.repo, body.ref, plan.pages, "cli")
        except ValidationError as exc:  # a page the reader made, refused as an event
            raise HTTPException(422, f"page: {exc.errors()[0]['msg']}") from exc
        if events:
            await publish(events)
        shift = body.first_line - 1
        return {
            "pages": len(events), "threads": plan.threads, "notes": plan.notes,
            "skipped": plan.skipped, "failed": plan.failed,
            "errors": [{"line": line + shift, "reason": reason} for line, reason in plan.errors],
            "read_token": make_read_token(events) if events else None, "tenant": key_tenant,
        }  # fmt: skip
