"""``patchstream workspace``: the overlays of the key's tenant (agent workspaces and branch
overlays) through the query service: list, show, create, drop."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import click

from patchstream.cli.query import call


def _when(epoch: float | None) -> str:
    if not epoch:
        return "-"
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


@click.group()
def workspace() -> None:
    """Overlays: an agent workspace (REF~NAME) or a branch over a base, stored as what they
    changed and read as the merge."""


@workspace.command("list")
@click.option("--repo", default=None, help="Only this repository's overlays.")
def list_overlays(repo: str | None) -> None:
    """Every overlay, with its base, kind, size and last write."""
    params: dict[str, Any] = {"repo": repo} if repo else {}
    found = call("GET", "/v1/overlays", params=params)["overlays"]
    if not found:
        click.echo("no overlays")
    for o in found:
        click.echo(
            f"{o['repo']}@{o['ref']:<32} over {o['base']:<16} {o['kind']:<9} "
            f"files {o['files']:>5}  deleted {o['deleted']:>4}  symbols {o['symbols']:>6}  "
            f"last write {_when(o['last_write_at'])}"
        )


@workspace.command("show")
@click.option("--repo", required=True)
@click.argument("ref")
def show(repo: str, ref: str) -> None:
    """One overlay: a branch overlay's name, a workspace's ``main~agent-42``, or just
    ``agent-42`` when one workspace of the repository has that name."""
    if "~" not in ref:
        overlays = call("GET", "/v1/overlays", params={"repo": repo})["overlays"]
        if not any(o["ref"] == ref for o in overlays):
            named = [o["ref"] for o in overlays if o["ref"].endswith(f"~{ref}")]
            if len(named) > 1:
                raise click.UsageError(f"{ref!r} is a workspace of several branches: "
                                       f"{', '.join(named)}; name one")  # fmt: skip
            ref = named[0] if named else ref
    click.echo(json.dumps(call("GET", "/v1/overlays/show", params={"repo": repo, "ref": ref}),
                          indent=2))  # fmt: skip


@workspace.command("create")
@click.option("--repo", required=True)
@click.option("--ref", default="main", show_default=True, help="The workspace's base branch.")
@click.option("--base", default=None, help="Declare the branch REF over this base instead.")
@click.argument("name", required=False)
def create(repo: str, ref: str, base: str | None, name: str | None) -> None:
    """Create the workspace REF~NAME (a first write creates it too), or with ``--base``
    declare the branch REF an overlay of BASE."""
    if (name is None) == (base is None):
        raise click.UsageError("give a workspace NAME, or --base for a branch overlay")
    body = {"repo": repo, "ref": ref, **({"workspace": name} if name else {"base": base})}
    found = call("POST", "/v1/overlays", json=body)
    click.echo(f"{found['repo']}@{found['ref']} over {found['base']} ({found['kind']})")


@workspace.command("drop")
@click.option("--repo", required=True)
@click.argument("ref")
def drop(repo: str, ref: str) -> None:
    """Drop an overlay's files and symbols from both stores (its base is untouched)."""
    found = call("DELETE", "/v1/overlays", params={"repo": repo, "ref": ref})
    if found.get("already_dropped"):
        click.echo(f"{repo}@{found['dropped']} was already dropped")
    else:
        click.echo(f"dropped {repo}@{found['dropped']} ({found['symbols']} symbols)")
