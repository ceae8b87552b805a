"""``patchstream trace -- COMMAND``: the calls a Python command makes, as runtime edges."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from patchstream.config.settings import get_settings


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@click.option("--repo", default=None, help="Repository name (default: the root's name).")
@click.option("--ref", default="main", show_default=True, help="Branch the calls are stored on.")
@click.option("--tenant", default="default", show_default=True)
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=".", show_default=True,
              help="Repository root: only calls between its files are kept.")  # fmt: skip
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the trace events here, one JSON object a line.")  # fmt: skip
@click.option("--publish/--no-publish", default=True, show_default=True,
              help="Publish the events and wait until the graph has applied them.")  # fmt: skip
@click.option("--timeout", "timeout_s", default=120.0, show_default=True,
              help="Seconds to wait for the graph.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def trace(
    command: tuple[str, ...], repo: str | None, ref: str, tenant: str, root: Path,
    out: Path | None, publish: bool, timeout_s: float, as_json: bool,
) -> None:  # fmt: skip
    """Run COMMAND under a tracer and store the calls it made as runtime edges.

    COMMAND is any command that runs Python (``patchstream trace -- pytest -q tests``); every
    Python process it starts is traced. A call is stored as ``CALLS`` with resolution
    ``runtime`` while both files keep the content they had; editing either drops it until the
    code is traced again. Exits with COMMAND's exit code."""
    from patchstream.schemas.events import refuse_bad_names
    from patchstream.tracing.run import trace_command

    root = root.resolve()
    repo = repo or root.name
    refuse_bad_names(repo=repo, tenant=tenant, ref=ref)
    try:
        result = trace_command(list(command), root, tenant=tenant, repo=repo, ref=ref)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from exc
    if out is not None:
        out.write_text("".join(e.model_dump_json() + "\n" for e in result.events), "utf-8")
    summary: dict[str, Any] = result.as_dict()
    if publish and result.events:
        summary["graph"] = _publish_and_wait(result.events, repo, ref, timeout_s)
    if as_json:
        click.echo(json.dumps(summary))
    else:
        click.echo(_describe(summary), err=True)
    if summary.get("graph", {}).get("timed_out"):
        sys.exit(1)
    sys.exit(result.returncode)


def _publish_and_wait(events: list[Any], repo: str, ref: str, timeout_s: float) -> dict[str, Any]:
    from patchstream.query.client import QueryClient
    from patchstream.streams.producer import EventPublisher

    settings = get_settings()
    gateway = settings.gateway
    if gateway.url:  # through the gateway when one is configured: no broker address needed
        from patchstream.client import PatchClient

        with PatchClient(gateway.url, gateway.api_key.get_secret_value(), timeout_s=60) as c:
            for start in range(0, len(events), 100):
                c.traces([e.model_dump(mode="json", exclude={"tenant"})
                          for e in events[start : start + 100]])  # fmt: skip
    else:

        async def send() -> None:
            async with EventPublisher(settings.kafka) as publisher:
                await publisher.publish_traces(events)

        asyncio.run(send())
    last = {e.path: e.event_id for e in events}  # a file's events apply in order
    client = QueryClient(settings.query)
    try:
        done = _applied(client, repo, ref, last, time.monotonic() + timeout_s)
    finally:
        client.close()
    return {
        "applied_files": len(done), "files": len(last),
        "kept": sum(m["kept"] for m in done.values()),
        "stale": sum(m["stale"] for m in done.values()),
        "unknown": sum(m["unknown"] for m in done.values()),
        "timed_out": len(done) < len(last),
    }  # fmt: skip


def _applied(
    client: Any, repo: str, ref: str, last: dict[str, str], deadline: float
) -> dict[str, dict[str, Any]]:
    """Poll until the graph has applied each file's last event, or the deadline: what it
    applied of them (kept / stale / unknown per file)."""
    paths = sorted(last)
    while True:
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(paths), 5000):  # the route takes 10,000 paths at most
            body = {"repo": repo, "ref": ref, "paths": paths[start : start + 5000]}
            found.update(client.call("POST", "/v1/traces/status", json=body)["files"])
        done = {p: m for p, m in found.items() if m["event_id"] == last.get(p)}
        if len(done) == len(last) or time.monotonic() > deadline:
            return done
        time.sleep(0.3)


def _describe(summary: dict[str, Any]) -> str:
    lines = [
        f"traced {summary['processes']} Python process(es) in {summary['seconds']} s "
        f"(exit code {summary['returncode']}): {summary['pairs']} distinct calls inside the "
        f"repository, {summary['edges']} between its symbols, in {summary['events']} event(s)"
    ]
    for title in ("refused", "left_out"):
        for reason, count in sorted(summary[title].items()):
            lines.append(f"  {title.replace('_', ' ')}: {count} ({reason})")
    graph = summary.get("graph")
    if graph:
        lines.append(
            f"graph: {graph['kept']} runtime edges stored, {graph['stale']} stale (a file changed "
            f"since it was traced), {graph['unknown']} unknown (a file or symbol not indexed); "
            f"{graph['applied_files']}/{graph['files']} files applied"
            + (" - timed out" if graph["timed_out"] else "")
        )
    return "\n".join(lines)
