"""``patchstream`` command line entry point."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from patchstream import __version__
from patchstream.errors import PatchstreamError
from patchstream.parsing.delta import compute_delta
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.export import drifted_schemas, write_schemas
from patchstream.schemas.state import FileDelta
from patchstream.settings import get_settings


@click.group()
@click.version_option(__version__, prog_name="patchstream")
def cli() -> None:
    """Keep coding agents' knowledge of codebases correct and fresh."""


def delta_summary(delta: FileDelta) -> dict[str, Any]:
    """The JSON view of a parse: symbols, edges and chunks of the file."""
    return {
        "path": delta.path,
        "repo": delta.repo,
        "language": delta.language,
        "content_hash": delta.content_hash,
        "version": delta.version,
        "flags": delta.flags.model_dump(),
        "symbols": [
            {
                "id": s.id,
                "kind": s.kind.value,
                "name": s.name,
                "qualified_name": s.qualified_name,
                "start_line": s.start_line,
                "end_line": s.end_line,
                "signature": s.signature,
                "doc": s.doc,
                "parent_id": s.parent_id,
            }
            for s in delta.symbols
        ],
        "edges": [
            {"type": e.type.value, "src": e.src, "dst": e.dst, "resolved": e.ref is None}
            for e in delta.edges
        ],
        "chunks": [
            {
                "id": c.id,
                "symbol_id": c.symbol_id,
                "content_hash": c.content_hash,
                "start_line": c.start_line,
                "end_line": c.end_line,
                "tokens": c.tokens,
            }
            for c in delta.chunks
        ],
    }


@cli.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--repo", default="local", show_default=True, help="Repository name for ids.")
@click.option("--path", "repo_path", default=None, help="Path inside the repository.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def parse(file: Path, repo: str, repo_path: str | None, as_json: bool) -> None:
    """Print the delta of FILE from an empty previous state."""
    started = time.perf_counter()
    target = FileRef(
        tenant="default",
        repo=repo,
        ref="main",
        path=repo_path or file.as_posix().lstrip("./") or file.name,
        version=time.time_ns(),
    )
    delta = compute_delta(None, file.read_bytes(), target, FileStateBuilder(get_settings().parsing))
    summary = delta_summary(delta)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    elapsed_ms = (time.perf_counter() - started) * 1000
    flags = ",".join(delta.flags.raised()) or "none"
    click.echo(
        f"path={summary['path']} language={summary['language']} flags={flags} "
        f"symbols={len(summary['symbols'])} edges={len(summary['edges'])} "
        f"chunks={len(summary['chunks'])} ms={elapsed_ms:.1f}"
    )
    for symbol in summary["symbols"]:
        click.echo(
            f"  {symbol['kind']:<9} {symbol['qualified_name']:<40} "
            f"L{symbol['start_line']}-{symbol['end_line']}  {symbol['signature'] or ''}"
        )
    for edge in summary["edges"]:
        click.echo(f"  {edge['type']:<13} {edge['src']} -> {edge['dst']}")


@cli.command()
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


def main() -> None:
    try:
        cli(standalone_mode=True)
    except PatchstreamError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
