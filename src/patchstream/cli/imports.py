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
    events = page_events(tenant, repo, ref, plan.pages, "cli", batch_id=None)
    token = _publish_remote(events) if remote else _publish_local(events)
    summary: dict[str, Any] = {
        "repo": repo, "ref": ref, "tenant": None if remote else tenant, "pages": len(events),
        "threads": plan.threads, "notes": plan.notes, "skipped": plan.skipped,
        "failed": plan.failed, "errors": [{"line": n, "reason": r} for n, r in plan.errors],
        "read_token": token,
    }  # fmt: skip
    if as_json:
        click.echo(json.dumps(summary))
    else:
        click.echo(f"imported {len(events)} pages into {repo}@{ref}: {plan.threads} threads, "
                   f"{plan.notes} comments and reviews; {plan.skipped} records of no "
                   f"discussion skipped, {plan.failed} refused")  # fmt: skip
        for line, reason in plan.errors[:20]:
            click.echo(f"  line {line}: {reason}", err=True)
    if plan.failed and not events:
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


def _publish_remote(events: list[PatchEvent]) -> str | None:
    """Through the gateway: the key's tenant, and the gateway's clock for versions."""
    from patchstream.client import PatchClient

    settings = get_settings().gateway
    token = None
    with PatchClient(settings.url, settings.api_key.get_secret_value()) as client:
        for at in range(0, len(events), BATCH):
            writes = [{"repo": e.repo, "ref": e.ref, "path": e.path, "op": e.op,
                       "content": e.content} for e in events[at : at + BATCH]]  # fmt: skip
            token = client.write(writes, source="snapshot")["read_token"]
    return token
