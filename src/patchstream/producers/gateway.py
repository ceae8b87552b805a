"""The gateway: GitHub/GitLab push and discussion webhooks (issues, PR/MRs, reviews,
comments) and the agent patch API. It only writes to Kafka.

- Every body is limited (413 before it is buffered whole): webhooks 1 MiB, ``/v1/patches``
  8 MiB and each write's content at the parser's ``max_file_bytes``.
- Signatures are checked on the raw body before parsing (401 otherwise); a signed payload is
  still untrusted: ``before``/``after`` must be object ids and the branch a valid ref name
  (400 before git runs); a delivery id seen before publishes nothing new.
- A push answers 202 at once; the fetch/diff/publish runs in the background.
- ``POST /v1/patches`` answers 202 only after the broker acknowledged every event (an
  accepted request is never dropped) and returns a read token; Kafka unreachable is 503.
"""

import asyncio
import dataclasses
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from aiokafka.errors import KafkaError
from fastapi import BackgroundTasks, Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError

from patchstream import __version__
from patchstream.config.settings import Settings
from patchstream.errors import ConfigError, ContractError
from patchstream.http.errors import install_error_handlers
from patchstream.http.key_store import KeyStore, key_store_path
from patchstream.http.limits import KeyRateLimit
from patchstream.http.security import (
    BodyLimit,
    GzipRequest,
    bearer_tenant,
    resolve_api_keys,
    unauthorized,
)
from patchstream.metrics import Metrics
from patchstream.metrics.http import instrument
from patchstream.producers.discussions import (
    GITHUB_EVENTS,
    GITLAB_EVENTS,
    github_hook_pages,
    gitlab_hook_pages,
    page_events,
)
from patchstream.producers.git_mirror import validate_clone_url
from patchstream.producers.import_route import add_import_route
from patchstream.producers.outbox import Outbox, outbox_path, publish_durably
from patchstream.producers.registry import RegisteredRepo, Registry, load_registry
from patchstream.producers.webhooks import (
    Push,
    events_for_push,
    github_repo,
    github_signature_ok,
    gitlab_repo,
    gitlab_token_ok,
    mark_indexed,
    parse_json,
    read_github_push,
    read_gitlab_push,
    validate_delivery,
)
from patchstream.schemas.events import (
    ACTOR_PATTERN,
    ID_PATTERN,
    OBJECT_ID_PATTERN,
    PatchEvent,
    Source,
    WithheldContent,
)
from patchstream.schemas.read_tokens import make_read_token
from patchstream.schemas.traces import TraceEvent
from patchstream.streams.producer import EventPublisher

log = logging.getLogger("patchstream.gateway")
_SEEN_DELIVERIES = 10_000


class Write(BaseModel):
    repo: str = Field(max_length=200)
    ref: str = Field(default="main", max_length=200)
    workspace: str | None = Field(
        default=None, max_length=200, description="write into this agent workspace over ref"
    )
    path: str = Field(max_length=1024)
    op: Literal["upsert", "delete", "rename"] = "upsert"
    content: str | None = None
    withheld: WithheldContent | None = Field(
        default=None, description="no content: the file's name, flagged (too large, binary, secret)"
    )
    old_path: str | None = Field(default=None, max_length=1024)
    session_id: str | None = Field(default=None, pattern=ID_PATTERN)
    run_id: str | None = Field(default=None, pattern=ID_PATTERN)
    actor: str | None = Field(default=None, pattern=ACTOR_PATTERN)
    commit: str | None = Field(default=None, pattern=OBJECT_ID_PATTERN, description="snapshots")


class PatchRequest(BaseModel):
    writes: list[Write] = Field(min_length=1, max_length=1000)
    source: Literal["agent", "snapshot"] = Field(
        default="agent", description="'snapshot': a directory's files, as `index` sends them"
    )
    batch_id: str | None = Field(default=None, pattern=ID_PATTERN, description="one index run")


class TraceRequest(BaseModel):
    """Trace events as ``patchstream trace`` makes them; each is validated as
    ``TraceEvent`` with the key's tenant."""

    events: list[dict[str, Any]] = Field(min_length=1, max_length=1000)


