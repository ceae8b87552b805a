"""``patchstream watch``: publish every file written in a checkout, by any agent or editor."""

from __future__ import annotations

import contextlib
import signal
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from patchstream.config.settings import get_settings


@click.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path), default=".")
@click.option("--repo", default=None,
              help="Repository (default: the one `index` recorded for this checkout, else the "
              "directory's name).")  # fmt: skip
@click.option("--ref", default=None, help="Branch (default: the recorded one, else main).")
@click.option("--workspace", default=None,
              help="Publish into the agent workspace REF~WORKSPACE.")  # fmt: skip
@click.option("--debounce-ms", default=100, show_default=True, type=click.IntRange(0, 60_000),
              help="Quiet time before the writes gathered are published together.")  # fmt: skip
@click.option("--reconcile/--no-reconcile", default=True, show_default=True,
              help="After each batch, compare the index with the tree and publish what "
              "differs (a branch switch, a rebase, a missed event).")  # fmt: skip
def watch(
    path: Path, repo: str | None, ref: str | None, workspace: str | None, debounce_ms: int,
    reconcile: bool,
) -> None:  # fmt: skip
    """Publish each file written under PATH until Ctrl-C: for agents and editors with no
    hook (Cursor, Aider, Codex, a person's editor). Through the gateway, as the Claude Code
    hook publishes; after each batch the index is compared with the tree, so a branch switch
    leaves nothing of the old branch. Git-ignored and vendored files stay here; oversized,
    binary and secret files go as their names only, flagged."""
    from patchstream.client import PatchClient
    from patchstream.indexing.remote import held_remotely
    from patchstream.producers.claude_hook import Skipped, Target, gateway_url, target_of
    from patchstream.producers.watch import Watcher, WatchTarget
    from patchstream.query.client import QueryClient
    from patchstream.schemas.events import refuse_bad_names

    settings = get_settings()
    root = path.resolve()
    try:  # a checkout `index` recorded (or the gateway registers), or a linked worktree of one
        known: Target | None = target_of(root, settings)
    except Skipped:
        known = None
    target = WatchTarget(
        root=known.root if known else root,
        repo=repo or (known.repo if known else root.name),
        ref=ref or (known.ref if known else "main"),
        workspace=workspace or (known.workspace if known else None),
    )
    refuse_bad_names(repo=target.repo, ref=target.ref, workspace=target.workspace)
    url = gateway_url(settings)

    def report(line: str) -> None:
        click.echo(f"{datetime.now():%H:%M:%S} {line}")

    view = target.ref + (f"~{target.workspace}" if target.workspace else "")
    query = QueryClient(settings.query, timeout_s=10.0)  # a slow view delays a compare only
    with PatchClient(url, settings.gateway.api_key.get_secret_value()) as client:

        def publish(writes: list[dict[str, Any]]) -> dict[str, Any]:
            return client.write(writes)

        def held() -> dict[str, str | None]:  # the view the tree is compared with
            return held_remotely(query, target.repo, view)

        watcher = Watcher(target, publish, settings.parsing.max_file_bytes,
                          debounce_s=debounce_ms / 1000, report=report,
                          held=held if reconcile else None)  # fmt: skip
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        where = f"{target.repo}@{target.ref}" + (f"~{target.workspace}" * bool(target.workspace))
        click.echo(f"watching {target.root} -> {where} through {url}; Ctrl-C stops")
        if known is None:  # nothing recorded: only what is written from now on is indexed
            click.echo(f"(not indexed from here yet: `patchstream index {path}` publishes the "
                       "files already there)")  # fmt: skip
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: run() flushed on its way out
            watcher.run(stop)
        query.http.close()
        unsent = len(watcher.queue.paths)
        left = f"; {unsent} path(s) unpublished: `patchstream index` sends them" * bool(unsent)
        click.echo(f"stopped: {watcher.published} write(s) published{left}")
