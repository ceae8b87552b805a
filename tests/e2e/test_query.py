"""The query service over stores filled by the real pipeline."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from patchstream.embedded.supervisor import Supervisor
from patchstream.indexing.run import index_directory
from patchstream.query.read_tokens import make_read_token
from patchstream.schemas.events import PatchEvent
from patchstream.streams.producer import EventPublisher
from tests.e2e.conftest import make_repo

FILES = {
    "billing/tax.py": (
        "def rate(country):\n    return 0.2 if country == 'FR' else 0.1\n\n\n"
        "def tax(amount, country):\n    return amount * rate(country)\n"
    ),
    "billing/invoice.py": (
        "from billing.tax import tax\n\n\n"
        "class Invoice:\n    def total(self, amount):\n"
        "        return amount + tax(amount, 'FR')\n\n\n"
        "def render(invoice):\n    return str(Invoice.total(invoice, 10))\n"
    ),
    "billing/report.py": (
        "from billing.invoice import render, Invoice\n\n\n"
        "def monthly_report():\n    return render(Invoice())\n"
    ),
    "docs/billing.md": "# Billing\n\nInvoices add tax by country.\n",
}
CANARY = "zebra_canary_91f3"


@pytest.fixture(scope="module")
def indexed(stack: Supervisor, tmp_path_factory: pytest.TempPathFactory) -> Supervisor:
    repo = make_repo(tmp_path_factory.mktemp("billing") / "billing", FILES)
    done = asyncio.run(index_directory(stack.settings, repo, repo="billing", tenant="acme",
                                       timeout_s=180, progress=False))  # fmt: skip
    assert done.complete
    other = make_repo(
        tmp_path_factory.mktemp("secret") / "secret",
        {"secret.py": f"def {CANARY}():\n    return 'tax rate {CANARY}'\n"},
    )
    done = asyncio.run(index_directory(stack.settings, other, repo="billing", tenant="default",
                                       timeout_s=180, progress=False))  # fmt: skip
    assert done.complete
    return stack


def _client(stack: Supervisor, key: str = "key-acme") -> httpx.Client:
    return httpx.Client(base_url=stack.settings.query.url,
                        headers={"Authorization": f"Bearer {key}"}, timeout=60)  # fmt: skip


def _walk(client: httpx.Client, symbol_id: str, kind: str, depth: int) -> set[tuple[str, int]]:
    response = client.get(f"/v1/symbols/{quote(symbol_id, safe='/:')}/{kind}",
                          params={"depth": depth})  # fmt: skip
    response.raise_for_status()
    return {(item["qualified_name"], item["depth"]) for item in response.json()[kind]}


def test_callers_and_impact_match_the_hand_checked_graph(indexed: Supervisor) -> None:
    with _client(indexed) as client:
        tax = "billing::billing/tax.py::tax"
        assert _walk(client, tax, "callers", 1) == {("Invoice.total", 1)}
        assert _walk(client, tax, "callers", 2) == {("Invoice.total", 1), ("render", 2)}
        assert _walk(client, "billing::billing/tax.py::rate", "impact", 5) == {
            ("tax", 1), ("Invoice.total", 2), ("render", 3), ("monthly_report", 4),
        }  # fmt: skip
        assert _walk(client, "billing::billing/report.py::monthly_report", "callees", 2) == {
            ("render", 1), ("Invoice", 1), ("Invoice.total", 2),
        }  # fmt: skip
        symbol = client.get(f"/v1/symbols/{quote(tax, safe='/:')}").json()
        assert symbol["signature"] == "def tax(amount, country)" and symbol["start_line"] == 5
        found = client.get("/v1/symbols", params={"name": "render"}).json()["symbols"]
        assert [s["id"] for s in found] == ["billing::billing/invoice.py::render"]


def test_context_fits_any_budget_and_says_where_it_came_from(indexed: Supervisor) -> None:
    rng = random.Random(7)
    with _client(indexed) as client:
        for budget in [64, 100, 250, 600, 2000, 8000, *(rng.randint(64, 3000) for _ in range(6))]:
            body = {"query": "how is tax computed for an invoice", "budget_tokens": budget,
                    "repo": "billing"}  # fmt: skip
            result = client.post("/v1/context", json=body).json()
            assert result["tokens_used"] <= budget, (budget, result["tokens_used"])
        result = client.post("/v1/context", json={"query": "tax for an invoice total",
                                                  "budget_tokens": 4000}).json()  # fmt: skip
        kinds = [b["kind"] for b in result["blocks"]]
        assert kinds[0] == "entry-code" and any(k.endswith("-signature") for k in kinds)
        first = result["blocks"][0]["provenance"]
        assert first["repo"] == "billing" and first["trust"] == "repository"
        assert first["start_line"] >= 1 and first["version"]
        assert set(result["freshness"]) >= {"graph", "vector", "as_of", "pending_events"}
        texts = [b["text"] for b in result["blocks"]]
        assert len(texts) == len(set(texts))  # nothing repeated
        prose = client.post("/v1/search", json={"query": "Invoices add tax by country"}).json()
        # tax.py shares most of these words, and RRF can tie the two: the doc must be near the top.
        top = [(h["source"], h["path"]) for h in prose["hits"][:2]]
        assert ("doc", "docs/billing.md") in top, top
        commits = client.post("/v1/search", json={"query": "commit init author"}).json()["hits"]
        assert any(h["source"] == "commit" and h["path"].startswith("_commits/") for h in commits)
        wide = client.post("/v1/context", json={"query": "invoices tax by country",
                                                "budget_tokens": 20000}).json()  # fmt: skip
        kinds = [b["kind"] for b in wide["blocks"]]
        assert "prose" in kinds and kinds.index("prose") > kinds.index("entry-code")


def test_tenant_canaries_never_cross(indexed: Supervisor) -> None:
    body_canary = f"tax rate {CANARY}"  # only inside tenant default's code, never sent by acme
    with _client(indexed) as acme, _client(indexed, "key-default") as owner:
        assert owner.post("/v1/search", json={"query": CANARY}).json()["hits"]
        searches = [
            {"query": CANARY, "limit": 100},
            {"query": CANARY, "path_prefix": ""},
            {"query": "*", "path_prefix": "%"},
            {"query": "tax rate", "repo": "billing", "limit": 100},
            {"query": "secret", "path_prefix": "secret"},
        ]
        for body in searches:
            text = acme.post("/v1/search", json=body).text
            assert "secret.py" not in text and body_canary not in text, body
        for body in ({"query": CANARY}, {"query": "tax rate", "repo": None}):
            result = acme.post("/v1/context", json={**body, "budget_tokens": 8000}).json()
            assert all(CANARY not in b["text"] for b in result["blocks"])
            assert all(b["provenance"]["path"] != "secret.py" for b in result["blocks"])
        assert acme.get("/v1/symbols", params={"name": CANARY}).json()["symbols"] == []
        secret_id = f"billing::secret.py::{CANARY}"
        assert acme.get(f"/v1/symbols/{secret_id}").status_code == 404
        for kind in ("callers", "callees", "impact"):
            assert acme.get(f"/v1/symbols/{secret_id}/{kind}").json()[kind] == []
        unauthenticated = httpx.post(f"{indexed.settings.query.url}/v1/search",
                                     json={"query": "tax"})  # fmt: skip
        assert unauthenticated.status_code == 401
        wrong = _client(indexed, "not-a-key").post("/v1/search", json={"query": "tax"})
        assert wrong.status_code == 401


def test_read_your_writes_and_session_context(indexed: Supervisor) -> None:
    new_code = "def vat_for_shipping(amount):\n    return amount * 0.055\n"
    event = PatchEvent(tenant="acme", repo="billing", path="billing/shipping.py", op="upsert",
                       content=new_code, version=time.time_ns(), source="agent",
                       session_id="sess-42")  # fmt: skip

    async def send() -> None:
        async with EventPublisher(indexed.settings.kafka) as publisher:
            await publisher.publish([event])

    asyncio.run(send())
    with _client(indexed) as client:
        waited = client.get("/v1/wait", params={"read_token": make_read_token([event]),
                                                "timeout": 60}).json()  # fmt: skip
        assert waited == {"applied": True, "graph": True, "vector": True, "writes": 1}
        hits = client.post("/v1/search", json={"query": "vat_for_shipping"}).json()["hits"]
        assert hits[0]["symbol_id"] == "billing::billing/shipping.py::vat_for_shipping"
        result = client.post("/v1/context", json={"query": "invoice tax", "session": "sess-42",
                                                  "budget_tokens": 3000}).json()  # fmt: skip
        first = result["blocks"][0]
        assert first["kind"] == "session-change" and "vat_for_shipping" in first["text"]
        assert first["provenance"]["trust"] == "agent-written"
        other = _client(indexed, "key-default").get(
            "/v1/wait", params={"read_token": make_read_token([event]), "timeout": 1}
        )
        assert other.status_code == 404


def test_mcp_tools_over_stdio(indexed: Supervisor) -> None:
    import json as jsonlib
    import os
    import sys

    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**os.environ, "PATCHSTREAM_QUERY": jsonlib.dumps(
        {"url": indexed.settings.query.url, "api_key": "key-acme"}
    )}  # fmt: skip
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "patchstream.cli.main", "mcp"], env=env)  # fmt: skip

    with _client(indexed) as http:
        run_id = http.post("/v1/runs", json={"goal": "fix tax", "repo": "billing"}).json()["run_id"]
        started = http.post(f"/v1/runs/{run_id}/transition",
                            json={"state_version": 1, "to": "RUNNING"})  # fmt: skip
        assert started.json()["status"] == "RUNNING"

    async def session() -> tuple[set[str], dict[str, object], dict[str, object], list[Any]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            tools = {tool.name for tool in (await client.list_tools()).tools}
            callers = await client.call_tool("find_callers", {"symbol": "tax", "depth": 2})
            question = {"query": "invoice tax", "budget_tokens": 500}
            context = await client.call_tool("get_context", question)
            state = [
                await client.call_tool("session_note", {"session_id": "mcp-1", "text": "t"}),
                await client.call_tool("run_checkpoint", {"run_id": run_id, "note": "n"}),
                await client.call_tool("run_resume", {"run_id": run_id}),
            ]
            return (
                tools,
                jsonlib.loads(callers.content[0].text),  # type: ignore[union-attr]
                jsonlib.loads(context.content[0].text),  # type: ignore[union-attr]
                [jsonlib.loads(s.content[0].text) for s in state],  # type: ignore[union-attr]
            )

    tools, callers, context, (note, checkpointed, resumed) = asyncio.run(session())
    assert tools == {"search_code", "get_context", "find_callers", "find_callees",
                     "impact_of_change", "get_symbol", "freshness", "run_checkpoint",
                     "run_resume", "session_note", "remember", "recall", "forget"}  # fmt: skip
    assert [i["text"] for i in note["scratchpad"]] == ["t"]
    assert checkpointed["checkpoint"]["note"] == "n"
    assert resumed["run"]["run_id"] == run_id and resumed["uncertain_actions"] == []
    found = callers["callers"]
    assert {(c["qualified_name"], c["depth"]) for c in found} == {  # type: ignore[attr-defined]
        ("Invoice.total", 1), ("render", 2),
    }  # fmt: skip
    assert 0 < context["tokens_used"] <= 500  # type: ignore[operator]