class Publisher:
    """A producer started on first use and restarted after the broker comes back. With an
    outbox, events are on disk before they are published, and taken out again only when the
    broker refused them (the caller then gets a 503, or a push stays undelivered)."""

    def __init__(self, settings: Settings, metrics: Metrics, outbox: Outbox | None) -> None:
        self.settings = settings
        self.metrics = metrics
        self.outbox = outbox
        self.current: EventPublisher | None = None
        self.lock = asyncio.Lock()

    async def publish(self, events: list[PatchEvent]) -> None:
        await publish_durably(
            self.outbox,
            events,
            lambda batch: self._publish(len(batch), lambda p: p.publish(batch)),
            durable_broker=self.settings.kafka.durable,
            refused=(BrokerUnavailable,),
        )

    async def publish_traces(self, events: list[TraceEvent]) -> None:
        """Trace events go straight to the bus (no outbox: a lost trace is traced again)."""
        await self._publish(len(events), lambda p: p.publish_traces(events))

    async def _publish(self, count: int, send: Callable[[EventPublisher], Awaitable[int]]) -> None:
        async with self.lock:
            try:
                if self.current is None:
                    publisher = EventPublisher(self.settings.kafka)
                    await asyncio.wait_for(publisher.__aenter__(), timeout=10)
                    self.current = publisher
                await asyncio.wait_for(send(self.current), timeout=30)
            except (KafkaError, OSError, TimeoutError) as exc:
                # Only a broker failure closes the producer; anything else is our bug or bad
                # input and must not tear down a healthy connection.
                self.metrics.events.labels("gateway", "unavailable").inc(count)
                log.warning("event=publish_failed error=%s", type(exc).__name__)
                await self.close()
                raise BrokerUnavailable("the event bus did not acknowledge the events") from exc
            self.metrics.events.labels("gateway", "published").inc(count)

    async def close(self) -> None:
        if self.current is not None:
            publisher, self.current = self.current, None
            try:
                await publisher.__aexit__(None, None, None)
            except Exception:
                log.debug("event=publisher_close_failed")


class BrokerUnavailable(Exception):  # noqa: N818 - it is a condition, not an error of ours
    """Kafka could not take the events."""


