"""``patchstream repo drop``: remove a repository, or one of its refs, from both stores
through the query service. Each drop is fenced: no replay of an older event brings it back."""

from __future__ import annotations

import click

from patchstream.cli.query import call


@click.group()
def repo() -> None:
    """Indexed repositories: drop one, or one of its refs."""


@repo.command("drop")
@click.argument("name")
@click.option("--ref", default=None, help="Drop only this ref (a branch or an overlay).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def drop(name: str, ref: str | None, yes: bool) -> None:
    """Drop repository NAME (every ref) or one ref of it from the graph and the vectors."""
    what = f"{name}@{ref}" if ref else f"every ref of {name}"
    if not yes:
        click.confirm(f"Drop {what} from both stores?", abort=True)
    if ref:
        found = call("DELETE", "/v1/refs", params={"repo": name, "ref": ref})
        click.echo(f"dropped {name}@{ref} ({found['symbols']} symbols)")
        return
    found = call("DELETE", "/v1/repos", params={"repo": name})
    refs = ", ".join(found["refs"])
    click.echo(f"dropped {name}: {len(found['refs'])} refs ({refs}), {found['symbols']} symbols")
