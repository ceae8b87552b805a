"""``patchstream import discussions``: a project's existing issues and pull/merge requests,
from a JSON Lines export, as the pages the webhooks write for new ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from patchstream.config.settings import get_settings
from patchstream.logs import configure_logging

if TYPE_CHECKING:
    from patchstream.schemas.events import PatchEvent

BATCH = 500  # events per publish (a page is at most ~40 kB: well inside a request's limit)


@click.group("import")
def import_group() -> None:
    """Bring what webhooks did not see into the index."""


@import_group.command("discussions")
@click.argument("export", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--repo", required=True, help="The repository the issues belong to.")
@click.option("--tenant", default="default", show_default=True)
@click.option(
    "--ref",
    default="main",
    show_default=True,
    help="The repository's default branch (discussions are the repository's).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def discussions(export: Path, repo: str, tenant: str, ref: str, as_json: bool) -> None:
    """Import issues, pull/merge requests, reviews and comments from EXPORT, a JSON Lines file
    of GitHub or GitLab REST objects (one per line, as `gh api --paginate` or the GitLab API
    list them). Bad lines are reported with their number and skipped."""
    from patchstream.producers.discussion_import import read_export
    from patchstream.producers.discussions import page_events
    from patchstream.schemas.events import refuse_bad_names

    refuse_bad_names(repo=repo, tenant=tenant, ref=ref)
    configure_logging("WARNING" if as_json else None)
    settings = get_settings()
    remote = bool(settings.gateway.url)
    if remote and tenant != "default":
        raise click.UsageError("--tenant is the server's to decide: a client writes to its API "
                               "key's tenant")  # fmt: skip
    with export.open("rb") as handle:
        plan = read_export(handle)
    if remote:  # the gateway reads the export itself: its versions, its rendering
        summary = _import_remote(export, repo, ref, sorted(plan.pulls))
    else:
        events = page_events(tenant, repo, ref, plan.pages, "cli", batch_id=None)
        summary = {
            "pages": len(events), "threads": plan.threads, "notes": plan.notes,
            "skipped": plan.skipped, "failed": plan.failed,
            "errors": [{"line": n, "reason": r} for n, r in plan.errors],
            "read_token": _publish_local(events),
        }  # fmt: skip
    summary = {"repo": repo, "ref": ref, "tenant": None if remote else tenant, **summary}
    if as_json:
        click.echo(json.dumps(summary))
    else:
        click.echo(f"imported {summary['pages']} pages into {repo}@{ref}: "
                   f"{summary['threads']} threads, {summary['notes']} comments and reviews; "
                   f"{summary['skipped']} records of no discussion skipped, "
                   f"{summary['failed']} refused")  # fmt: skip
        for error in summary["errors"][:20]:
            click.echo(f"  line {error['line']}: {error['reason']}", err=True)
    if summary["failed"] and not summary["pages"]:
        raise SystemExit(1)


def _publish_local(events: list[PatchEvent]) -> str | None:
    import asyncio

    from patchstream.producers.outbox import Outbox, outbox_path, publish_durably
    from patchstream.schemas.read_tokens import make_read_token
    from patchstream.streams.producer import EventPublisher

    if not events:
        return None

    async def send() -> None:
        settings = get_settings()
        outbox = Outbox(outbox_path(settings)) if settings.gateway.outbox else None
        try:
            async with EventPublisher(settings.kafka) as publisher:
                for at in range(0, len(events), BATCH):
                    await publish_durably(outbox, events[at : at + BATCH], publisher.publish,
                                          durable_broker=settings.kafka.durable)  # fmt: skip
        finally:
            if outbox is not None:
                outbox.close()

    asyncio.run(send())
    return make_read_token(events) if len(events) <= 1000 else None  # a token's limit


def _import_remote(export: Path, repo: str, ref: str, pulls: list[int]) -> dict[str, Any]:
    """The export's lines to the gateway in batches (by count and by bytes); the summary
    is the gateway's, summed. A line over the reader's limit is refused here, unsent."""
    from patchstream.client import PatchClient
    from patchstream.producers.discussion_import import MAX_ERRORS_KEPT, MAX_LINE_BYTES

    settings = get_settings().gateway
    total: dict[str, Any] = {"pages": 0, "threads": 0, "notes": 0, "skipped": 0, "failed": 0,
                             "errors": [], "read_token": None}  # fmt: skip
    budget = max(1, settings.max_request_bytes // 2)  # JSON escaping may double a line

    def count(answer: dict[str, Any]) -> None:
        for name in ("pages", "threads", "notes", "skipped", "failed"):
            total[name] += int(answer.get(name) or 0)
        total["errors"] = (total["errors"] + list(answer.get("errors") or []))[:MAX_ERRORS_KEPT]
        total["read_token"] = answer.get("read_token") or total["read_token"]

    with PatchClient(settings.url, settings.api_key.get_secret_value()) as client:
        batch: list[str] = []
        first, size = 1, 0
        with export.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                line = raw.decode("utf-8", errors="replace")
                if len(raw) > MAX_LINE_BYTES:
                    line = ""  # keeps the numbering; reported below
                    count({"failed": 1, "errors": [{"line": number, "reason":
                           f"line is over {MAX_LINE_BYTES} bytes"}]})  # fmt: skip
                if batch and (len(batch) >= BATCH or size + len(line) > budget):
                    count(client.import_discussions(repo, ref, batch, first, pulls))
                    batch, first, size = [], number, 0
                batch.append(line)
                size += len(line)
        if any(line.strip() for line in batch):
            count(client.import_discussions(repo, ref, batch, first, pulls))
    return total
