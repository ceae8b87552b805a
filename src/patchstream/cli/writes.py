"""``patchstream index`` and ``patchstream emit``: what a user publishes."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from patchstream.config.settings import get_settings
from patchstream.logs import configure_logging

if TYPE_CHECKING:
    from patchstream.schemas.events import WithheldContent


@click.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path), default=".")
@click.option("--repo", default=None, help="Repository name (default: the directory's name).")
@click.option("--tenant", default="default", show_default=True)
@click.option("--ref", default="main", show_default=True, help="Branch.")
@click.option(
    "--timeout",
    "timeout_s",
    default=3600.0,
    show_default=True,
    help="Seconds to wait for both tiers.",
)
@click.option("--commits", type=int, default=None,
              help="Commits reachable from HEAD to index, newest first (0: none; default "
              "PATCHSTREAM_HISTORY__MAX_COMMITS, 100000).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--base", default=None,
              help="Index REF as an overlay of this branch: store only what differs.")  # fmt: skip
def index(
    path: Path, repo: str | None, tenant: str, ref: str, timeout_s: float, commits: int | None,
    as_json: bool, base: str | None,
) -> None:  # fmt: skip
    """Index a directory and wait until the graph and the vectors have applied it.

    With PATCHSTREAM_REMOTE=1 it runs as a client of the server at PATCHSTREAM_GATEWAY__URL
    and PATCHSTREAM_QUERY__URL: it uploads only the files whose content the server lacks,
    and the key's tenant is used."""
    import asyncio

    from patchstream.errors import ConfigError
    from patchstream.indexing.remote import index_remote
    from patchstream.indexing.run import index_directory
    from patchstream.producers.checkouts import remember_checkout
    from patchstream.schemas.events import refuse_bad_names

    root = path.resolve()
    refuse_bad_names(repo=repo or root.name, tenant=tenant, ref=ref, base=base)
    configure_logging("WARNING" if as_json else None)
    settings = get_settings()
    commits = settings.history.max_commits if commits is None else commits
    if settings.remote:
        if not (settings.gateway.url and settings.query.url):
            raise click.UsageError("PATCHSTREAM_REMOTE needs PATCHSTREAM_GATEWAY__URL and "
                                   "PATCHSTREAM_QUERY__URL")  # fmt: skip
        if tenant != "default":
            raise click.UsageError("--tenant: a server's API key decides the tenant")
        summary = index_remote(settings, root, repo=repo or root.name, ref=ref,
                               timeout_s=timeout_s, progress=not as_json, commits=commits,
                               base=base)  # fmt: skip
    else:
        summary = asyncio.run(
            index_directory(
                settings, root, repo=repo or root.name, tenant=tenant, ref=ref,
                timeout_s=timeout_s, progress=not as_json, commits=commits, base=base,
            )
        )  # fmt: skip
    try:  # so that an agent's hook publishes its edits here (`hook claude-code`)
        remember_checkout(root, summary.repo, summary.ref)
    except (OSError, ConfigError) as exc:
        click.echo(f"warning: the checkout was not recorded for agent hooks: {exc}", err=True)
    if as_json:
        click.echo(json.dumps(summary.as_dict()))
    else:
        # A server's stores are not this client's to count: say where the counts are.
        counts = (" (symbols and chunks: `patchstream query freshness REPO`)" if settings.remote
                  else f" (counts unavailable: {summary.counts_unavailable})"
                  if summary.counts_unavailable
                  else f" symbols={summary.symbols} edges={summary.edges} "
                  f"references={summary.references} chunks_embedded={summary.chunks_embedded} "
                  f"chunks_reused={summary.chunks_reused}")  # fmt: skip
        click.echo(
            f"indexed {summary.repo}@{summary.ref} for tenant {summary.tenant}: "
            f"files={summary.files_scanned} published={summary.published} "
            f"unchanged={summary.unchanged} deleted={summary.deleted} commits={summary.commits}"
            f"{counts} seconds={summary.seconds}"
        )
        _say_skipped(summary.skipped, summary.withheld)
        if summary.unparsed:
            from patchstream.cli.query import unparsed_words

            click.echo(unparsed_words(summary.unparsed))
        for refused in summary.refused:
            click.echo(f"  refused {refused['path']!r} by the server: {refused['reason']}",
                       err=True)  # fmt: skip
    if not summary.complete:
        click.echo(
            f"timed out: graph applied {summary.graph_applied}, vectors applied "
            f"{summary.vectors_applied} of {summary.published}", err=True,
        )  # fmt: skip
        sys.exit(1)


_WITHHELD_LINES = 50  # named one by one up to this; --json lists every one


def _say_skipped(skipped: dict[str, int], withheld: list[dict[str, str]]) -> None:
    """Each withheld file by name and why; the files not indexed, counted by reason."""
    if skipped:
        counts = " ".join(f"{reason}={count}" for reason, count in sorted(skipped.items()))
        click.echo(f"skipped: {counts}")
    for file in withheld[:_WITHHELD_LINES]:
        path = file["path"] if file["path"].isprintable() else repr(file["path"])
        click.echo(f"  withheld {path}: {file['detail']} (indexed as its name, flagged "
                   f"{file['reason']})")  # fmt: skip
    if len(withheld) > _WITHHELD_LINES:
        click.echo(f"  ... and {len(withheld) - _WITHHELD_LINES} more withheld (--json lists "
                   "them)")  # fmt: skip