def create_gateway(
    settings: Settings,
    registry: Registry | None = None,
    repos_dir: Path | None = None,
    metrics: Metrics | None = None,
) -> FastAPI:
    metrics = metrics or Metrics("gateway", settings.metrics)
    registry = registry or load_registry(settings.gateway.config)
    mirrors = repos_dir or Path(
        settings.pipeline.repos_dir or Path(settings.embedded.data_dir) / "mirrors"
    )
    store = KeyStore(key_store_path(Path(settings.embedded.data_dir)))
    api_keys = resolve_api_keys({**registry.api_keys, **settings.gateway.api_keys},
                                settings.gateway.host, "gateway", store)  # fmt: skip
    local_roots = settings.gateway.local_roots
    for repo in registry.repos:
        try:
            validate_clone_url(repo.clone_url, local_roots)
        except ContractError as exc:
            raise ConfigError(f"repository {repo.tenant}/{repo.name}: {exc}") from exc
    outbox = Outbox(outbox_path(settings)) if settings.gateway.outbox else None
    publisher = Publisher(settings, metrics, outbox)
    seen: OrderedDict[str, None] = OrderedDict()  # deliveries that succeeded
    in_flight: set[str] = set()
    resuming: set[int] = set()
    repo_locks: dict[tuple[str, str], asyncio.Lock] = {}

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        resumer = asyncio.create_task(resume_pushes()) if outbox is not None else None
        yield
        if resumer is not None:
            resumer.cancel()
        await publisher.close()
        if outbox is not None:
            outbox.close()

    app = FastAPI(title="patchstream gateway", version=__version__, lifespan=lifespan)
    instrument(app, metrics)
    app.add_middleware(GzipRequest, limit=settings.gateway.max_request_bytes)  # inside BodyLimit
    app.add_middleware(
        BodyLimit,
        default=settings.gateway.max_request_bytes,
        limits=[("/webhooks/", settings.gateway.max_body_bytes)],
    )
    app.add_middleware(KeyRateLimit, keys=api_keys, rate=settings.gateway.rate_per_key,
                       burst=settings.gateway.burst_per_key, service="gateway",
                       on_limited=lambda name: metrics.rate_limited.labels(name).inc())  # fmt: skip
    install_error_handlers(app)

    @app.exception_handler(BrokerUnavailable)
    async def unavailable(_request: Request, exc: BrokerUnavailable) -> JSONResponse:
        return JSONResponse({"detail": "event bus unavailable; retry later"}, status_code=503,
                            headers={"Retry-After": "5"})  # fmt: skip

    def tenant(request: Request) -> str:
        found = bearer_tenant(api_keys, request.headers.get("authorization"))
        if not found:
            raise HTTPException(401, unauthorized(request.headers.get("authorization")))
        return found

    def first_delivery(delivery: str | None) -> bool:
        """A delivery counts as seen only once it succeeded; one in flight is a duplicate."""
        if not delivery:
            return True
        if delivery in seen or delivery in in_flight:
            return False
        in_flight.add(delivery)
        return True

    def succeeded(delivery: str | None) -> None:
        if delivery:
            seen[delivery] = None
            while len(seen) > _SEEN_DELIVERIES:
                seen.popitem(last=False)

    async def run_push(push: Push) -> None:
        # One push of a repository at a time: a diff is always against what the previous push
        # indexed, never interleaved with it (interleaving produced reversed diffs).
        lock = repo_locks.setdefault((push.repo.tenant, push.repo.name), asyncio.Lock())
        try:
            async with lock:
                events, rejected = await asyncio.to_thread(events_for_push, push, mirrors,
                                                           local_roots)  # fmt: skip
                if rejected:
                    log.warning("event=paths_rejected repo=%s count=%d", push.repo.name,
                                len(rejected))  # fmt: skip
                if events:
                    await publisher.publish(events)
                # Only now, with every event acknowledged, does the indexed commit move.
                await asyncio.to_thread(mark_indexed, push, mirrors, local_roots)
            succeeded(push.delivery)
            if outbox is not None and push.accepted_id is not None:
                await asyncio.to_thread(outbox.remove_push, push.accepted_id)
            log.info("event=push_published repo=%s ref=%s events=%d", push.repo.name, push.ref,
                     len(events))  # fmt: skip
        except Exception as exc:  # the delivery stays unseen: a redelivery is processed again
            log.error("event=push_failed repo=%s ref=%s error=%s", push.repo.name, push.ref,
                      type(exc).__name__, exc_info=exc)  # fmt: skip
        finally:
            if push.delivery:
                in_flight.discard(push.delivery)

    async def accept(push: Push | None, background: BackgroundTasks) -> JSONResponse:
        if push is None:
            return JSONResponse({"status": "ignored"}, status_code=202)
        if not first_delivery(push.delivery):
            return JSONResponse({"status": "duplicate delivery"}, status_code=202)
        if outbox is not None:  # on disk before the 202: a gateway restart resumes it
            accepted = await asyncio.to_thread(
                outbox.add_push, push.repo.tenant, push.repo.name, push.ref, push.before,
                push.after, push.actor, push.source, push.delivery,
            )  # fmt: skip
            push = dataclasses.replace(push, accepted_id=accepted)
        background.add_task(run_push, push)
        return JSONResponse({"status": "accepted"}, status_code=202)

    async def resume_pushes() -> None:
        """At start and every ``push_retry_s``: run the accepted pushes that did not finish
        (the gateway died, or the broker refused them)."""
        assert outbox is not None
        backoff = 1.0
        while True:
            for row in await asyncio.to_thread(outbox.pending_pushes):
                if row.id in resuming:
                    continue
                repo = registry.find_by_name(row.tenant, row.repo)
                if repo is None:  # no longer registered: nothing to index it into
                    await asyncio.to_thread(outbox.remove_push, row.id)
                    continue
                if row.delivery:
                    in_flight.add(row.delivery)
                push = Push(repo, row.ref, row.before, row.after, row.actor,
                            "gitlab" if row.source == "gitlab" else "github", row.delivery,
                            accepted_id=row.id)  # fmt: skip
                resuming.add(row.id)
                await run_push(push)
                resuming.discard(row.id)
            # Unfinished pushes (a broker just back may refuse the first tries) are tried
            # again soon, backing off to push_retry_s.
            if await asyncio.to_thread(outbox.pending_pushes):
                await asyncio.sleep(min(backoff, settings.gateway.push_retry_s))
                backoff *= 2
            else:
                backoff = 1.0
                await asyncio.sleep(settings.gateway.push_retry_s)

    async def discussion(
        body: bytes, signer: RegisteredRepo, source: Source, event: str, delivery: str | None
    ) -> JSONResponse:
        """An issue, a PR/MR, a review or a comment: its page, published before the 202
        (no git to run, so nothing to resume: a refused publish is a 503 to redeliver)."""
        try:
            payload = parse_json(body)
            validate_delivery(delivery)
            repo = (github_repo if source == "github" else gitlab_repo)(registry, payload)
            if repo is None:
                return JSONResponse({"status": "ignored: repository not registered"},
                                    status_code=202)  # fmt: skip
            if repo is not signer:
                raise HTTPException(401, "signature does not belong to this repository")
            pages = (github_hook_pages if source == "github" else gitlab_hook_pages)(event, payload)
        except ContractError as exc:
            raise HTTPException(400, f"{event}: {exc}") from exc
        if not pages:
            return JSONResponse({"status": f"ignored {event}"}, status_code=202)
        if not first_delivery(delivery):
            return JSONResponse({"status": "duplicate delivery"}, status_code=202)
        sender = _mapping(payload.get("sender")).get("login") if source == "github" else (
            _mapping(payload.get("user")).get("username"))  # fmt: skip
        events = page_events(repo.tenant, repo.name, repo.default_branch, pages, source,
                             sender, delivery)  # fmt: skip
        try:
            await publisher.publish(events)
        finally:
            if delivery:
                in_flight.discard(delivery)
        succeeded(delivery)
        log.info("event=discussion_published repo=%s event=%s pages=%d", repo.name, event,
                 len(pages))  # fmt: skip
        return JSONResponse({"status": "accepted", "pages": [p.path for p in pages]},
                            status_code=202)  # fmt: skip

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/whoami")
    async def whoami(tenant: Annotated[str, Depends(tenant)]) -> dict[str, str]:
        """The tenant this key writes to (``status`` asks: a wrong key is a 401 here)."""
        return {"tenant": tenant, "service": "gateway"}

    @app.post("/webhooks/github")
    async def github(request: Request, background: BackgroundTasks) -> JSONResponse:
        body = await request.body()  # BodyLimit refused anything over the limit
        signature = request.headers.get("x-hub-signature-256")
        # Any registered secret may sign; the payload's repository must then match it.
        signer = next((r for r in registry.repos if github_signature_ok(
            r.webhook_secret.get_secret_value(), body, signature)), None)  # fmt: skip
        if signer is None:
            raise HTTPException(401, "missing or invalid X-Hub-Signature-256")
        event = request.headers.get("x-github-event", "")
        if event == "ping":
            return JSONResponse({"status": "pong"}, status_code=202)
        if event in GITHUB_EVENTS:
            return await discussion(body, signer, "github", event,
                                    request.headers.get("x-github-delivery"))  # fmt: skip
        if event != "push":
            return JSONResponse({"status": f"ignored {event or 'unknown'} event"}, status_code=202)
        try:
            payload = parse_json(body)
            push = read_github_push(registry, payload, request.headers.get("x-github-delivery"))
        except ContractError as exc:
            raise HTTPException(400, str(exc)) from exc
        if push is not None and push.repo is not signer:
            raise HTTPException(401, "signature does not belong to this repository")
        return await accept(push, background)

    @app.post("/webhooks/gitlab")
    async def gitlab(request: Request, background: BackgroundTasks) -> JSONResponse:
        body = await request.body()  # BodyLimit refused anything over the limit
        token = request.headers.get("x-gitlab-token")
        signers = [r for r in registry.repos
                   if gitlab_token_ok(r.webhook_secret.get_secret_value(), token)]  # fmt: skip
        signer = signers[0] if signers else None
        if signer is None:
            raise HTTPException(401, "missing or invalid X-Gitlab-Token")
        event = request.headers.get("x-gitlab-event", "")
        delivery = request.headers.get("x-gitlab-event-uuid") or request.headers.get(
            "idempotency-key"
        )
        if event in GITLAB_EVENTS:
            return await discussion(body, signer, "gitlab", event, delivery)
        if event != "Push Hook":
            return JSONResponse({"status": "ignored"}, status_code=202)
        try:
            payload = parse_json(body)
            push = read_gitlab_push(registry, payload, delivery)
        except ContractError as exc:
            raise HTTPException(400, str(exc)) from exc
        if push is not None and push.repo is not signer:
            raise HTTPException(401, "token does not belong to this repository")
        return await accept(push, background)

    @app.post("/v1/patches", status_code=202)
    async def patches(
        body: PatchRequest, tenant: Annotated[str, Depends(tenant)]
    ) -> dict[str, Any]:
        version = time.time_ns()
        events = []
        max_file_bytes = settings.parsing.max_file_bytes
        for index, write in enumerate(body.writes):
            if write.content is not None and len(write.content) > max_file_bytes // 4:
                size = _utf8_size(write.content, index)
                if size > max_file_bytes:
                    raise HTTPException(413, f"writes[{index}] ({write.path[:200]!r}): content "
                                             f"is {size} bytes; the limit per file is "
                                             f"{max_file_bytes}: send it as withheld "
                                             "(too_large)")  # fmt: skip
            try:
                events.append(PatchEvent(
                    tenant=tenant, repo=write.repo, ref=write.ref, workspace=write.workspace,
                    path=write.path, op=write.op,
                    content=write.content, withheld=write.withheld, old_path=write.old_path,
                    version=version + index,
                    source=body.source, actor=write.actor, session_id=write.session_id,
                    run_id=write.run_id, batch_id=body.batch_id, commit=write.commit,
                ))  # fmt: skip
            except ValidationError as exc:
                error = exc.errors()[0]
                where = ".".join(str(part) for part in error["loc"])
                raise HTTPException(422, f"writes[{index}].{where}: {error['msg']}") from exc
        await publisher.publish(events)
        return {"event_ids": [e.event_id for e in events], "read_token": make_read_token(events),
                "version": version, "tenant": tenant}  # fmt: skip

    add_import_route(app, tenant, publisher.publish)

    @app.post("/v1/traces", status_code=202)
    async def traces(body: TraceRequest, tenant: Annotated[str, Depends(tenant)]) -> dict[str, Any]:
        events = []
        for index, raw in enumerate(body.events):
            if raw.get("tenant", tenant) != tenant:
                raise HTTPException(403, f"events[{index}].tenant is not this key's tenant")
            try:
                events.append(TraceEvent.model_validate({**raw, "tenant": tenant}))
            except ValidationError as exc:
                error = exc.errors()[0]
                where = ".".join(str(part) for part in error["loc"])
                raise HTTPException(422, f"events[{index}].{where}: {error['msg']}") from exc
        await publisher.publish_traces(events)
        return {"event_ids": [e.event_id for e in events]}

    return app


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _utf8_size(text: str, index: int) -> int:
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise HTTPException(422, f"writes[{index}].content is not valid UTF-8 text") from exc


def gateway_from_environment() -> FastAPI:
    """The app for ``uvicorn --factory`` (one per worker process), from the environment."""
    from patchstream.config.settings import get_settings

    return create_gateway(get_settings())
