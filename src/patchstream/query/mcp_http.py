"""MCP over streamable HTTP, behind the query service's API keys.

stdio needs no key (the client started the process); over HTTP every request must carry
``Authorization: Bearer <key>`` of the same tenant as the key this server forwards to the query
service, so a caller never reads another tenant's code through it. Bodies are limited.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from patchstream.config.settings import Settings
from patchstream.http.limits import KeyRateLimit
from patchstream.http.security import BodyLimit, bearer_tenant, unauthorized
from patchstream.query.keys import query_keys
from patchstream.query.mcp_server import create_mcp_server

Scope = dict[str, Any]
Receive = Any
Send = Any


class BearerAuth:
    """ASGI middleware: 401 without a known bearer key, 403 for another tenant's key."""

    def __init__(self, app: Any, keys: Mapping[str, str], tenant: str) -> None:
        self.app = app
        self.keys = keys
        self.tenant = tenant

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        raw = headers.get(b"authorization", b"").decode("latin-1")
        found = bearer_tenant(self.keys, raw)
        if found is None:
            await _refuse(send, 401, unauthorized(raw))
        elif found != self.tenant:
            await _refuse(send, 403, "this MCP server serves another tenant")
        else:
            await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def mcp_http_app(settings: Settings, host: str, max_body_bytes: int = 1024 * 1024) -> Any:
    """The authenticated streamable-HTTP MCP app (refuses to build without usable keys)."""
    keys = query_keys(settings, host)
    own = bearer_tenant(keys, f"Bearer {settings.query.api_key.get_secret_value()}")
    if own is None:
        from patchstream.errors import ConfigError

        raise ConfigError("PATCHSTREAM_QUERY__API_KEY is not one of the query service's API keys")
    app = create_mcp_server(settings).streamable_http_app(host=host)
    limited = KeyRateLimit(BearerAuth(app, keys, own), keys, settings.query.rate_per_key,
                           settings.query.burst_per_key, "mcp")  # fmt: skip
    return BodyLimit(limited, default=max_body_bytes)


def serve_mcp_http(settings: Settings, host: str, port: int) -> None:
    import uvicorn

    uvicorn.run(mcp_http_app(settings, host), host=host, port=port, log_level="warning")
