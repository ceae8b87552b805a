"""``patchstream`` command line entry point."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from patchstream import __version__
from patchstream.cli.lazy import LazyGroup
from patchstream.config.client_profile import use_client_profile
from patchstream.config.settings import get_settings
from patchstream.config.stack_registry import follow_the_running_stack
from patchstream.errors import ConfigError, PatchstreamError
from patchstream.logs import configure_logging
from patchstream.system.heap_trim import start_heap_trim

if TYPE_CHECKING:
    from patchstream.schemas.state import FileDelta

# Commands whose modules are imported when they run (``cli.lazy``).
LAZY_COMMANDS = {
    "query": "patchstream.cli.query:query", "index": "patchstream.cli.writes:index",
    "emit": "patchstream.cli.writes:emit", "schemas": "patchstream.cli.contracts:schemas",
    "openapi": "patchstream.cli.contracts:openapi",
    "docs-reference": "patchstream.cli.contracts:docs_reference",
    "dlq": "patchstream.cli.dlq:dlq", "reconcile": "patchstream.cli.reconcile:reconcile",
    "run": "patchstream.cli.runs:run", "session": "patchstream.cli.runs:session",
    "memory": "patchstream.cli.memory:memory", "workspace": "patchstream.cli.workspace:workspace",
    "repo": "patchstream.cli.repos:repo", "trace": "patchstream.cli.trace:trace",
    "watch": "patchstream.cli.watch:watch", "import": "patchstream.cli.imports:import_group",
    "keys": "patchstream.cli.keys:keys",
}  # fmt: skip

# Commands that are clients of a server: with PATCHSTREAM_SERVER (or a profile) they reach it
# at one URL with one key. Services, workers and operator commands keep their own settings.
CLIENT_COMMANDS = frozenset({"query", "index", "emit", "run", "session", "memory", "workspace",
                             "repo", "status", "mcp", "trace", "hook", "watch",
                             "import"})  # fmt: skip


@click.group(cls=LazyGroup, lazy=LAZY_COMMANDS)
@click.version_option(__version__, prog_name="patchstream")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Keep coding agents' knowledge of codebases correct and fresh.

    A client of a shared server needs only PATCHSTREAM_SERVER and PATCHSTREAM_API_KEY (or
    `server` and `api_key` in ~/.config/patchstream/client.toml, mode 0600)."""
    if ctx.invoked_subcommand in CLIENT_COMMANDS | {"reconcile", "dlq", "keys"}:
        follow_the_running_stack()  # its data dir, from any working directory
    if ctx.invoked_subcommand in CLIENT_COMMANDS:
        use_client_profile()
    elif ctx.invoked_subcommand in ("reconcile", "dlq", "keys") and get_settings().server:
        raise click.UsageError(f"`{ctx.invoked_subcommand}` is an operator command: it works "
                               "on the server's data dir (its broker, stores and keys), so it "
                               "runs beside the server, not as a client of "
                               "PATCHSTREAM_SERVER")  # fmt: skip


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
    from patchstream.parsing.delta import compute_delta
    from patchstream.parsing.filestate import FileRef, FileStateBuilder

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
    stores, the query service and the gateway, and (embedded stack) every worker and sink.
    As a client of a server (PATCHSTREAM_REMOTE=1), the query service and the gateway only,
    each asked over HTTP with its key."""
    from patchstream.config.stack_registry import LOCK_NAME, holder
    from patchstream.embedded.probes import unix_socket_accepts
    from patchstream.embedded.services import port_is_open
    from patchstream.stores.factory import milvus_uri

    settings = get_settings()
    if settings.remote:
        sys.exit(_server_status(settings, quiet))
    milvus = milvus_uri(settings).split("://", 1)[-1]
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
    healthy, width = True, max(22, *(len(address) for address in targets.values()))
    data_dir = Path(settings.embedded.data_dir).resolve()
    if (data_dir / LOCK_NAME).exists() and not quiet:  # an embedded stack ran here
        pid = holder(data_dir)  # the `up` running on it, if any
        where = f"{data_dir} (pid {pid})" if pid else f"{data_dir} (no `up` on it)"
        click.echo(f"{'stack':<12} {where:<{width}} {'up' if pid else 'DOWN'}")
    for name, address in targets.items():
        if address.startswith("unix:"):  # the embedded Milvus
            up_now = unix_socket_accepts(address.removeprefix("unix:"))
        else:
            host, _, port = address.rpartition(":")
            up_now = port_is_open(host, int(port))
        healthy &= up_now
        said = "up" if up_now else "DOWN"
        if up_now and name == "query":  # up, but is it answering as it will?
            said += _search_copy(settings.query.url)
        if not quiet:
            click.echo(f"{name:<12} {address:<{width}} {said}")
    if healthy and not quiet:
        from patchstream.cli.query import tenant_flagged_line
        from patchstream.query.client import QueryClient

        with contextlib.closing(QueryClient(settings.query, timeout_s=10)) as client:
            click.echo(tenant_flagged_line(client))
    sys.exit(0 if healthy else 1)


def _search_copy(url: str) -> str:
    """`` (search copy loading 45%)`` while the query service's copy loads; else nothing."""
    import httpx

    try:
        loading = httpx.get(f"{url.rstrip('/')}/healthz", timeout=5).json().get("search")
    except (httpx.HTTPError, ValueError):
        return ""
    return f" (search copy {loading})" if loading else ""


