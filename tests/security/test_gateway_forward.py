"""The query service as the server's one address (issue #36): it forwards the gateway's routes
to a real upstream over a real connection, and passes on only what a write needs."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from patchstream.config.settings import QuerySettings, Settings
from patchstream.embedded.services import free_port, port_is_open
from patchstream.query.api import create_api

SEEN: list[dict[str, object]] = []


def _upstream() -> FastAPI:
    app = FastAPI()

    @app.post("/v1/patches")
    async def patches(request: Request) -> object:
        body = await request.body()
        SEEN.append({"headers": dict(request.headers), "body": body})
        if request.headers.get("x-hub-signature-256") == "refuse":
            return json_response(429, {"detail": "over this key's rate"}, {"retry-after": "7"})
        return json_response(202, {"accepted": len(body)}, {"x-upstream-secret": "s3"})

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


def json_response(status: int, body: object, headers: dict[str, str]) -> object:
    from fastapi.responses import JSONResponse

    return JSONResponse(body, status_code=status, headers=headers)


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(_upstream(), host="127.0.0.1", port=port,
                                           log_level="warning"))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not port_is_open("127.0.0.1", port) and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def _door(upstream: str, max_body: int = 10_000) -> TestClient:
    settings = Settings(query=QuerySettings(gateway_upstream=upstream, max_body_bytes=max_body))
    return TestClient(create_api(settings), raise_server_exceptions=False)


def test_a_write_goes_on_with_its_key_and_bytes_and_nothing_else(upstream: str) -> None:
    SEEN.clear()
    body = gzip.compress(json.dumps({"writes": []}).encode())
    answer = _door(upstream).post("/v1/patches", content=body, headers={
        "Authorization": "Bearer k-1", "Content-Type": "application/json",
        "Content-Encoding": "gzip", "X-Forwarded-For": "10.9.9.9", "Cookie": "session=1",
        "X-Internal-Admin": "1", "Host": "evil.example",
    })  # fmt: skip
    assert answer.status_code == 202 and answer.json() == {"accepted": len(body)}
    assert "x-upstream-secret" not in answer.headers
    [seen] = SEEN
    assert seen["body"] == body  # the same bytes: still gzipped, inflated by the gateway
    headers = seen["headers"]
    assert isinstance(headers, dict)
    assert headers["authorization"] == "Bearer k-1" and headers["content-encoding"] == "gzip"
    for dropped in ("x-forwarded-for", "cookie", "x-internal-admin"):
        assert dropped not in headers
    assert headers["host"].startswith("127.0.0.1")


def test_the_gateways_refusal_comes_back_as_it_is(upstream: str) -> None:
    answer = _door(upstream).post("/v1/patches", content=b"{}",
                                  headers={"X-Hub-Signature-256": "refuse"})  # fmt: skip
    assert answer.status_code == 429 and answer.headers["retry-after"] == "7"


def test_a_body_over_the_limit_is_refused_at_the_door(upstream: str) -> None:
    SEEN.clear()
    answer = _door(upstream, max_body=1000).post("/v1/patches", content=b"x" * 5000)
    assert answer.status_code == 413 and SEEN == []  # never reached the gateway


def test_a_gateway_that_does_not_answer_is_a_502_without_its_address() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    answer = _door(dead).post("/v1/patches", content=b"{}")
    assert answer.status_code == 502 and "127.0.0.1" not in answer.text
    health = _door(dead).get("/v1/gateway/healthz")
    assert health.status_code == 502


def test_only_the_gateways_routes_are_forwarded(upstream: str) -> None:
    door = _door(upstream)
    assert door.get("/v1/gateway/healthz").json() == {"status": "ok"}
    assert door.post("/v1/patches/../admin", content=b"{}").status_code in (404, 405)
    assert door.get("/v1/patches").status_code == 405
    unforwarded = TestClient(create_api(Settings()), raise_server_exceptions=False)
    assert unforwarded.post("/v1/patches", content=b"{}").status_code in (404, 405)
