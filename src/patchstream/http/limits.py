"""Per-key rate limits for the HTTP services: one client cannot starve the others.

Each API key gets a token bucket (``rate`` requests a second, bursts of ``burst``); a request
over it is a 429 with ``Retry-After``, before any work. Logs and metrics name a key by its
tenant and a fingerprint (``acme/k-3f9a1c2e``), never by the key itself. Requests without a
valid key are not counted here: they are refused with a 401 by the route, at no cost.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from patchstream.http.key_store import KeyRing
from patchstream.http.security import bearer_key

log = logging.getLogger(__name__)


class TokenBuckets:
    """A bucket per name; thread-safe (sync routes run in a thread pool)."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic):
        self.rate = rate
        self.burst = max(1, burst)
        self.clock = clock
        self.lock = threading.Lock()
        self.buckets: dict[str, tuple[float, float]] = {}  # name -> (tokens, at)

    def take(self, name: str) -> float:
        """0 when admitted; otherwise the seconds until a token is there."""
        now = self.clock()
        with self.lock:
            tokens, at = self.buckets.get(name, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens >= 1:
                self.buckets[name] = (tokens - 1, now)
                return 0.0
            self.buckets[name] = (tokens, now)
            return (1 - tokens) / self.rate


class KeyRateLimit:
    """ASGI middleware: a 429 for a key over its rate. ``rate`` 0 turns it off."""

    def __init__(
        self,
        app: Any,
        keys: Mapping[str, str],
        rate: float,
        burst: int,
        service: str,
        on_limited: Callable[[str], None] | None = None,
    ) -> None:
        self.app = app
        self.keys = keys if isinstance(keys, KeyRing) else KeyRing(keys)
        self.buckets = TokenBuckets(rate, burst) if rate > 0 else None
        self.service = service
        self.on_limited = on_limited

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.buckets is None or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        name = self._name(scope)
        wait = self.buckets.take(name) if name is not None else 0.0
        if wait <= 0:
            await self.app(scope, receive, send)
            return
        assert name is not None
        if self.on_limited is not None:
            self.on_limited(name)
        log.warning("event=rate_limited service=%s client=%s", self.service, name)
        retry = max(1, math.ceil(wait))
        rate, burst = self.buckets.rate, self.buckets.burst
        detail = f"over this key's rate ({rate:g} requests/s, bursts of {burst}); retry after"
        body = json.dumps({"detail": f"{detail} {retry} s"})
        await send({"type": "http.response.start", "status": 429,
                    "headers": [(b"content-type", b"application/json"),
                                (b"retry-after", str(retry).encode())]})  # fmt: skip
        await send({"type": "http.response.body", "body": body.encode()})

    def _name(self, scope: dict[str, Any]) -> str | None:
        headers = dict(scope.get("headers") or [])
        header = headers.get(b"authorization", b"").decode("latin-1")
        entry = self.keys.lookup(bearer_key(header))
        return entry.name if entry is not None else None
