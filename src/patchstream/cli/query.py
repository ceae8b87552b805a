"""``patchstream query``: ask the query service of a running stack (HTTP, Bearer key)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import click

from patchstream.cli.errors import AnswerError
from patchstream.config.settings import get_settings
from patchstream.query.client import QueryClient, QueryServiceError
from patchstream.query.freshness import FLAGGED_LISTED
from patchstream.schemas.events import view_ref
from patchstream.schemas.graph import CallResolution


@contextlib.contextmanager
def query_client() -> Iterator[QueryClient]:
    """A client of the configured query service; its errors as the CLI reports them."""
    client = QueryClient(get_settings().query)
    try:
        yield client
    except QueryServiceError as exc:
        raise AnswerError(str(exc), exc.status) from exc
    finally:
        client.close()


def call(method: str, path: str, **kwargs: Any) -> Any:
    with query_client() as client:
        return client.call(method, path, **kwargs)


@click.group()
def query() -> None:
    """Search the index, walk the code graph, assemble context."""


@query.command()
@click.argument("text")
@click.option("--repo", default=None)
@click.option("--ref", default=None)
@click.option("--workspace", default=None, help="Read the agent workspace REF~WORKSPACE.")
@click.option("--path-prefix", default=None)
@click.option("--kind", default=None)
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 100))
@click.option("--json", "as_json", is_flag=True, help="Print the API response.")
def search(
    text: str, repo: str | None, ref: str | None, workspace: str | None, path_prefix: str | None,
    kind: str | None, limit: int, as_json: bool,
) -> None:  # fmt: skip
    """Hybrid (dense + BM25, fused by RRF) search over code chunks, best first: each file's
    best chunk before any file's second."""
    body = {"query": text, "limit": limit, "repo": repo,
            "ref": view_ref(ref or "main", workspace) if workspace else ref,
            "path_prefix": path_prefix, "kind": kind}  # fmt: skip
    result = call("POST", "/v1/search", json=body)
    if as_json:
        click.echo(json.dumps(result))
        return
    # Ranks, not scores: each file's best row comes before any file's second, so the fused
    # scores down the list are not in order (they are in --json).
    for rank, hit in enumerate(result["hits"], 1):
        first = hit["text"].strip().splitlines()[0] if hit["text"].strip() else ""
        click.echo(f"{rank:>2}. {hit['ref']:<12}  {hit['path']}:{hit['start_line']}-"
                   f"{hit['end_line']}  {first[:80]}")  # fmt: skip
    if (note := lag_note(result.get("freshness"))) is not None:
        click.echo(note, err=True)


def lag_note(freshness: object, at_least_s: float = 1.0) -> str | None:
    """What a search answer says of its own lag, when its tier may lack writes older than
    ``at_least_s`` (the hits may name a file since changed or deleted); None otherwise."""
    if not isinstance(freshness, dict) or not isinstance(freshness.get("vector"), dict):
        return None
    lag = freshness["vector"].get("lag_s")
    if not isinstance(lag, int | float) or lag < at_least_s:
        return None
    repo = freshness.get("repo")
    return (f"note: the search index of {repo} may lack writes of the last {lag:.0f} s "
            f"(`patchstream query freshness {repo}` says more)")  # fmt: skip


