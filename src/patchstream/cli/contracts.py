"""Files generated from the code and checked for drift: the JSON Schema contracts, the
OpenAPI document and the docs site's reference pages."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from patchstream.cli.schema_export import drifted_schemas, write_schemas


def _root() -> click.Group:
    root = click.get_current_context().find_root().command
    assert isinstance(root, click.Group)
    return root


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("schemas"),
    show_default=True,
)
@click.option("--check", is_flag=True, help="Exit 1 if the files differ from the models.")
def schemas(out: Path, check: bool) -> None:
    """Write the JSON Schema contracts (or check them for drift)."""
    if check:
        drifted = drifted_schemas(out)
        if drifted:
            click.echo(f"schemas out of date: {', '.join(drifted)}; run `patchstream schemas`")
            sys.exit(1)
        click.echo("schemas up to date")
        return
    for written in write_schemas(out):
        click.echo(f"wrote {written}")


@click.command()
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("schemas/openapi.json"), show_default=True)  # fmt: skip
@click.option("--check", is_flag=True, help="Exit 1 if the file differs from the API.")
def openapi(out: Path, check: bool) -> None:
    """Write (or check) the query service's OpenAPI document."""
    from patchstream.query.api import openapi_document

    text = openapi_document()
    if check:
        if not out.is_file() or out.read_text() != text:
            click.echo(f"{out} is out of date; run `patchstream openapi`")
            sys.exit(1)
        click.echo(f"{out} up to date")
        return
    out.write_text(text)
    click.echo(f"wrote {out}")


@click.command("docs-reference")
@click.option("--check", is_flag=True, help="Exit 1 if a page differs from the code.")
def docs_reference(check: bool) -> None:
    """Write (or check) the docs site's generated reference pages: CLI, configuration and
    HTTP API (docs/reference)."""
    from patchstream.cli.reference_docs import reference_pages

    stale = []
    for path, text in reference_pages(_root()).items():
        if check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        click.echo(f"wrote {path}")
    if stale:
        click.echo(f"out of date: {', '.join(stale)}; run `patchstream docs-reference`")
        sys.exit(1)
