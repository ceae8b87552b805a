"""The server's one address: the query service forwards the gateway's routes to the gateway.

A client of a shared server (``PATCHSTREAM_SERVER``) knows one URL. The gateway's four
routes (agent writes, traces and the two webhooks) arrive here and go on to the gateway
unchanged: the same bytes (a gzipped body stays gzipped), the headers that carry the
caller's key, the webhook signatures and the body's type. The gateway authenticates,
validates and answers; its status, body and ``Retry-After`` come back as they are. The
query service reads nothing of the body and holds no credential of the write side.
"""

from __future__ import annotations

import json

import httpx
from fastapi import APIRouter, Request, Response

# The routes the gateway serves (producers/gateway.py), forwarded as they are.
GATEWAY_ROUTES = ("/v1/patches", "/v1/traces", "/webhooks/github", "/webhooks/gitlab")
# What a request may carry on: the key, the webhook signatures and events, the body's type.
_FORWARDED_REQUEST = frozenset({
    "authorization", "content-type", "content-encoding", "user-agent",
    "x-github-event", "x-github-delivery", "x-hub-signature-256",
    "x-gitlab-event", "x-gitlab-token", "x-gitlab-event-uuid",
})  # fmt: skip
_FORWARDED_RESPONSE = frozenset({"content-type", "retry-after"})
GATEWAY_HEALTH = "/v1/gateway/healthz"  # the gateway's /healthz, as `status` asks for it
GATEWAY_WHOAMI = "/v1/gateway/whoami"  # the gateway's /v1/whoami: does it take this key?


def gateway_router(upstream: str, timeout_s: float = 60.0) -> tuple[APIRouter, httpx.AsyncClient]:
    """The forwarding routes, and the client they share (the caller closes it)."""
    client = httpx.AsyncClient(base_url=upstream.rstrip("/"), timeout=timeout_s)
    router = APIRouter()

    async def forward(request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() in _FORWARDED_REQUEST}
        try:
            answer = await client.post(request.url.path, content=await request.body(),
                                       headers=headers)  # fmt: skip
        except httpx.TransportError as exc:
            return _unreachable(exc)
        kept = {k: v for k, v in answer.headers.items() if k.lower() in _FORWARDED_RESPONSE}
        return Response(answer.content, status_code=answer.status_code, headers=kept)

    async def gateway_health() -> Response:
        try:
            answer = await client.get("/healthz")
        except httpx.TransportError as exc:
            return _unreachable(exc)
        return Response(answer.content, status_code=answer.status_code,
                        media_type=answer.headers.get("content-type"))  # fmt: skip

    async def gateway_whoami(request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() == "authorization"}
        try:
            answer = await client.get("/v1/whoami", headers=headers)
        except httpx.TransportError as exc:
            return _unreachable(exc)
        return Response(answer.content, status_code=answer.status_code,
                        media_type=answer.headers.get("content-type"))  # fmt: skip

    router.add_api_route(GATEWAY_WHOAMI, gateway_whoami, methods=["GET"], include_in_schema=False)
    for path in GATEWAY_ROUTES:
        router.add_api_route(path, forward, methods=["POST"], include_in_schema=False)
    router.add_api_route(GATEWAY_HEALTH, gateway_health, methods=["GET"], include_in_schema=False)
    return router, client


def _unreachable(exc: Exception) -> Response:
    """A 502 the caller may retry; it names no address (an internal one is not theirs)."""
    detail = f"the gateway did not answer ({type(exc).__name__}); retry"
    return Response(json.dumps({"detail": detail}), status_code=502, media_type="application/json")