def _walk(kind: str) -> None:
    @click.argument("name_or_id")
    @click.option("--repo", default=None)
    @click.option("--ref", default="main", show_default=True)
    @click.option("--workspace", default=None, help="Read the agent workspace REF~WORKSPACE.")
    @click.option(
        "--depth",
        default=1 if kind != "impact" else 3,
        show_default=True,
        type=click.IntRange(1, 5 if kind == "impact" else 2),
    )
    @click.option(
        "--resolution",
        type=click.Choice([r.value for r in CallResolution]),
        default=CallResolution.INFERRED.value,
        show_default=True,
        help="Weakest call edge to follow: exact (certain), runtime (also calls a traced "
        "command made), inferred (guessed types and implementations too), name-only (also "
        "calls of a method unique by name).",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print the API response.")
    def command(
        name_or_id: str, repo: str | None, ref: str, workspace: str | None, depth: int,
        resolution: str, as_json: bool,
    ) -> None:  # fmt: skip
        with query_client() as client:
            result = client.walk_named(kind, name_or_id, depth, repo, view_ref(ref, workspace),
                                       resolution)  # fmt: skip
        if as_json:
            click.echo(json.dumps(result))
            return
        for start in result["symbol_ids"]:
            click.echo(f"{kind} of {start}")
            rows = [item for item in result[kind] if item["of"] == start]
            for item in rows:
                where = f"{item['path']}:{item['start_line']}-{item['end_line']}"
                shown = " ".join((item["signature"] or item["name"]).split())
                click.echo(f"  {item['depth']}  {item['resolution']:<9} {where:<50} "
                           f"{shown[:100]}")  # fmt: skip
            if not rows:
                click.echo(f"  none (weakest edge followed: {resolution})")
        if result["more_named"]:
            click.echo(f"{name_or_id!r} names {result['more_named']} more symbols; name one as "
                       "Class.method or by its id")  # fmt: skip

    command.__doc__ = {
        "callers": "Who calls NAME_OR_ID (depth 1 or 2); a name several symbols share is "
        "walked from each (Class.method or an id names one).",
        "callees": "What NAME_OR_ID calls (depth 1 or 2); a shared name is walked from each.",
        "impact": "Every transitive caller and overrider of NAME_OR_ID (of each symbol a "
        "shared name stands for).",
    }[kind]
    query.command(name=kind)(command)


for _kind in ("callers", "callees", "impact"):
    _walk(_kind)


@query.command()
@click.argument("text")
@click.option("--budget", default=None, type=click.IntRange(64, 200_000),
              help="Token budget, 64-200000 (default from settings).")  # fmt: skip
@click.option("--repo", default=None)
@click.option("--ref", default="main", show_default=True)
@click.option("--workspace", default=None, help="Read the agent workspace REF~WORKSPACE.")
@click.option("--session", default=None, help="Put this agent session's recent writes first.")
@click.option("--json", "as_json", is_flag=True, help="Print the API response.")
def context(
    text: str, budget: int | None, repo: str | None, ref: str, workspace: str | None,
    session: str | None, as_json: bool,
) -> None:  # fmt: skip
    """Token-budgeted context for TEXT: entry code, callers/callees, semantic chunks."""
    if budget is None:
        budget = get_settings().query.default_budget_tokens
    body = {"query": text, "budget_tokens": budget,
            "repo": repo, "ref": view_ref(ref, workspace), "session": session}  # fmt: skip
    result = call("POST", "/v1/context", json=body)
    if as_json:
        click.echo(json.dumps(result))
        return
    for block in result["blocks"]:
        p = block["provenance"]
        flags = f" flags={','.join(block['flags'])}" if block["flags"] else ""
        click.echo(f"### {p['repo']}@{p['ref']}:{p['path']}:{p['start_line']}-{p['end_line']} "
                   f"[{block['kind']}; trust={p['trust']}]{flags}")  # fmt: skip
        click.echo(block["text"])
    click.echo(f"-- tokens_used={result['tokens_used']} of {result['budget_tokens']}")


@query.command()
@click.argument("target")
@click.option("--repo", required=True)
@click.option("--ref", default="main", show_default=True)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 200))
@click.option("--json", "as_json", is_flag=True, help="Print the API response.")
def history(target: str, repo: str, ref: str, limit: int, as_json: bool) -> None:
    """Who changed TARGET (a path, or a definition's name), when and why: the commits
    reachable from REF's head, newest first, with the issues and pull/merge requests they
    name or were merged by, and the review comments on a file."""
    params = {"repo": repo, "ref": ref, "target": target, "limit": limit}
    result = call("GET", "/v1/history", params=params)
    if as_json:
        click.echo(json.dumps(result))
        return
    if not result["commits"]:
        click.echo(f"no commit reachable from {repo}@{ref} changed {target}")
    for commit in result["commits"]:
        issues = f"  [{', '.join(commit['issues'])}]" if commit["issues"] else ""
        click.echo(f"{commit['sha'][:12]}  {commit['date'][:10]}  {commit['author']}  "
                   f"{commit['subject']}{issues}")  # fmt: skip
        for change in commit["files"]:
            named = f" in {', '.join(change['symbols'])}" if change["symbols"] else ""
            click.echo(f"    {change['path']} +{change['added']} -{change['removed']}{named}")
        for thread in commit.get("linked", []):
            state = f" ({thread['state']})" if thread["state"] else ""
            click.echo(f"    {thread['kind']} {thread['number']}{state}: {thread['title']}  "
                       f"[{thread['via']}]")  # fmt: skip
    for note in result.get("discussions", []):
        click.echo(f"review on {note['thread']} ({note['title']}) by {note['author']} "
                   f"{note['date'][:10]}  {note['url']}")  # fmt: skip