def _server_status(settings: Any, quiet: bool) -> int:
    """0 when the server's query service and gateway answer /healthz with their keys."""
    import httpx

    from patchstream.cli.errors import answer_exit_code
    from patchstream.query.client import error_line
    from patchstream.query.gateway_forward import GATEWAY_HEALTH, GATEWAY_WHOAMI

    code = 0
    for name, section in (("query", settings.query), ("gateway", settings.gateway)):
        headers = {"Authorization": f"Bearer {section.api_key.get_secret_value()}"}
        forwarded = name == "gateway" and section.url == settings.query.url  # one server URL
        base = section.url.rstrip("/")
        try:
            answer = httpx.get(f"{base}{GATEWAY_HEALTH if forwarded else '/healthz'}",
                               timeout=10)  # fmt: skip
            if answer.status_code != 200:
                state, failed = f"answered {answer.status_code}", 1
            else:  # up: does it take the key?
                answer = httpx.get(f"{base}{GATEWAY_WHOAMI if forwarded else '/v1/whoami'}",
                                   timeout=10, headers=headers)  # fmt: skip
                if answer.status_code == 200:
                    said = answer.json()
                    copy = str(said.get("search", "ready"))
                    loading = f", search copy {copy}" if copy.startswith("loading") else ""
                    state, failed = f"up, tenant {said.get('tenant')}{loading}", 0
                else:
                    failed = answer_exit_code(answer.status_code)
                    state = f"up, key refused ({error_line(answer.status_code, answer.text)})"
        except httpx.HTTPError as exc:
            state, failed = f"DOWN ({type(exc).__name__})", 1
        code = code or failed
        if not quiet:
            click.echo(f"{name:<12} {section.url:<40} {state}")
    return code


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
    from patchstream.http.security import resolve_api_keys

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
    start_heap_trim()
    settings = get_settings()
    refuse_unsafe_keys(settings.query.api_keys, settings.query.host, "query")
    serve_http("patchstream.query.api:api_from_environment", settings.query.host,
               settings.query.port, workers)  # fmt: skip


@cli.command()
@click.option("--transport", type=click.Choice(["stdio", "streamable-http"]), default="stdio",
              show_default=True)  # fmt: skip
@click.option("--port", type=int, default=None, help="For streamable-http (query.mcp_port).")
def mcp(transport: str, port: int | None) -> None:
    """Serve the query tools to MCP clients (Claude Code, Cursor). Over HTTP every request
    needs a bearer key of the query service (same tenant as PATCHSTREAM_QUERY__API_KEY).

    \b
    Tools: search_code, get_context, find_callers, find_callees, impact_of_change,
    get_symbol, history, freshness, run_checkpoint, run_resume, session_note, remember,
    recall, forget (docs/getting-started/agents.md says what each answers)."""
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
    start_heap_trim()  # a batch's freed pages back to the kernel (``system/heap_trim``)
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

    from patchstream.bus.topics import ensure_topics

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
    from patchstream.consumers.sinks import GraphSink, TraceSink, VectorSink
    from patchstream.metrics import Metrics
    from patchstream.metrics.http import serve_metrics
    from patchstream.stores.factory import open_graph_store, open_vector_store

    configure_logging()
    start_heap_trim()
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
    runners = [SinkRunner(kind, settings, apply, metrics=metrics, store=store,
                          finish_fetch=finish)]  # fmt: skip
    if isinstance(apply, GraphSink):  # runtime edges are the graph's: same process, own group
        from patchstream.bus.topics import Topics
        from patchstream.streams.codec import decode_trace

        runners.append(SinkRunner(
            "trace", settings, TraceSink(apply.store), metrics=metrics, store=store,
            topic=Topics.from_settings(settings.kafka).trace_events, decode=decode_trace,
        ))  # fmt: skip

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await asyncio.gather(*(runner.run(stop) for runner in runners))

    asyncio.run(run())


def main() -> None:
    try:
        code = cli(standalone_mode=False)
    except click.UsageError as exc:  # one line and where to read more, not the whole usage
        where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        click.echo(f"Error: {exc.format_message()}{where}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        sys.exit(1)
    except PatchstreamError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
