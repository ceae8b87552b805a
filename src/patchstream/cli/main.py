"""``patchstream`` command line entry point."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from patchstream import __version__
from patchstream.cli.dlq import dlq
from patchstream.cli.errors import FriendlyGroup
from patchstream.cli.memory import memory
from patchstream.cli.query import query
from patchstream.cli.reconcile import reconcile
from patchstream.cli.runs import run, session
from patchstream.cli.schema_export import drifted_schemas, write_schemas
from patchstream.cli.workspace import workspace
from patchstream.errors import ConfigError, PatchstreamError
from patchstream.logs import configure_logging
from patchstream.parsing.delta import compute_delta
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.state import FileDelta
from patchstream.settings import get_settings


@click.group(cls=FriendlyGroup)
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


@cli.command()
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the embedded services keep their data (default: settings).",
)
def up(data_dir: str | None) -> None:
    """Start the embedded stack: Tansu, FalkorDB, Milvus Lite, parse workers and sinks."""
    from patchstream.embedded.supervisor import Supervisor

    configure_logging()
    settings = get_settings()
    if data_dir:
        settings = settings.model_copy(
            update={"embedded": settings.embedded.model_copy(update={"data_dir": data_dir})}
        )
    supervisor = Supervisor(settings)
    try:
        supervisor.start()
    except BaseException:
        supervisor.stop()
        raise

    def banner() -> None:
        click.echo("patchstream is up:")
        for line in supervisor.describe():
            click.echo(f"  {line}")
        targets = supervisor.data_dir / "prometheus" / "targets.json"
        click.echo(f"Prometheus targets (file_sd): {targets}")
        click.echo("Index a repository:  patchstream index PATH --repo NAME   (Ctrl-C stops all)")

    supervisor.run_forever(ready=banner)
    click.echo("patchstream stopped")


@cli.command()
@click.option("--quiet", is_flag=True, help="Print nothing; exit 0 only if everything answers.")
def status(quiet: bool) -> None:
    """Whether the services of the configured stack answer on their ports: the broker, the
    stores, the query service and the gateway, and (embedded stack) every worker and sink."""
    from patchstream.embedded.services import port_is_open

    settings = get_settings()
    milvus = settings.vector.milvus_uri.split("://", 1)[-1]
    gateway = settings.gateway.url.split("://", 1)[-1].rstrip("/") or (
        f"{settings.gateway.host}:{settings.gateway.port}")  # fmt: skip
    targets = {
        "kafka": settings.kafka.bootstrap,
        "falkordb": f"{settings.graph.falkordb_host}:{settings.graph.falkordb_port}",
        "milvus": milvus,
        "query": settings.query.url.split("://", 1)[-1].rstrip("/"),
        "gateway": gateway,
    }
    targets.update(_embedded_workers(settings))
    healthy = True
    for name, address in targets.items():
        host, _, port = address.rpartition(":")
        up_now = port_is_open(host, int(port))
        healthy &= up_now
        if not quiet:
            click.echo(f"{name:<12} {address:<22} {'up' if up_now else 'DOWN'}")
    sys.exit(0 if healthy else 1)


def _embedded_workers(settings: Any) -> dict[str, str]:
    """Parse workers and sinks of a running embedded stack, by the /metrics address each
    serves (``up`` lists them in ``<data dir>/prometheus/targets.json``)."""
    listing = Path(settings.embedded.data_dir) / "prometheus" / "targets.json"
    try:
        targets = json.loads(listing.read_text())
    except (OSError, ValueError):
        return {}
    found = {}
    for target in targets if isinstance(targets, list) else []:
        labels = target.get("labels", {}) if isinstance(target, dict) else {}
        name = str(labels.get("process", ""))
        if name and name not in ("query", "gateway") and target.get("targets"):
            found[name] = str(target["targets"][0])
    return found


def serve_http(factory: str, host: str, port: int, workers: int) -> None:
    """Run an ASGI app factory with uvicorn; several workers share the port and, through
    prometheus-client's multiprocess mode, one set of metrics."""
    import uvicorn

    from patchstream.metrics import prepare_multiprocess_metrics

    if workers > 1:
        prepare_multiprocess_metrics(Path(get_settings().embedded.data_dir), factory)
    uvicorn.run(factory, factory=True, host=host, port=port, workers=workers,
                log_level="warning")  # fmt: skip


def refuse_unsafe_keys(keys: dict[str, str], host: str, service: str) -> None:
    """Exit with a clear message before serving when the keys are unsafe for ``host``."""
    from patchstream.http_security import resolve_api_keys

    try:
        resolve_api_keys(keys, host, service)
    except ConfigError as exc:
        raise click.ClickException(f"refusing to start: {exc}") from exc