@click.command()
@click.option("--repo", required=True)
@click.option("--path", "file_path", required=True, help="Path inside the repository.")
@click.option("--file", "source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the content from stdin.")
@click.option("--delete", "is_delete", is_flag=True, help="Publish a delete.")
@click.option("--tenant", default="default", show_default=True)
@click.option("--ref", default="main", show_default=True)
@click.option(
    "--workspace",
    default=None,
    help="Write into the agent workspace REF~WORKSPACE (made by its first write).",
)
@click.option("--session", default=None, help="Agent session id.")
@click.option("--actor", default=None)
def emit(
    repo: str, file_path: str, source: Path | None, from_stdin: bool, is_delete: bool,
    tenant: str, ref: str, workspace: str | None, session: str | None, actor: str | None,
) -> None:  # fmt: skip
    """Publish one agent write (or delete) as a patch event."""
    import asyncio

    from patchstream.producers.outbox import Outbox, outbox_path, publish_durably
    from patchstream.schemas.events import PatchEvent, file_key
    from patchstream.streams.producer import EventPublisher

    if sum([source is not None, from_stdin, is_delete]) != 1:
        raise click.UsageError("give exactly one of --file, --stdin or --delete")
    content, withheld = _content_to_publish(file_path, source, from_stdin,
                                            get_settings().parsing.max_file_bytes)  # fmt: skip
    event = PatchEvent(
        tenant=tenant, repo=repo, ref=ref, path=file_path,
        op="delete" if is_delete else "upsert", content=content, withheld=withheld,
        version=time.time_ns(), source="cli", actor=actor, session_id=session,
        workspace=workspace,
    )  # fmt: skip

    async def send() -> None:
        # On disk first, as `index` and the gateway publish: Tansu keeps its log in memory, so
        # a write acknowledged by the broker alone was lost with a broker restart.
        settings = get_settings()
        outbox = Outbox(outbox_path(settings)) if settings.gateway.outbox else None
        try:
            async with EventPublisher(settings.kafka) as publisher:
                await publish_durably(outbox, [event], publisher.publish,
                                      durable_broker=settings.kafka.durable)  # fmt: skip
        finally:
            if outbox is not None:
                outbox.close()

    from patchstream.schemas.read_tokens import make_read_token

    gateway_settings = get_settings().gateway
    if gateway_settings.url:  # through the gateway when one is configured
        from patchstream.client import PatchClient

        if tenant != "default":
            raise click.UsageError("--tenant is the server's to decide: a client writes to its "
                                   "API key's tenant")  # fmt: skip

        with PatchClient(gateway_settings.url, gateway_settings.api_key.get_secret_value()) as c:
            write: dict[str, Any] = {"repo": repo, "ref": ref, "path": file_path, "op": event.op,
                     "content": content, "session_id": session, "actor": actor,
                     "workspace": workspace}  # fmt: skip
            if withheld is not None:
                write["withheld"] = withheld.model_dump()
            receipt = c.write([write])
        used = str(receipt.get("tenant") or tenant)  # the key's tenant, as the server says
        click.echo(json.dumps({"event_id": receipt["event_ids"][0], "tenant": used,
                               "key": file_key(used, repo, ref, file_path, workspace),
                               "read_token": receipt["read_token"]}))  # fmt: skip
        return
    asyncio.run(send())
    click.echo(
        json.dumps(
            {
                "event_id": event.event_id,
                "tenant": event.tenant,
                "key": event.key,
                "version": event.version,
                "read_token": make_read_token([event]),
            }
        )
    )


def _content_to_publish(
    path: str, source: Path | None, from_stdin: bool, max_bytes: int
) -> tuple[str | None, WithheldContent | None]:
    """What ``emit`` sends of a file: its text, or, for a file the index withholds (over the
    size cap, binary, a secret), nothing but the reason, said on stderr. The same rule as
    ``index``, ``watch`` and a push (``parsing.indexable``)."""
    from patchstream.parsing.indexable import content_skip, path_skip
    from patchstream.schemas.events import WithheldContent

    if source is None and not from_stdin:
        return None, None
    if source is not None:
        with source.open("rb") as handle:
            data = handle.read(max_bytes + 1)
        size = max(len(data), source.stat().st_size)
    else:
        data = sys.stdin.buffer.read()
        size = len(data)
    skip = path_skip(path) or content_skip(data, size, max_bytes)
    if skip is not None and skip.withheld:
        click.echo(f"withheld {path}: {skip.detail}; published as a name flagged {skip.reason}",
                   err=True)  # fmt: skip
        return None, WithheldContent(reason=skip.reason, size=size)
    if skip is not None:
        click.echo(f"not indexed {path}: {skip.detail} (the pipeline drops it, as a scan "
                   "would)", err=True)  # fmt: skip
    return data.decode("utf-8", errors="replace"), None
