"""Hostile input against the running stack: gateway, query service, MCP over HTTP, the Claude
Code hook, and what the backing services expose. Every test feeds what an attacker would send
and asserts the refusal (and that nothing happened)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from falkordb import FalkorDB
from redis.exceptions import AuthenticationError, ResponseError

from patchstream.config.settings import (
    EmbeddedSettings,
    EmbeddingSettings,
    GatewaySettings,
    GraphSettings,
    KafkaSettings,
    ParsingSettings,
    QuerySettings,
    Settings,
)
from patchstream.embedded.services import free_port, port_is_open
from patchstream.embedded.supervisor import Supervisor
from tests.e2e.conftest import running_on_free_ports, wait_for
from tests.e2e.test_gateway import _push_payload, _signed, git

SECRET = "s3cret-sec"
MAX_FILE = 64 * 1024
MAX_REQUEST = 256 * 1024


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("sec-origin") / "shop"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "app.py").write_text("def main():\n    return 1\n")
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    return repo


@pytest.fixture(scope="module")
def sec_stack(origin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    root = tmp_path_factory.mktemp("sec")
    config = root / "gateway.toml"
    config.write_text(
        f'[[repos]]\ntenant = "acme"\nname = "shop"\nclone_url = "file://{origin}"\n'
        f'webhook_secret = "{SECRET}"\nlocal_path = "{origin}"\n\n'
        '[api_keys]\n"agent-key" = "acme"\n'
    )

    def settings() -> Settings:
        return Settings(
            embedded=EmbeddedSettings(data_dir=str(root / "data"), kafka_port=free_port(),
                                      falkordb_port=free_port(), milvus_port=free_port(),
                                      metrics_port=0),
            kafka=KafkaSettings(topic_prefix=f"sec{uuid.uuid4().hex[:6]}.", partitions=2),
            parsing=ParsingSettings(max_file_bytes=MAX_FILE),
            graph=GraphSettings(query_timeout_ms=3000),
            embedding=EmbeddingSettings(openai_api_key="sk-never-leaves-the-query-side"),
            query=QuerySettings(port=free_port(), api_keys={"agent-key": "acme", "other": "globex"},
                                api_key="agent-key", max_body_bytes=MAX_REQUEST,
                                read_token_max_writes=50),
            gateway=GatewaySettings(port=free_port(), config=str(config),
                                    local_roots=[str(origin.parent)],
                                    max_request_bytes=MAX_REQUEST),
        )  # fmt: skip

    with running_on_free_ports(settings) as supervisor:
        yield supervisor


def _webhook(stack: Supervisor, body: bytes, delivery: str, **headers: str) -> httpx.Response:
    sent = {"X-GitHub-Event": "push", "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": _signed(body, SECRET), **headers}  # fmt: skip
    return httpx.post(f"{stack.settings.gateway.url}/webhooks/github", content=body,
                      headers=sent, timeout=30)  # fmt: skip


def test_signed_push_with_option_shaped_shas_is_refused_and_writes_nothing(
    sec_stack: Supervisor, origin: Path, tmp_path: Path
) -> None:
    head = git(origin, "rev-parse", "HEAD")
    target = tmp_path / "site" / "zz.pth"
    target.parent.mkdir()
    for before, after in ((head, f"--output={target}"), (f"--output={target}", head),
                          ("0" * 40, f"-o{target}"), (head, head + "\n")):  # fmt: skip
        body = _push_payload(origin, before, after)
        response = _webhook(sec_stack, body, f"rce-{uuid.uuid4().hex}")
        assert response.status_code == 400, (before, after, response.text)
        assert "object id" in response.json()["detail"]
    body = _push_payload(origin, "0" * 40, head, ref="refs/heads/a..b")
    assert _webhook(sec_stack, body, "bad-ref").status_code == 400
    body = _push_payload(origin, "0" * 40, head)
    assert _webhook(sec_stack, body, "bad id;$(touch x)").status_code == 400
    time.sleep(1)  # a background job, had one been accepted, would have run by now
    assert not target.exists()
    # The honest push still works.
    assert _webhook(sec_stack, body, "honest-1").status_code == 202


def test_webhook_bodies_deep_json_and_chunked_oversize(sec_stack: Supervisor, origin: Path) -> None:
    deep = b'{"a":' * 20_000 + b"1" + b"}" * 20_000
    response = _webhook(sec_stack, deep, "deep-1")
    assert response.status_code == 400 and "nested" in response.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(40):
            yield b" " * 64 * 1024

    url = f"{sec_stack.settings.gateway.url}/webhooks/github"
    headers = {"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + "0" * 64}
    response = httpx.post(url, content=chunks(), headers=headers, timeout=30)
    assert response.status_code == 413


def _patch(stack: Supervisor, body: object, key: str = "agent-key") -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{stack.settings.gateway.url}/v1/patches", content=content, timeout=30,
                      headers={"Authorization": f"Bearer {key}",
                               "Content-Type": "application/json"})  # fmt: skip


def test_agent_patch_api_refuses_hostile_writes(sec_stack: Supervisor) -> None:
    def write(**fields: object) -> dict[str, object]:
        return {"writes": [{"repo": "shop", "path": "a.py", "content": "x = 1\n", **fields}]}

    assert _patch(sec_stack, write()).status_code == 202
    assert _patch(sec_stack, write(), key="dev-local-key").status_code == 401
    refused_422 = [
        write(session_id="s\x00"), write(session_id="s" * 200), write(run_id="r\nx"),
        write(actor="a\x1b[2J"), write(path="a\x07.py"), write(path="../x.py"),
        write(repo="shop/../other"), write(ref="main\n"), write(path=".git/config"),
    ]  # fmt: skip
    for body in refused_422:
        response = _patch(sec_stack, body)
        assert response.status_code == 422, (body, response.text)
    # A lone surrogate in content or path (valid JSON, invalid UTF-8 text) is 422, not 503.
    for field in ("content", "path"):
        raw = json.dumps(write()).replace('"x = 1\\n"' if field == "content" else '"a.py"',
                                          '"\\ud800"').encode()  # fmt: skip
        response = _patch(sec_stack, raw)
        assert response.status_code == 422, (field, response.text)
    # Size: one write over the parser's cap, and a request over the request cap.
    too_big = _patch(sec_stack, write(content="x" * (MAX_FILE + 1)))
    assert too_big.status_code == 413 and "limit per file" in too_big.json()["detail"]
    many = {"writes": [{"repo": "shop", "path": f"f{i}.py", "content": "y" * 60_000}
                       for i in range(5)]}  # fmt: skip
    assert _patch(sec_stack, many).status_code == 413
    # The producer survived all of that: an honest write is still acknowledged.
    assert _patch(sec_stack, write(path="after.py")).status_code == 202


def _query(
    stack: Supervisor,
    method: str,
    path: str,
    key: str = "agent-key",
    headers_extra: dict[str, str] | None = None,
    **kwargs: Any,
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}", **(headers_extra or {})}
    return httpx.request(method, f"{stack.settings.query.url}{path}", timeout=30,
                         headers=headers, **kwargs)  # fmt: skip


def test_query_service_refuses_hostile_reads(sec_stack: Supervisor) -> None:
    ok = _query(sec_stack, "POST", "/v1/search", json={"query": "main"})
    assert ok.status_code == 200
    # A repository nothing was indexed for is a 404 that says so (issue #36), never a 500.
    unknown = _query(sec_stack, "POST", "/v1/search", json={"query": "main", "repo": "nope"})
    assert unknown.status_code == 404 and "no repository 'nope'" in unknown.text, unknown.text
    assert _query(sec_stack, "POST", "/v1/search", key="dev-local-key",
                  json={"query": "main"}).status_code == 401  # fmt: skip
    hostile = [
        {"query": "x" * 40_000}, {"query": "main\x1b[2J"}, {"query": "a\x00b\nc"},
        {"query": "main", "repo": 'shop" or tenant != "'},
        {"query": "main", "repo": "shop\n"}, {"query": "main", "path_prefix": "src/\x00"},
        {"query": "main", "kind": "function or 1"},
    ]  # fmt: skip
    for body in hostile:
        response = _query(sec_stack, "POST", "/v1/search", json=body)
        assert response.status_code == 422, (body, response.text)
    issue = (
        "main() fails when called twice\n\n```python\n>>> main()\n```\n\tTraceback "
        '(most recent call last):\r\n  File "a.py", line 3, in main\n'
    ) * 60
    for route in ("/v1/search", "/v1/context"):  # an issue pasted whole, 9k characters
        response = _query(sec_stack, "POST", route, json={"query": issue})
        assert response.status_code == 200, (route, response.text)
    surrogate = b'{"query": "\\ud800 main"}'  # valid JSON, not valid UTF-8 text
    response = _query(sec_stack, "POST", "/v1/search", content=surrogate,
                      headers_extra={"Content-Type": "application/json"})  # fmt: skip
    assert response.status_code == 422, response.text
    response = _query(sec_stack, "POST", "/v1/context",
                      json={"query": "main", "session": "s\x00"})  # fmt: skip
    assert response.status_code == 422
    big = {"query": "main", "repo": "shop", "pad": "x" * (MAX_REQUEST + 1)}
    assert _query(sec_stack, "POST", "/v1/search", json=big).status_code == 413
    for path in ("/v1/symbols/shop::a.py::main%1b/callers", "/v1/symbols/x%00"):
        assert _query(sec_stack, "GET", path).status_code == 422
    assert _query(sec_stack, "GET", "/v1/freshness", params={"repo": "a\nb"}).status_code == 422


def test_read_tokens_are_bounded(sec_stack: Supervisor) -> None:
    import base64

    def token(payload: bytes) -> str:
        return base64.urlsafe_b64encode(payload).decode().rstrip("=")

    deep = token(b'{"t":"acme","w":' + b"[" * 5000 + b"]" * 5000 + b"}")
    many = token(json.dumps({"t": "acme", "w": [["shop", "main", f"f{i}", 1]
                                                  for i in range(51)]}).encode())  # fmt: skip
    for value in (deep, many, "!!!", token(b"[1]")):
        response = _query(sec_stack, "GET", "/v1/wait", params={"read_token": value})
        assert response.status_code == 400, response.text
        assert "Traceback" not in response.text


def test_mcp_over_http_requires_a_bearer_key_of_its_tenant(sec_stack: Supervisor) -> None:
    port = free_port()
    query = {"url": sec_stack.settings.query.url, "api_key": "agent-key",
             "api_keys": {"agent-key": "acme", "other": "globex"}}  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    env["PATCHSTREAM_QUERY"] = json.dumps(query)
    command = [sys.executable, "-m", "patchstream.cli.main", "mcp", "--transport",
               "streamable-http", "--port", str(port)]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not port_is_open("127.0.0.1", port):
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "MCP server did not listen"
            time.sleep(0.2)
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
        base = {"Accept": "application/json, text/event-stream",
                "Content-Type": "application/json"}  # fmt: skip
        url = f"http://127.0.0.1:{port}/mcp"

        def post(key: str | None) -> httpx.Response:
            headers = {**base, **({"Authorization": f"Bearer {key}"} if key else {})}
            return httpx.post(url, json=initialize, headers=headers, timeout=30)

        assert post(None).status_code == 401
        assert post("dev-local-key").status_code == 401
        assert post("other").status_code == 403  # another tenant's key
        accepted = post("agent-key")
        assert accepted.status_code == 200 and "patchstream" in accepted.text
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(15)


def _hook(
    stack: Supervisor, origin: Path, relative: str, state_home: Path | None = None
) -> subprocess.CompletedProcess[str]:
    hook_input = json.dumps({"session_id": "cc-1", "tool_name": "Write", "cwd": str(origin),
                             "tool_input": {"file_path": relative}})  # fmt: skip
    gateway = {"url": stack.settings.gateway.url, "api_key": "agent-key",
               "config": stack.settings.gateway.config}  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM_")}
    env["PATCHSTREAM_GATEWAY"] = json.dumps(gateway)
    env["PATCHSTREAM_PARSING"] = json.dumps({"max_file_bytes": MAX_FILE})
    if state_home is not None:  # where `index` recorded the checkouts
        env["XDG_STATE_HOME"] = str(state_home)
    command = [sys.executable, "-m", "patchstream.cli.main", "hook", "claude-code"]
    return subprocess.run(command, input=hook_input, env=env, capture_output=True, text=True,
                          timeout=30)  # fmt: skip


def test_claude_code_hook_publishes_only_what_may_leave_the_machine(
    sec_stack: Supervisor, origin: Path, tmp_path: Path
) -> None:
    (origin / ".env.local").write_text("API_KEY=hunter2\n")
    (origin / "server.pem").write_text("-----BEGIN " + "PRIVATE KEY-----\nhunter3\n")
    (origin / "id_ed25519").write_text("key hunter4\n")
    (origin / "build").mkdir(exist_ok=True)
    (origin / "build" / "gen.py").write_text("x = 1\n")
    (origin / "huge.py").write_text("x = 1\n" * (MAX_FILE // 4))
    outside = tmp_path / "elsewhere"
    subprocess.run(["git", "init", "-q", str(outside)], check=True)
    (outside / "mine.py").write_text("y = 2\n")
    skipped = {"build/gen.py": "ignored by git", str(outside / "mine.py"): "is in no indexed "
               "checkout"}  # fmt: skip
    for relative, reason in skipped.items():
        done = _hook(sec_stack, origin, relative)
        assert done.returncode == 0
        assert "skipped" in done.stderr and reason in done.stderr, (relative, done.stderr)
        assert "published" not in done.stderr
    # Keys and oversized files go as their names only, flagged: the index learns why it has
    # nothing of them, and drops what it held before.
    withheld = {".env.local": "secret", "server.pem": "secret", "id_ed25519": "secret",
                "huge.py": "too_large"}  # fmt: skip
    for relative, reason in withheld.items():
        done = _hook(sec_stack, origin, relative)
        assert done.returncode == 0 and f"withheld {relative}" in done.stderr, done.stderr
        assert f"flagged {reason}" in done.stderr and "published 1 write" in done.stderr

    def flagged() -> dict[str, list[str]]:
        answer = _query(sec_stack, "GET", "/v1/freshness", params={"repo": "shop"}).json()
        return {f["path"]: f["flags"] for f in answer.get("flagged_files", [])}

    wait_for(lambda: {p: [r] for p, r in withheld.items()}.items() <= flagged().items(),
             timeout=120, what="the withheld files as flagged names")  # fmt: skip
    found = _query(sec_stack, "POST", "/v1/search", json={"query": "hunter2 hunter3 hunter4"})
    assert found.status_code == 200 and "hunter" not in found.text  # no content went
    # A checkouts record another user may write would say where this user's edits go: the
    # hook refuses it, and publishes nothing, rather than read it.
    state = tmp_path / "state"
    (state / "patchstream").mkdir(parents=True)
    record = state / "patchstream" / "checkouts.json"
    record.write_text(json.dumps([{"root": str(outside), "repo": "shop", "ref": "main"}]))
    record.chmod(0o666)
    done = _hook(sec_stack, origin, str(outside / "mine.py"), state_home=state)
    assert done.returncode == 0 and "another user may write it" in done.stderr, done.stderr
    assert "published 1 write" not in done.stderr
    (origin / "fine.py").write_text("def fine():\n    return 1\n")
    done = _hook(sec_stack, origin, "fine.py")
    assert done.returncode == 0 and "published 1 write" in done.stderr


def test_backing_services_are_loopback_with_a_password_and_a_query_timeout(
    sec_stack: Supervisor,
) -> None:
    assert {s.host for s in sec_stack.services} == {"127.0.0.1"}
    data = Path(sec_stack.settings.embedded.data_dir)
    password_file = data / "falkordb" / "password"
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    port = sec_stack.settings.embedded.falkordb_port
    with pytest.raises((AuthenticationError, ResponseError)):
        FalkorDB(host="127.0.0.1", port=port).connection.ping()
    authed = FalkorDB(host="127.0.0.1", port=port, password=password_file.read_text().strip())
    config = authed.connection.execute_command("GRAPH.CONFIG", "GET", "TIMEOUT_DEFAULT")
    assert int(config[1]) == 3000
    authed.connection.close()


def test_children_get_only_the_settings_they_need(sec_stack: Supervisor) -> None:
    def environ(name: str) -> str:
        worker = next(w for w in sec_stack.workers if w.name == name)
        assert worker.process is not None
        return Path(f"/proc/{worker.process.pid}/environ").read_bytes().decode(errors="replace")

    for name in ("gateway", "parse-0", "graph-sink"):
        assert "sk-never-leaves-the-query-side" not in environ(name), name
        assert "PATCHSTREAM_EMBEDDING=" not in environ(name)
    assert "PATCHSTREAM_QUERY=" not in environ("gateway")
    assert "PATCHSTREAM_GATEWAY=" not in environ("query")
    assert "sk-never-leaves-the-query-side" in environ("query")  # the one that may embed


def test_a_store_that_does_not_answer_is_a_503_naming_it(sec_stack: Supervisor) -> None:
    falkordb = next(s for s in sec_stack.services if s.name == "falkordb")
    falkordb.stop()
    try:
        response = _query(sec_stack, "GET", "/v1/freshness", params={"repo": "shop"})
        assert response.status_code == 503, response.text
        assert response.json()["store"] == "falkordb"
        assert "Error" not in response.text  # no driver text in the body
    finally:
        sec_stack.check()  # the supervisor restarts it
    wait_for(lambda: _query(sec_stack, "GET", "/v1/freshness",
                            params={"repo": "shop"}).status_code == 200,
             what="freshness after the restart")  # fmt: skip
