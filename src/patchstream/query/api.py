"""The query service's HTTP API (FastAPI). Read only; every read is scoped to the tenant of
the caller's API key, resolved on the server."""

import asyncio
import hmac
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request

from patchstream import __version__
from patchstream.agent.janitor import StateJanitor
from patchstream.agent.memory_service import MemoryService
from patchstream.agent.relay import RunEventRelay
from patchstream.agent.runs import Run
from patchstream.agent.service import AgentStateService
from patchstream.bus.producer import make_producer
from patchstream.bus.topics import Topics
from patchstream.config.settings import Settings
from patchstream.errors import ContractError
from patchstream.http.errors import install_error_handlers
from patchstream.http.key_store import KeyRing
from patchstream.http.limits import KeyRateLimit
from patchstream.http.security import BodyLimit, bearer_key, bearer_tenant, unauthorized
from patchstream.metrics import Metrics
from patchstream.metrics.http import instrument
from patchstream.query.agent_api import agent_router
from patchstream.query.api_models import (
    NAME_PATTERN,
    ContextBlockOut,
    ContextRequest,
    ContextResponse,
    NameParam,
    Provenance,
    RefParam,
    SearchRequest,
    SymbolName,
    check_symbol_id,
)
from patchstream.query.freshness import flag_report, with_lags
from patchstream.query.gateway_forward import gateway_router
from patchstream.query.history_api import history_router
from patchstream.query.index_api import index_router
from patchstream.query.keys import query_keys
from patchstream.query.lag import LagProbe
from patchstream.query.memory_api import memory_router
from patchstream.query.overlay_api import overlay_router
from patchstream.query.service import QueryService
from patchstream.query.trace_api import trace_router
from patchstream.schemas.graph import CallResolution
from patchstream.schemas.read_tokens import parse_read_token
from patchstream.stores.overlay_service import OverlayService
from patchstream.stores.vector.file_ranker import shipped_ranker
from patchstream.stores.vector.search_mirror import SearchMirror

ServiceFactory = Callable[[Settings], QueryService]


def _tenant_resolver(keys: KeyRing) -> Callable[..., str]:
    def tenant(request: Request) -> str:
        found = bearer_tenant(keys, request.headers.get("authorization"))
        if not found:
            raise HTTPException(401, unauthorized(request.headers.get("authorization")))
        return found

    return tenant


def _default_factory(settings: Settings) -> QueryService:
    from patchstream.stores.factory import open_graph_store, open_vector_store
    from patchstream.stores.state.cypher import CypherAgentStateStore

    graph = open_graph_store(settings)
    service = QueryService(settings, graph, open_vector_store(settings))
    if settings.query.search_mirror:
        query = settings.query
        service.mirror = SearchMirror(service.vectors, query.search_mirror_lag_s,
                                      idle_lag_s=query.search_mirror_idle_lag_s,
                                      idle_after_s=query.search_mirror_idle_after_s,
                                      max_rows=query.search_mirror_max_rows,
                                      freeze_loaded=query.freeze_loaded_copy,
                                      ready_wait_s=query.search_copy_wait_s,
                                      ranker=shipped_ranker(settings.embedding_settings().kind)
                                      if query.learned_file_ranking
                                      else None)  # fmt: skip
        for tenant in sorted(query_keys(settings).tenants()):
            service.mirror.warm(tenant)  # load before the first search asks
    service.agent = AgentStateService(
        CypherAgentStateStore(graph),
        graph,
        session_ttl_s=settings.query.session_ttl_s,
        count_tokens=service.counter.count,
    )
    service.memory = MemoryService.open(settings, graph, service.vectors)
    return service