workers_option = click.option(
    "--workers", default=1, show_default=True, type=click.IntRange(1, 64),
    help="Worker processes sharing the port.",
)  # fmt: skip


@cli.command("query-service")
@workers_option
def query_service(workers: int) -> None:
    """Run the read-only query service (HTTP API)."""
    configure_logging()
    settings = get_settings()
    refuse_unsafe_keys(settings.query.api_keys, settings.query.host, "query")
    serve_http("patchstream.query.api:api_from_environment", settings.query.host,
               settings.query.port, workers)  # fmt: skip


@cli.command()
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


@cli.command("docs-reference")
@click.option("--check", is_flag=True, help="Exit 1 if a page differs from the code.")
def docs_reference(check: bool) -> None:
    """Write (or check) the docs site's generated reference pages: CLI, configuration and
    HTTP API (docs/reference)."""
    from patchstream.cli.reference_docs import reference_pages

    stale = []
    for path, text in reference_pages(cli).items():
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


@cli.command()
@click.option("--transport", type=click.Choice(["stdio", "streamable-http"]), default="stdio",
              show_default=True)  # fmt: skip
@click.option("--port", type=int, default=None, help="For streamable-http (query.mcp_port).")
def mcp(transport: str, port: int | None) -> None:
    """Serve the query tools to MCP clients (Claude Code, Cursor). Over HTTP every request
    needs a bearer key of the query service (same tenant as PATCHSTREAM_QUERY__API_KEY)."""
    settings = get_settings()
    if transport == "stdio":
        from patchstream.query.mcp_server import create_mcp_server

        create_mcp_server(settings).run("stdio")
    else:
        from patchstream.query.mcp_http import serve_mcp_http

        serve_mcp_http(settings, settings.query.host, port or settings.query.mcp_port)


@cli.command()
@workers_option
def gateway(workers: int) -> None:
    """Run the webhook and agent-patch gateway (HTTP)."""
    configure_logging()
    settings = get_settings()
    from patchstream.producers.registry import load_registry

    try:
        registered = load_registry(settings.gateway.config).api_keys
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    refuse_unsafe_keys({**registered, **settings.gateway.api_keys}, settings.gateway.host,
                       "gateway")  # fmt: skip
    serve_http("patchstream.producers.gateway:gateway_from_environment", settings.gateway.host,
               settings.gateway.port, workers)  # fmt: skip


@cli.group()
def hook() -> None:
    """Agent tool hooks."""


@hook.command("claude-code")
def claude_code_hook() -> None:
    """Claude Code PostToolUse hook: publish Write/Edit/MultiEdit results (never fails)."""
    from patchstream.producers.claude_hook import main as run_hook

    sys.exit(run_hook(sys.stdin.read(), get_settings()))


@cli.command()
def worker() -> None:
    """Run one Faust parse worker (``patch-events`` -> ``file-deltas``)."""
    from patchstream.metrics import Metrics
    from patchstream.metrics.http import serve_metrics
    from patchstream.streams.faust_app import create_app

    configure_logging()
    if os.environ.get("PATCHSTREAM_FAUST_LOG_LEVEL"):
        logging.getLogger("faust").setLevel(os.environ["PATCHSTREAM_FAUST_LOG_LEVEL"].upper())
    settings = get_settings()
    metrics = Metrics("parse", settings.metrics)
    serve_metrics(metrics)
    app = create_app(settings, metrics)
    level = os.environ.get("PATCHSTREAM_FAUST_LOG_LEVEL", "warn")
    # Faust's worker command turns its web server on (0.0.0.0:6066) whatever the app says; no
    # parse worker needs it, and a second worker or a second stack would crash-loop on the port.
    sys.argv = ["patchstream-parse", "worker", "--loglevel", level, "--without-web"]
    app.main()


@cli.command()
@click.option("--wait", "wait_s", default=120.0, show_default=True,
              help="Seconds to wait for the broker to answer.")  # fmt: skip
def topics(wait_s: float) -> None:
    """Create the pipeline's topics (patch events, file deltas, DLQ) if they do not exist."""
    import asyncio

    from patchstream.streams.topics import ensure_topics

    configure_logging()
    kafka = get_settings().kafka
    deadline = time.monotonic() + wait_s
    while True:
        try:
            created = asyncio.run(ensure_topics(kafka))
            break
        except Exception as exc:  # the broker may still be starting
            if time.monotonic() > deadline:
                raise click.ClickException(
                    f"Kafka at {kafka.bootstrap} did not answer within {wait_s:.0f}s: {exc}"
                ) from exc
            time.sleep(2)
    for name in created.all():
        click.echo(f"{name}  partitions={kafka.partitions} replication={kafka.replication}")


