"""What the HTTP services (gateway, query service, MCP over HTTP) share to refuse hostile input.

- ``resolve_api_keys``: the dev key works only on a loopback bind with no keys configured; a
  non-loopback bind without real keys refuses to start.
- ``BodyLimit``: an ASGI middleware that answers 413 before a body is buffered whole, by the
  declared length or by counting what arrives.
- ``GzipRequest``: a gzip body (``Content-Encoding: gzip``) inflated with the same limit on
  what it inflates to (a bomb is a 413, a broken stream a 400, another encoding a 415).
- ``bearer_tenant``: the tenant of a bearer key, every key compared in constant time.
- ``safe_json``: JSON parsing whose nesting is bounded (deep nesting is a 400, never a 500).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from patchstream.errors import ConfigError, ContractError
from patchstream.http.key_store import KeyRing, KeyStore

DEV_API_KEY = "dev-local-key"
DEV_TENANT = "default"
MAX_JSON_DEPTH = 64

Scope = dict[str, Any]
Receive = Any
Send = Any


def is_loopback(host: str) -> bool:
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve_api_keys(
    configured: Mapping[str, str], host: str, service: str, store: KeyStore | None = None,
    agent_keys: tuple[str, ...] = (),
) -> KeyRing:  # fmt: skip
    """The keys a service that binds ``host`` accepts: ``configured`` (key -> tenant) and the
    stack's key store (``patchstream keys``).

    With neither holding a key the dev key is accepted, on loopback only. Off loopback the
    service refuses to start unless real keys exist (and the dev key is not among them).
    """
    keys = {k: v for k, v in configured.items() if k}
    loopback = is_loopback(host)
    ring = KeyRing(keys, store, agent_keys)
    if not keys and not (store is not None and ring.has_stored_keys()):
        if loopback:
            return KeyRing({DEV_API_KEY: DEV_TENANT}, store, agent_keys)
        raise ConfigError(
            f"{service} binds {host}, which is not loopback, and has no API keys; make one "
            "with `patchstream keys create --tenant T --name N`, or set "
            f"PATCHSTREAM_{service.upper()}__API_KEYS to a JSON object of key -> tenant"
        )
    if DEV_API_KEY in keys and not loopback:
        raise ConfigError(
            f"{service} binds {host}, which is not loopback, with the dev key {DEV_API_KEY!r}; "
            "replace it with a long random key"
        )
    return ring


def unauthorized(authorization: str | None) -> str:
    """Why a request got a 401: no key sent, or a key sent that no tenant holds."""
    if (
        not authorization
        or not authorization.lower().startswith("bearer ")
        or not (authorization[7:].strip())
    ):
        return "no API key sent: send Authorization: Bearer <api key>"
    return "the API key sent is not recognised (mistyped, revoked, or another server's)"


def bearer_key(authorization: str | None) -> str:
    """The key of ``Authorization: Bearer <key>``; empty when there is none."""
    if not authorization or not authorization.lower().startswith("bearer "):
        return ""
    return authorization[7:].strip()


def bearer_tenant(keys: Mapping[str, str], authorization: str | None) -> str | None:
    """The tenant of ``Authorization: Bearer <key>``, or None. Every key is compared."""
    if isinstance(keys, KeyRing):
        entry = keys.lookup(bearer_key(authorization))
        return entry.tenant if entry is not None else None
    given = bearer_key(authorization).encode()
    if not given:
        return None
    found = None
    for key, tenant in keys.items():
        if hmac.compare_digest(key.encode(), given):
            found = tenant
    return found


def _depth_ok(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return True


def safe_json(text: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` that refuses nesting deeper than ``max_depth`` with a ContractError.

    The C decoder stops very deep input itself with a RecursionError (caught here); what it
    parses is then walked without recursion, once, in time linear in its items."""
    too_deep = ContractError(f"JSON nested deeper than {max_depth} levels", code="too_deep")
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise too_deep from exc
    except ValueError as exc:
        raise ContractError(f"not JSON: {exc}", code="not_json") from exc
    if not _depth_ok(value, max_depth):
        raise too_deep
    return value


class BodyLimit:
    """ASGI middleware: 413 for a body over its route's limit, before it is read whole.

    ``limits`` maps path prefixes to byte limits (longest prefix wins); other routes get
    ``default``. A declared Content-Length over the limit is refused before reading; a chunked
    body is counted as it arrives and cut off at the limit.
    """

    def __init__(self, app: Any, default: int, limits: Sequence[tuple[str, int]] = ()) -> None:
        self.app = app
        self.default = default
        self.limits = sorted(limits, key=lambda item: -len(item[0]))

    def limit_for(self, path: str) -> int:
        return next((limit for prefix, limit in self.limits if path.startswith(prefix)),
                    self.default)  # fmt: skip

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(str(scope.get("path", "")))
        for name, value in scope.get("headers", []):
            if name == b"content-length" and (not value.isdigit() or int(value) > limit):
                await _too_large(send, limit)
                return
        received = 0
        refused = False
        answered = False

        async def counting_receive() -> dict[str, Any]:
            nonlocal received, refused
            message: dict[str, Any] = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    raise _BodyTooLargeError
            return message

        async def guarded_send(message: dict[str, Any]) -> None:
            # The app may turn the receive error into its own answer (FastAPI says 400):
            # whatever it sends after a refusal is replaced by the 413.
            nonlocal answered
            if refused:
                if not answered:
                    answered = True
                    await _too_large(send, limit)
                return
            if message["type"] == "http.response.start":
                answered = True
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not refused:
                raise
        if refused and not answered:
            await _too_large(send, limit)


class _BodyTooLargeError(Exception):
    """Raised inside the app's receive when the body passes its limit."""


async def _too_large(send: Send, limit: int) -> None:
    await _refuse(send, 413, f"request body over {limit} bytes")


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


class GzipRequest:
    """ASGI middleware: a request body sent with ``Content-Encoding: gzip`` reaches the app
    inflated, at most ``limit`` bytes of it. Placed inside ``BodyLimit``, which bounds the
    compressed bytes; this bounds what they inflate to. Only under ``prefix`` (a webhook's
    signature is over the bytes as sent)."""

    def __init__(self, app: Any, limit: int, prefix: str = "/v1/") -> None:
        self.app = app
        self.limit = limit
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        inflatable = scope["type"] == "http" and str(scope.get("path", "")).startswith(self.prefix)
        headers = scope.get("headers", []) if inflatable else []
        encoding = next((v for k, v in headers if k == b"content-encoding"), None)
        if encoding is None or encoding.strip().lower() == b"identity":
            await self.app(scope, receive, send)
            return
        if encoding.strip().lower() != b"gzip":
            await _refuse(send, 415, "only gzip request bodies are accepted")
            return
        compressed = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            compressed += message.get("body", b"")
            if not message.get("more_body", False):
                break
        inflater = zlib.decompressobj(wbits=31)
        try:
            body = inflater.decompress(bytes(compressed), self.limit + 1)
        except zlib.error:
            await _refuse(send, 400, "the gzip body is malformed")
            return
        if len(body) > self.limit or inflater.unconsumed_tail:
            await _refuse(send, 413, f"request body inflates to over {self.limit} bytes")
            return
        if not inflater.eof:
            await _refuse(send, 400, "the gzip body is truncated")
            return
        kept = [(k, v) for k, v in headers if k not in (b"content-encoding", b"content-length")]
        inner = {**scope, "headers": [*kept, (b"content-length", str(len(body)).encode())]}
        delivered = False

        async def inflated() -> dict[str, Any]:
            nonlocal delivered
            if delivered:
                return dict(await receive())
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(inner, inflated, send)
