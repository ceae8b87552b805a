"""``patchstream query``: read the stores of a running stack directly (search, graph walks)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import click

from patchstream.settings import get_settings
from patchstream.stores.graph.base import Neighbor, StoredSymbol
from patchstream.stores.graph.cypher import CypherGraphStore


@click.group()
def query() -> None:
    """Search the index and walk the code graph."""


def _resolve(graph: CypherGraphStore, tenant: str, name_or_id: str, repo: str | None) -> str:
    if "::" in name_or_id:
        return name_or_id
    found = graph.symbols_by_name(tenant, name_or_id, repo=repo)
    if not found:
        raise click.ClickException(f"no symbol named {name_or_id!r} for tenant {tenant!r}")
    if len(found) > 1:
        click.echo(f"{len(found)} symbols named {name_or_id!r}; using {found[0].id}", err=True)
    return found[0].id


def _print_neighbors(items: list[Neighbor], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([{**asdict(n.symbol), "depth": n.depth} for n in items]))
        return
    for n in items:
        click.echo(f"{n.depth}  {_where(n.symbol):<50} {n.symbol.signature or n.symbol.name}")


def _where(symbol: StoredSymbol) -> str:
    return f"{symbol.path}:{symbol.start_line}-{symbol.end_line}"


@query.command()
@click.argument("text")
@click.option("--tenant", default="default", show_default=True)
@click.option("--repo", default=None)
@click.option("--limit", default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def search(text: str, tenant: str, repo: str | None, limit: int, as_json: bool) -> None:
    """Hybrid (dense + BM25) search over code chunks."""
    from patchstream.stores.factory import open_vector_store

    store = open_vector_store(get_settings())
    try:
        hits = store.search(tenant, text, limit=limit, repo=repo)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps([asdict(h) for h in hits]))
        return
    for hit in hits:
        first = hit.text.strip().splitlines()[0] if hit.text.strip() else ""
        click.echo(f"{hit.score:.4f}  {hit.path}:{hit.start_line}-{hit.end_line}  {first[:80]}")


def _walk(kind: str) -> Any:
    @click.argument("name_or_id")
    @click.option("--tenant", default="default", show_default=True)
    @click.option("--repo", default=None)
    @click.option("--ref", default="main", show_default=True)
    @click.option("--depth", default=1 if kind != "impact" else 3, show_default=True)
    @click.option("--json", "as_json", is_flag=True)
    def command(
        name_or_id: str, tenant: str, repo: str | None, ref: str, depth: int, as_json: bool
    ) -> None:
        from patchstream.stores.factory import open_graph_store

        graph = open_graph_store(get_settings())
        try:
            symbol_id = _resolve(graph, tenant, name_or_id, repo)
            walk = getattr(graph, kind)
            _print_neighbors(walk(tenant, symbol_id, depth, ref), as_json)
        finally:
            graph.close()

    command.__doc__ = {
        "callers": "Who calls NAME_OR_ID (depth 1 or 2).",
        "callees": "What NAME_OR_ID calls (depth 1 or 2).",
        "impact": "Every transitive caller and overrider of NAME_OR_ID.",
    }[kind]
    return query.command(name=kind)(command)


for _kind in ("callers", "callees", "impact"):
    _walk(_kind)
