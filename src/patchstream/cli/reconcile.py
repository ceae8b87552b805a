"""``patchstream reconcile``: bring the stores back to the mirrors' indexed commits."""

from __future__ import annotations

import asyncio
import json

import click

from patchstream.config.settings import get_settings


@click.command()
@click.option("--tenant", default=None, help="With --repo: one repository.")
@click.option("--repo", default=None, help="A repository the gateway mirrors.")
@click.option("--ref", default=None, help="One branch (default: every indexed branch).")
@click.option("--all", "everything", is_flag=True, help="Every mirrored repository.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per branch.")
def reconcile(
    tenant: str | None, repo: str | None, ref: str | None, everything: bool, as_json: bool
) -> None:
    """Republish what the stores miss and delete what they hold that the commit does not. An
    operator command: it opens the stores and the broker, so it runs beside the server."""
    from patchstream.indexing.reconcile import mirrored_branches, reconcile_branch

    settings = get_settings()
    branches = mirrored_branches(settings)
    if not everything:
        if not (tenant and repo):
            raise click.UsageError("name --tenant and --repo, or pass --all")
        branches = [b for b in branches if b[0] == tenant and b[1] == repo]
    if ref is not None:
        branches = [b for b in branches if b[2] == ref]
    for branch_tenant, branch_repo, branch in branches:
        summary = asyncio.run(reconcile_branch(settings, branch_tenant, branch_repo, branch))
        if as_json:
            click.echo(json.dumps(summary.as_dict()))
        else:
            click.echo(f"{branch_tenant}/{branch_repo}@{branch} ({summary.commit}): "
                       f"{summary.files} files, republished {len(summary.republished)}, "
                       f"deleted {len(summary.deleted)}")  # fmt: skip