def create_api(
    settings: Settings,
    factory: ServiceFactory = _default_factory,
    metrics: Metrics | None = None,
) -> FastAPI:
    metrics = metrics or Metrics("query", settings.metrics)
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        state["service"] = await asyncio.to_thread(factory, settings)
        if state["service"].agent is not None:
            state["service"].agent.on_event = metrics.agent_state
        if state["service"].memory is not None:
            state["service"].memory.on_decision = lambda o: metrics.memory_decisions.labels(o).inc()
        state["lag"] = LagProbe(settings.kafka, settings.metrics.lag_refresh_s, metrics,
                                idle_ttl_s=settings.metrics.lag_idle_refresh_s)  # fmt: skip
        metrics.overlays_held([])  # the gauges exist from the start; each sweep refreshes them
        tasks = [asyncio.create_task(state["lag"].run()), asyncio.create_task(relay.run()),
                 asyncio.create_task(janitor.run())]  # fmt: skip
        yield
        for task in tasks:
            task.cancel()
        await relay.close()
        if "forward_client" in state:
            await state["forward_client"].aclose()
        if state["service"].mirror is not None:
            state["service"].mirror.close()

    app = FastAPI(title="patchstream query service", version=__version__, lifespan=lifespan)
    instrument(app, metrics)
    app.add_middleware(BodyLimit, default=settings.query.max_body_bytes)
    keys = query_keys(settings)
    app.add_middleware(KeyRateLimit, keys=keys, rate=settings.query.rate_per_key,
                       burst=settings.query.burst_per_key, service="query",
                       on_limited=lambda name: metrics.rate_limited.labels(name).inc())  # fmt: skip
    install_error_handlers(app)
    max_query = settings.query.max_query_chars

    def check_query(query: str) -> None:
        if len(query) > max_query:
            raise HTTPException(422, f"query is {len(query)} characters; the limit is {max_query}")

    tenant_of = _tenant_resolver(keys)

    def service() -> QueryService:
        return state["service"]  # type: ignore[no-any-return]

    def agent() -> AgentStateService:
        found = service().agent
        if found is None:
            raise HTTPException(503, "this query service has no agent state store")
        return found

    def memory() -> MemoryService:
        found = service().memory
        if found is None:
            raise HTTPException(503, "this query service has no memory store")
        return found

    def overlays() -> OverlayService:
        found = state.get("overlays")
        if found is None:
            found = state["overlays"] = OverlayService(
                service().graph,
                service().vectors,
                settings.query.workspace_ttl_s,
                settings.query.closed_overlay_grace_s,
                service().mirror,
            )
        return found

    janitor = StateJanitor(lambda: service().agent, lambda: service().memory,
                           settings.query.state_expiry_interval_s, overlays,
                           metrics.overlays_held)  # fmt: skip

    def state_tenant(request: Request) -> str:
        """The caller's tenant, remembered so its expired state and workspaces get swept."""
        found = tenant_of(request)
        janitor.tenants.add(found)
        return found

    Tenant = Annotated[str, Depends(state_tenant)]  # noqa: N806

    relay = RunEventRelay(agent, lambda: make_producer(settings.kafka),
                          Topics.from_settings(settings.kafka).run_events)  # fmt: skip

    async def run(fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(fn, *args)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        found = {"status": "ok", "version": __version__}
        mirror = service().mirror if "service" in state else None
        loading = mirror.loading() if mirror is not None else None
        if "service" not in state or loading:  # up, not yet answering as it will
            found["search"] = loading or "starting"
        return found

    @app.get("/v1/whoami")
    async def whoami(tenant: Tenant) -> dict[str, str]:
        """The tenant this key reads (``status`` asks: a wrong key is a 401 here), and how
        its search copy stands."""
        mirror = service().mirror
        return {"tenant": tenant, "service": "query",
                "search": mirror.state(tenant) if mirror is not None else "milvus"}  # fmt: skip

    def fallback_note(tenant: str) -> str | None:
        """Said in an answer that Milvus gave while the tenant's search copy was loading."""
        mirror = service().mirror
        copy = mirror.state(tenant) if mirror is not None else "ready"
        if copy.startswith("loading"):
            return (f"the search copy is {copy}: this answer came from Milvus and may rank "
                    "differently; ask again in a few seconds")  # fmt: skip
        return None

    @app.post("/v1/search")
    async def search(body: SearchRequest, tenant: Tenant) -> dict[str, Any]:
        """Hits, best first, and ``freshness``: the vector tier of the repository searched
        (else the best hit's), how late its hits may be."""
        check_query(body.query)
        if body.repo and body.ref and "~" in body.ref:  # a workspace never reads as its base
            await refuse_unknown(tenant, body.repo, body.ref)
        hits = await run(service().search, tenant, body.query, body.limit, body.repo, body.ref,
                         body.path_prefix, body.kind)  # fmt: skip
        if not hits and body.repo:  # nothing found: say so when nothing could be
            await refuse_unknown(tenant, body.repo, body.ref)
        answer: dict[str, Any] = {"hits": [asdict(h) for h in hits]}
        # How late the hits may be: the vector tier of the repository searched (or of the
        # best hit's), read without the graph store.
        repo = body.repo or (hits[0].repo if hits else None)
        if repo:
            ref = body.ref or (hits[0].ref if hits and hits[0].repo == repo else "main")
            tiers = await run(service().fresh.vector_tier, tenant, repo, ref)
            answer["freshness"] = {
                "repo": repo,
                "ref": ref,
                **await with_lags(tiers, state["lag"], tenant, repo),
            }
        if (note := fallback_note(tenant)) is not None:
            answer["note"] = note
        return answer

    async def refuse_unknown(tenant: str, repo: str, ref: str | None) -> None:
        why = await run(service().unknown, tenant, repo, ref)
        if why is not None:
            raise HTTPException(404, why)

    @app.get("/v1/symbols")
    async def symbols_by_name(
        tenant: Tenant,
        name: SymbolName,
        repo: NameParam | None = None,
        ref: RefParam | None = None,
    ) -> dict[str, Any]:
        found = await run(service().symbols_named, tenant, name, repo, ref)
        if not found and repo:  # "no symbol" only where there could be one
            await refuse_unknown(tenant, repo, ref)
        return {"symbols": [asdict(s) for s in found]}

    def walk_route(kind: str, default_depth: int, max_depth: int) -> None:
        async def walk(
            symbol_id: str,
            tenant: Tenant,
            depth: Annotated[int, Query(ge=1, le=max_depth)] = default_depth,
            ref: RefParam = "main",
            resolution: CallResolution = CallResolution.INFERRED,
        ) -> dict[str, Any]:
            check_symbol_id(symbol_id)
            found = await run(service().walk, tenant, kind, symbol_id, depth, ref, resolution)
            if not found and await run(service().symbol, tenant, symbol_id, ref) is None:
                await refuse_unknown(tenant, symbol_id.split("::", 1)[0], ref)
                raise HTTPException(404, f"no symbol {symbol_id!r} in its repository at {ref!r}")
            return {"symbol_id": symbol_id, "resolution": resolution.value, kind: [
                {**asdict(n.symbol), "depth": n.depth, "resolution": n.resolution}
                for n in found
            ]}  # fmt: skip

        app.get(f"/v1/symbols/{{symbol_id:path}}/{kind}", name=kind)(walk)

    walk_route("callers", 1, 2)
    walk_route("callees", 1, 2)
    walk_route("impact", 3, 5)

    @app.get("/v1/symbols/{symbol_id:path}")
    async def symbol(symbol_id: str, tenant: Tenant, ref: RefParam = "main") -> dict[str, Any]:
        check_symbol_id(symbol_id)
        found = await run(service().symbol, tenant, symbol_id, ref)
        if found is None:
            raise HTTPException(404, f"no symbol {symbol_id!r}")
        if found.kind != "file":
            return asdict(found)
        # A file says why the index holds little or nothing of it (withheld, over budget ...).
        flags = await run(service().graph.file_flags, tenant, found.repo, ref, found.path)
        return {**asdict(found), "flags": flags}

    async def freshness_of(tenant: str, repo: str | None, ref: str) -> dict[str, Any]:
        if repo:
            tiers: dict[str, Any] = await run(service().freshness, tenant, repo, ref)
        else:  # the tenant's flagged files, every repository
            flagged = await run(service().graph.flagged_files, tenant)
            tiers = {**flag_report(flagged), "as_of": time.time()}
        return await with_lags(tiers, state["lag"], tenant, repo)

    async def context_for(
        tenant: str,
        query: str,
        budget: int,
        repo: str | None,
        ref: str | None,
        session: str | None,
        run_id: str | None,
    ) -> ContextResponse:
        result = await run(service().context, tenant, query, budget, repo, ref, session, run_id)
        blocks = [
            ContextBlockOut(
                kind=b.kind, text=b.text, tokens=b.tokens, flags=b.flags,
                provenance=Provenance(
                    repo=b.repo, ref=b.ref, path=b.path, start_line=b.start_line,
                    end_line=b.end_line, symbol_ids=b.symbol_ids, version=b.version,
                    source=b.source, trust=b.trust,
                ),
            )
            for b in result.blocks
        ]  # fmt: skip
        # Without a repo filter, report the freshness of the repository the context came from.
        repo = repo or next((b.repo for b in result.blocks if b.repo), None)
        fresh = await freshness_of(tenant, repo, ref or "main")
        return ContextResponse(
            blocks=blocks, tokens_used=result.tokens_used, budget_tokens=result.budget_tokens,
            entry_points=result.entry_points, freshness=fresh,
        )  # fmt: skip

    @app.post("/v1/context", response_model=ContextResponse)
    async def context(body: ContextRequest, tenant: Tenant) -> ContextResponse:
        check_query(body.query)
        if body.repo and body.ref and "~" in body.ref:
            await refuse_unknown(tenant, body.repo, body.ref)
        found = await context_for(tenant, body.query, body.budget_tokens, body.repo, body.ref,
                                  body.session, body.run)  # fmt: skip
        if not found.blocks and body.repo:
            await refuse_unknown(tenant, body.repo, body.ref)
        if (note := fallback_note(tenant)) is not None:
            found.note = f"{found.note} Note: {note}."
        return found

    async def resume_context(tenant: str, query: str, budget: int, found: Run) -> dict[str, Any]:
        response = await context_for(tenant, query[:max_query], budget, found.repo, found.ref,
                                     found.session_id, found.run_id)  # fmt: skip
        return response.model_dump(mode="json")

    app.include_router(memory_router(state_tenant, memory, agent, keys))

    def admin(request: Request) -> None:
        entry = keys.lookup(bearer_key(request.headers.get("authorization")))
        if entry is not None and entry.role != "admin":
            raise HTTPException(
                403,
                "dropping a repository or a ref needs an admin key; "
                f"this key's role is {entry.role!r} (`patchstream keys "
                "create --role admin`, or PATCHSTREAM_QUERY__API_KEYS)",
            )

    app.include_router(overlay_router(state_tenant, overlays, admin))
    app.include_router(trace_router(state_tenant, lambda: service().graph))
    app.include_router(history_router(state_tenant, service))

    def settle(tenant: str) -> None:
        copy = service().mirror
        if copy is not None:
            copy.sync(tenant)

    app.include_router(
        index_router(state_tenant, lambda: (service().graph, service().vectors), settle)
    )
    app.include_router(agent_router(state_tenant, agent, relay.soon, resume_context))
    if settings.query.gateway_upstream:  # one address for clients: writes go on to the gateway
        forward, state["forward_client"] = gateway_router(settings.query.gateway_upstream)
        app.include_router(forward)

    @app.get("/v1/freshness")
    async def freshness(
        tenant: Tenant, repo: Annotated[str | None, Query(pattern=NAME_PATTERN)] = None,
        ref: RefParam = "main",
    ) -> dict[str, Any]:  # fmt: skip
        """One repository's tiers; without ``repo``, the tenant's flagged files (``status``)."""
        if repo is not None:  # zeros for a name nobody indexed would lie
            await refuse_unknown(tenant, repo, ref)
        return await freshness_of(tenant, repo, ref)

    @app.get("/v1/wait")
    async def wait(
        tenant: Tenant,
        read_token: Annotated[str, Query(max_length=1024 * 1024)],
        timeout: Annotated[float, Query(ge=0, le=300)] = 30.0,
    ) -> dict[str, Any]:
        try:
            token_tenant, writes = parse_read_token(
                read_token, settings.query.read_token_max_writes
            )
        except ContractError as exc:
            raise HTTPException(400, str(exc)) from exc
        if not hmac.compare_digest(token_tenant.encode(), tenant.encode()):
            raise HTTPException(404, "no such writes for this tenant")
        deadline = time.monotonic() + timeout
        pause = 0.05
        while True:
            states = [await run(service().applied, tenant, w) for w in writes]
            graph_done = all(g for g, _ in states)
            vector_done = all(v for _, v in states)
            if (graph_done and vector_done) or time.monotonic() >= deadline:
                return {"applied": graph_done and vector_done, "graph": graph_done,
                        "vector": vector_done, "writes": len(writes)}  # fmt: skip
            # Back off: a token of many writes must not poll the stores flat out.
            await asyncio.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, 1.0)

    return app


def openapi_document() -> str:
    """The API's OpenAPI document, deterministic, as checked into ``schemas/openapi.json``."""
    import json

    document = create_api(Settings()).openapi()
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def api_from_environment() -> FastAPI:
    """The app for ``uvicorn --factory`` (one per worker process), from the environment."""
    from patchstream.config.settings import get_settings

    return create_api(get_settings())