@cli.command()
@click.argument("kind", type=click.Choice(["graph", "vector"]))
def sink(kind: str) -> None:
    """Run the graph or the vector sink consumer."""
    import asyncio
    import signal

    from patchstream.consumers.runner import SinkRunner
    from patchstream.consumers.sinks import GraphSink, VectorSink
    from patchstream.metrics import Metrics
    from patchstream.metrics.http import serve_metrics
    from patchstream.stores.factory import open_graph_store, open_vector_store

    configure_logging()
    settings = get_settings()
    metrics = Metrics(f"{kind}-sink", settings.metrics)
    serve_metrics(metrics)
    apply: GraphSink | VectorSink = (
        GraphSink(open_graph_store(settings))
        if kind == "graph"
        else VectorSink(open_vector_store(settings), metrics)
    )
    store = settings.graph.backend if kind == "graph" else "milvus"
    finish = apply.flush if isinstance(apply, VectorSink) else None
    runner = SinkRunner(kind, settings, apply, metrics=metrics, store=store, finish_fetch=finish)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await runner.run(stop)

    asyncio.run(run())


@cli.command()
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
@click.option("--commits", default=100, show_default=True,
              help="Recent commit messages to index as prose (0: none).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--base", default=None,
              help="Index REF as an overlay of this branch: store only what differs.")  # fmt: skip
def index(
    path: Path, repo: str | None, tenant: str, ref: str, timeout_s: float, commits: int,
    as_json: bool, base: str | None,
) -> None:  # fmt: skip
    """Index a directory and wait until the graph and the vectors have applied it."""
    import asyncio

    from patchstream.indexing.run import index_directory
    from patchstream.schemas.events import refuse_bad_names

    root = path.resolve()
    refuse_bad_names(repo=repo or root.name, tenant=tenant, ref=ref, base=base)
    configure_logging("WARNING" if as_json else None)
    summary = asyncio.run(
        index_directory(
            get_settings(), root, repo=repo or root.name, tenant=tenant, ref=ref,
            timeout_s=timeout_s, progress=not as_json, commits=commits, base=base,
        )
    )  # fmt: skip
    if as_json:
        click.echo(json.dumps(summary.as_dict()))
    else:
        click.echo(
            f"indexed {summary.repo}@{summary.ref} for tenant {summary.tenant}: "
            f"files={summary.files_scanned} published={summary.published} "
            f"unchanged={summary.unchanged} deleted={summary.deleted} commits={summary.commits} "
            f"symbols={summary.symbols} edges={summary.edges} references={summary.references} "
            f"chunks_embedded={summary.chunks_embedded} chunks_reused={summary.chunks_reused} "
            f"seconds={summary.seconds}"
        )
    if not summary.complete:
        click.echo(
            f"timed out: graph applied {summary.graph_applied}, vectors applied "
            f"{summary.vectors_applied} of {summary.published}", err=True,
        )  # fmt: skip
        sys.exit(1)


@cli.command()
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

    from patchstream.schemas.events import PatchEvent
    from patchstream.streams.producer import EventPublisher

    if sum([source is not None, from_stdin, is_delete]) != 1:
        raise click.UsageError("give exactly one of --file, --stdin or --delete")
    content = None
    if source is not None:
        content = source.read_bytes().decode("utf-8", errors="replace")
    elif from_stdin:
        content = sys.stdin.read()
    event = PatchEvent(
        tenant=tenant, repo=repo, ref=ref, path=file_path,
        op="delete" if is_delete else "upsert", content=content, version=time.time_ns(),
        source="cli", actor=actor, session_id=session, workspace=workspace,
    )  # fmt: skip

    async def send() -> None:
        async with EventPublisher(get_settings().kafka) as publisher:
            await publisher.publish([event])

    from patchstream.schemas.read_tokens import make_read_token

    gateway_settings = get_settings().gateway
    if gateway_settings.url:  # through the gateway when one is configured
        from patchstream.client import PatchClient

        with PatchClient(gateway_settings.url, gateway_settings.api_key.get_secret_value()) as c:
            write = {"repo": repo, "ref": ref, "path": file_path, "op": event.op,
                     "content": content, "session_id": session, "actor": actor,
                     "workspace": workspace}  # fmt: skip
            receipt = c.write([write])
        click.echo(json.dumps({"event_id": receipt["event_ids"][0], "key": event.key,
                               "read_token": receipt["read_token"]}))  # fmt: skip
        return
    asyncio.run(send())
    click.echo(
        json.dumps(
            {
                "event_id": event.event_id,
                "key": event.key,
                "version": event.version,
                "read_token": make_read_token([event]),
            }
        )
    )


cli.add_command(query)
cli.add_command(dlq)
cli.add_command(reconcile)
cli.add_command(run)
cli.add_command(memory)
cli.add_command(session)
cli.add_command(workspace)


def main() -> None:
    try:
        cli(standalone_mode=True)
    except PatchstreamError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
