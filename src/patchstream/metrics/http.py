"""Serving ``/metrics``: a route for the FastAPI services, a small server for the others,
and the middleware that times every request."""

from __future__ import annotations

import logging
import time
from typing import Any

from fastapi import FastAPI, Response
from prometheus_client import start_http_server

from patchstream.metrics.registry import CONTENT_TYPE, Metrics

log = logging.getLogger("patchstream.metrics")

Scope = dict[str, Any]
Receive = Any
Send = Any


class RequestTimer:
    """ASGI middleware: request seconds by route template (not raw path: bounded labels)."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_recording(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_recording)
        finally:
            route = scope.get("route")
            endpoint = getattr(route, "path", None) or "unmatched"
            if endpoint != "/metrics":
                self.metrics.http_seconds.labels(
                    self.metrics.service, endpoint, scope.get("method", ""), str(status)
                ).observe(time.perf_counter() - started)


def instrument(app: FastAPI, metrics: Metrics) -> None:
    """Time every request and serve ``GET /metrics`` (no API key: it is scraped)."""
    app.add_middleware(RequestTimer, metrics=metrics)

    @app.get("/metrics", include_in_schema=False)
    async def metrics_endpoint() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)


def serve_metrics(metrics: Metrics) -> int | None:
    """For processes without an HTTP API: serve ``/metrics`` on the configured port."""
    settings = metrics.settings
    if not settings.enabled or not settings.port:
        return None
    start_http_server(settings.port, settings.host, registry=metrics.exposition_registry())
    log.info("event=metrics_listening host=%s port=%d", settings.host, settings.port)
    return settings.port