@query.command()
@click.argument("repo")
@click.option("--ref", default="main", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the API response.")
def freshness(repo: str, ref: str, as_json: bool) -> None:
    """Per tier: files, last applied version and time, pending events, lag."""
    result = call("GET", "/v1/freshness", params={"repo": repo, "ref": ref})
    if as_json:
        click.echo(json.dumps(result))
        return
    pending = result.get("pending_events", {})
    for tier in ("graph", "vector"):
        info = result.get(tier)
        if not isinstance(info, dict):
            continue
        fields = "  ".join(f"{k}={v}" for k, v in info.items())
        click.echo(f"{tier:<7} pending={pending.get(tier, '?')}  {fields}")
    # Not yet parsed: pending for both tiers. Counted for this repository from the bus when
    # anything waits there, with the age of its oldest event.
    mine = result.get("parse")
    if isinstance(mine, dict):
        click.echo(f"{'parse':<7} pending={mine['pending']}  oldest_s={mine['oldest_s']}  "
                   f"(every repository: {pending.get('parse', '?')})")  # fmt: skip
    else:
        click.echo(f"{'parse':<7} pending=0  (every repository: {pending.get('parse', '?')})")
    for line in flagged_lines(result):
        click.echo(line)


def flagged_lines(result: dict[str, Any]) -> list[str]:
    """What a freshness answer says of files the index holds in part or not at all."""
    counts = result.get("flagged") or {}
    unparsed = [f"unparsed: {unparsed_words(result['unparsed'])}"] if result.get("unparsed") else []
    if not counts:
        return ["flagged none", *unparsed]
    lines = ["flagged " + "  ".join(f"{flag}={n}" for flag, n in counts.items()), *unparsed]
    for file in result.get("flagged_files", []):
        path = file["path"] if str(file["path"]).isprintable() else repr(file["path"])
        lines.append(f"  {path}: {', '.join(file['flags'])}")
    if len(result.get("flagged_files", [])) >= FLAGGED_LISTED:
        lines.append(f"  ... (the first {FLAGGED_LISTED} are named)")
    return lines


def tenant_flagged_line(client: QueryClient) -> str:
    """``status``'s line: the tenant's flagged files, every repository."""
    try:
        result = client.call("GET", "/v1/freshness")
    except QueryServiceError as exc:
        return f"flagged files: not known ({exc})"
    counts = result.get("flagged") or {}
    said = "  ".join(f"{flag}={n}" for flag, n in counts.items()) or "none"
    line = f"flagged files: {said}" + ("  (`query freshness REPO` names them)" * bool(counts))
    return line + (f"; {unparsed_words(result['unparsed'])}" if result.get("unparsed") else "")


def unparsed_words(unparsed: dict[str, int], shown: int = 12) -> str:
    """``no grammar (text searchable, no symbols): .c 40, .json 12, ...``"""
    listed = ", ".join(f"{ext} {n}" for ext, n in list(unparsed.items())[:shown])
    more = f", and {len(unparsed) - shown} more kinds" if len(unparsed) > shown else ""
    return f"no grammar (text searchable, no symbols): {listed}{more}"
