"""Rules of the HTTP services, in-process: keys by bind address, body limits, error bodies."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI, HTTPException, Request
from fastapi.testclient import TestClient

from patchstream.config.settings import EmbeddedSettings, GatewaySettings, QuerySettings, Settings
from patchstream.errors import ConfigError
from patchstream.http.errors import install_error_handlers
from patchstream.http.limits import TokenBuckets
from patchstream.http.security import (
    DEV_API_KEY,
    BodyLimit,
    GzipRequest,
    bearer_tenant,
    resolve_api_keys,
)
from patchstream.producers.gateway import create_gateway
from patchstream.producers.import_route import add_import_route
from patchstream.producers.registry import Registry
from patchstream.query.api import create_api
from patchstream.schemas.events import PatchEvent


def test_the_dev_key_works_only_on_loopback_with_no_keys_configured() -> None:
    assert resolve_api_keys({}, "127.0.0.1", "query") == {DEV_API_KEY: "default"}
    assert resolve_api_keys({}, "::1", "query") == {DEV_API_KEY: "default"}
    assert resolve_api_keys({"k": "acme"}, "127.0.0.1", "query") == {"k": "acme"}
    with pytest.raises(ConfigError, match="no API keys"):
        resolve_api_keys({}, "0.0.0.0", "query")
    with pytest.raises(ConfigError, match="dev key"):
        resolve_api_keys({DEV_API_KEY: "default", "k": "acme"}, "10.0.0.5", "gateway")
    with pytest.raises(ConfigError):
        create_api(Settings(query=QuerySettings(host="0.0.0.0")))  # refuses to start


def test_bearer_keys_compare_every_key() -> None:
    keys = {"a-key": "acme", "g-key": "globex"}
    assert bearer_tenant(keys, "Bearer g-key") == "globex"
    for header in (None, "", "Bearer ", "Basic g-key", "Bearer g-ke", "Bearer g-key\x00"):
        assert bearer_tenant(keys, header) is None


def _app(limit: int) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)
    app.add_middleware(BodyLimit, default=limit, limits=[("/small/", 8)])

    @app.post("/echo")
    async def echo(body: dict[str, str]) -> dict[str, str]:
        return body

    @app.post("/small/x")
    async def small(body: dict[str, str]) -> dict[str, str]:
        return body

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("password=hunter2 at /srv/secret/path")

    return app


def test_bodies_over_the_limit_are_413_and_errors_do_not_echo_internals() -> None:
    client = TestClient(_app(64), raise_server_exceptions=False)
    assert client.post("/echo", json={"a": "b"}).json() == {"a": "b"}
    assert client.post("/echo", json={"a": "b" * 100}).status_code == 413
    assert client.post("/small/x", json={"a": "bbbbbbbb"}).status_code == 413

    def stream() -> object:  # chunked: no Content-Length, counted as it arrives
        yield b'{"a": "'
        yield b"b" * 200
        yield b'"}'

    assert client.post("/echo", content=stream()).status_code == 413  # type: ignore[arg-type]
    response = client.get("/boom")
    assert response.status_code == 500
    assert "hunter2" not in response.text and "secret" not in response.text


@pytest.mark.parametrize("service", ["query-service", "gateway"])
def test_services_refuse_to_start_off_loopback_without_keys(service: str) -> None:
    import os
    import subprocess
    import sys

    section = "QUERY" if service == "query-service" else "GATEWAY"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    env[f"PATCHSTREAM_{section}__HOST"] = "0.0.0.0"
    env[f"PATCHSTREAM_{section}__PORT"] = "1"  # never reached: it must refuse first
    done = subprocess.run([sys.executable, "-m", "patchstream.cli.main", service], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode != 0
    assert "refusing to start" in done.stderr and f"PATCHSTREAM_{section}__API_KEYS" in done.stderr
    env[f"PATCHSTREAM_{section}__API_KEYS"] = '{"dev-local-key": "default"}'
    done = subprocess.run([sys.executable, "-m", "patchstream.cli.main", service], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode != 0 and "dev key" in done.stderr


def test_token_buckets_admit_a_burst_then_the_rate() -> None:
    now = [0.0]
    buckets = TokenBuckets(rate=2.0, burst=3, clock=lambda: now[0])
    assert [buckets.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("a") == pytest.approx(0.5)  # one token every half second
    assert buckets.take("b") == 0.0  # a bucket per key
    now[0] = 0.5
    assert buckets.take("a") == 0.0 and buckets.take("a") > 0


@pytest.mark.parametrize("service", ["query", "gateway"])
def test_a_key_over_its_rate_gets_429_with_retry_after_and_others_go_on(
    service: str, tmp_path: Path
) -> None:
    """Per-key limits (issue #36): the third request of a key allowed a burst of two is a 429
    before any route runs; another key and requests without a key are not held back; the
    refusal and the metric name the key by tenant and fingerprint, never the key."""
    keys = {"secret-key-ACME-0001": "acme", "secret-key-GLOBEX-02": "globex"}
    limits = {"api_keys": keys, "rate_per_key": 0.01, "burst_per_key": 2}
    if service == "query":
        app = create_api(Settings(query=QuerySettings(**limits)))
    else:
        settings = Settings(gateway=GatewaySettings(**limits),
                            embedded=EmbeddedSettings(data_dir=str(tmp_path)))  # fmt: skip
        app = create_gateway(settings, Registry(), tmp_path)
    client = TestClient(app)  # no lifespan: no store is opened, /healthz needs none
    acme = {"Authorization": "Bearer secret-key-ACME-0001"}
    assert [client.get("/healthz", headers=acme).status_code for _ in range(2)] == [200, 200]
    refused = client.get("/healthz", headers=acme)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "secret-key" not in refused.text
    globex = {"Authorization": "Bearer secret-key-GLOBEX-02"}
    assert client.get("/healthz", headers=globex).status_code == 200
    assert client.get("/healthz").status_code == 200  # no key: not this limit's business
    exported = client.get("/metrics").text
    assert 'patchstream_http_rate_limited_total{client="acme/k-' in exported
    assert "secret-key" not in exported


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"repo": "r", "paths": ["../etc/passwd"]}, "'..'"),
        ({"repo": "r", "paths": [".git/config"]}, ".git"),
        ({"repo": "r", "paths": ["a\x1b[2J.py"]}, "control character"),
        ({"repo": "a/../b", "paths": ["a.py"]}, "'..'"),
        ({"repo": "r", "ref": "main\n", "paths": ["a.py"]}, "pattern"),
        ({"repo": "r", "paths": []}, "at least 1"),
        ({"repo": "r", "paths": ["a.py"] * 10_001}, "at most 10000"),
    ],
)  # fmt: skip
def test_the_trace_status_route_refuses_hostile_bodies_before_any_store(
    body: dict[str, object], reason: str
) -> None:
    """``POST /v1/traces/status`` (``patchstream trace`` waits on it): every path is a
    repository path, names are names, and the list is bounded; refused with 422 before the
    graph is read (this app has no store at all)."""
    client = TestClient(create_api(Settings()), raise_server_exceptions=False)
    answer = client.post("/v1/traces/status", json=body,
                         headers={"Authorization": "Bearer dev-local-key"})  # fmt: skip
    assert answer.status_code == 422
    assert reason in answer.text


@pytest.mark.parametrize(
    ("route", "params", "reason"),
    [
        ("/v1/files", {"repo": "a/../b"}, "'..'"),
        ("/v1/files", {"repo": "r", "ref": "main\n"}, "pattern"),
        ("/v1/files", {"repo": "r", "after": "a\x1b[2J"}, "pattern"),
        ("/v1/files", {"repo": "r", "after": "a" * 1025}, "at most 1024"),
        ("/v1/files", {"repo": "r", "limit": "0"}, "greater than or equal to 1"),
        ("/v1/files", {"repo": "r", "limit": "10001"}, "less than or equal to 10000"),
        ("/v1/files", {"repo": "r", "ref": "main~a/../b"}, "'..'"),
        ("/v1/index/progress", {"repo": "r", "since": "-1"}, "greater than or equal to 0"),
        ("/v1/index/progress", {"repo": "r", "since": str(2**64)}, "less than or equal"),
        ("/v1/index/progress", {"repo": "r"}, "since"),
    ],
)  # fmt: skip
def test_the_remote_index_routes_refuse_hostile_parameters_before_any_store(
    route: str, params: dict[str, str], reason: str
) -> None:
    """The routes a remote ``patchstream index`` reads (issue #36): names are names, the
    page cursor is a bounded path without control characters, and page sizes and versions
    are bounded; 422 before any store is read (this app has none)."""
    client = TestClient(create_api(Settings()), raise_server_exceptions=False)
    answer = client.get(route, params=params, headers={"Authorization": "Bearer dev-local-key"})
    assert answer.status_code == 422, answer.text
    assert reason in answer.text


def _inflating_app(limit: int) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)
    app.add_middleware(GzipRequest, limit=limit)
    app.add_middleware(BodyLimit, default=limit)

    @app.post("/v1/echo")
    async def echo(body: dict[str, str]) -> dict[str, str]:
        return body

    @app.post("/webhooks/raw")
    async def raw(request: Request) -> dict[str, int]:
        return {"bytes": len(await request.body())}

    return app


def test_gzip_bodies_are_inflated_within_the_limit_and_bombs_are_413() -> None:
    """Remote ``index`` uploads gzipped (issue #36). What a body inflates to is bounded like
    the body itself: a 64 KiB gzip of 64 MiB of zeros is a 413, not 64 MiB in memory."""
    import gzip
    import json

    client = TestClient(_inflating_app(1024), raise_server_exceptions=False)
    packed = {"content-type": "application/json", "content-encoding": "gzip"}
    ok = client.post("/v1/echo", content=gzip.compress(json.dumps({"a": "b" * 900}).encode()),
                     headers=packed)  # fmt: skip
    assert ok.status_code == 200 and ok.json() == {"a": "b" * 900}
    bomb = gzip.compress(b"\0" * (64 << 20))
    assert len(bomb) < 128 << 10
    big = TestClient(_inflating_app(len(bomb) + 1), raise_server_exceptions=False)
    answer = big.post("/v1/echo", content=bomb, headers=packed)
    assert answer.status_code == 413 and "inflates to over" in answer.text
    over = client.post("/v1/echo", content=gzip.compress(json.dumps({"a": "b" * 2000}).encode()),
                       headers=packed)  # fmt: skip
    assert over.status_code == 413
    broken = client.post("/v1/echo", content=b"\x1f\x8b not gzip at all", headers=packed)
    assert broken.status_code == 400 and "malformed" in broken.text
    cut = gzip.compress(json.dumps({"a": "b"}).encode())[:-6]
    assert client.post("/v1/echo", content=cut, headers=packed).status_code == 400
    other = client.post("/v1/echo", content=b"{}", headers={**packed, "content-encoding": "br"})
    assert other.status_code == 415
    # A webhook's signature is over the bytes as sent: they reach it as sent.
    raw = client.post("/webhooks/raw", content=gzip.compress(b"x" * 100), headers=packed)
    assert raw.status_code == 200 and raw.json()["bytes"] < 100


def _import_app(published: list[PatchEvent]) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    def tenant(request: Request) -> str:
        found = bearer_tenant({"k": "acme"}, request.headers.get("authorization"))
        if not found:
            raise HTTPException(401, "no key")
        return found

    async def publish(events: list[PatchEvent]) -> None:  # what the broker would be sent
        published.extend(events)

    add_import_route(app, tenant, publish)
    return app


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"repo": "a/../b", "lines": ["{}"]}, "'..'"),
        ({"repo": "r", "ref": "main\n", "lines": ["{}"]}, "ref"),
        ({"repo": "r", "lines": []}, "at least 1"),
        ({"repo": "r", "lines": ["{}"] * 1001}, "at most 1000"),
        ({"repo": "r", "lines": ["{}"], "pull_numbers": [-1]}, "greater than or equal to 1"),
        ({"repo": "r", "lines": ["{}"], "first_line": 0}, "greater than or equal to 1"),
        ({"repo": "r", "lines": [1]}, "string"),
    ],
)  # fmt: skip
def test_the_discussions_import_route_refuses_hostile_bodies(
    body: dict[str, object], reason: str
) -> None:
    published: list[PatchEvent] = []
    client = TestClient(_import_app(published), raise_server_exceptions=False)
    answer = client.post("/v1/discussions", json=body, headers={"Authorization": "Bearer k"})
    assert answer.status_code == 422, answer.text
    assert reason in answer.text
    assert published == []


def test_the_discussions_import_route_reads_lines_as_a_local_import_would() -> None:
    """The key's tenant, the platform's versions, bad lines reported by their number in the
    whole export (a deep or non-JSON line never stops the rest), no key no import."""
    published: list[PatchEvent] = []
    client = TestClient(_import_app(published), raise_server_exceptions=False)
    lines = [
        '{"number": 9, "title": "t\\u202e", "updated_at": "2026-03-01T00:00:00Z"}',
        '{"id": 4, "issue_url": "https://x/issues/8", "body": "on a PR",'
        ' "updated_at": "2026-03-02T00:00:00Z"}',
        "[" * 5000 + "]" * 5000,
        "{not json",
    ]
    body = {"repo": "shop", "lines": lines, "first_line": 501, "pull_numbers": [8],
            "tenant": "other"}  # fmt: skip
    assert client.post("/v1/discussions", json=body).status_code == 401
    answer = client.post("/v1/discussions", json=body, headers={"Authorization": "Bearer k"})
    assert answer.status_code == 202, answer.text
    found = answer.json()
    assert (found["pages"], found["threads"], found["notes"], found["failed"]) == (2, 1, 1, 2)
    assert [e["line"] for e in found["errors"]] == [503, 504]
    assert {(e.tenant, e.path, e.version) for e in published} == {
        ("acme", "_discussions/issue-9.md", 1_772_323_200 * 10**9),
        ("acme", "_discussions/pr-8/comment-4.md", 1_772_409_600 * 10**9),
    }
