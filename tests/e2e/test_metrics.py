"""Metrics of the running embedded stack, scraped by a real Prometheus (Debian's package).

After real traffic (an indexing run, agent writes through the gateway, malformed events,
queries, refused requests), every metric the dashboards and alert rules use is served by the
processes, and every dashboard query returns data from Prometheus.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from patchstream.embedded.services import free_port, port_is_open
from patchstream.embedded.supervisor import Supervisor
from patchstream.indexing.run import index_directory
from patchstream.streams.producer import EventPublisher
from tests.e2e.conftest import make_repo, wait_for
from tests.promql import (
    DASHBOARDS,
    alert_queries,
    dashboard_queries,
    for_prometheus,
    metric_names,
)

GATEWAY_KEY = "dev-local-key"  # the stack's gateway has no config file: the embedded default
QUERY_KEY = "key-acme"
UTIL = "def helper(x):\n    return x + 1\n\n\ndef caller():\n    return helper(1)\n"


@pytest.fixture(scope="module")
def prometheus(stack: Supervisor, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Prometheus scraping every process of the stack each second, with the alert rules."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus is not installed: `make test` installs Debian's package"
    root = tmp_path_factory.mktemp("prometheus")
    targets = stack.data_dir / "prometheus" / "targets.json"
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(DASHBOARDS / "alerts.yml")],
        "scrape_configs": [
            {"job_name": "patchstream",
             "file_sd_configs": [{"files": [str(targets)], "refresh_interval": "5s"}]},
        ],
    }  # fmt: skip
    (root / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = (root / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [binary, f"--config.file={root / 'prometheus.yml'}", f"--storage.tsdb.path={root / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(url), timeout=60, what="prometheus to be ready")
        yield url
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/-/ready", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _query(url: str, expr: str) -> list[dict[str, object]]:
    body = httpx.get(f"{url}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert body["status"] == "success", f"{expr}: {body}"
    return body["data"]["result"]  # type: ignore[no-any-return]


def _traffic(stack: Supervisor, round_: int) -> None:
    """One round of everything the dashboards show: writes, a DLQ message, queries, errors."""
    settings = stack.settings
    gateway = httpx.Client(base_url=settings.gateway.url, timeout=60)
    query = httpx.Client(base_url=settings.query.url, timeout=60,
                         headers={"Authorization": f"Bearer {QUERY_KEY}"})  # fmt: skip
    with gateway, query:
        content = UTIL.replace("x + 1", f"x + {round_ + 10}")
        written = gateway.post("/v1/patches", headers={"Authorization": f"Bearer {GATEWAY_KEY}"},
                               json={"writes": [{"repo": "agent-repo", "path": "util.py",
                                                 "content": content}]})  # fmt: skip
        assert written.status_code == 202, written.text
        token = written.json()["read_token"]
        assert gateway.post("/v1/patches", json={"writes": []}).status_code == 401
        assert query.post("/v1/search", json={"query": "helper"}).status_code == 200
        assert query.post("/v1/context", json={"query": "helper caller"}).status_code == 200
        assert query.get("/v1/freshness", params={"repo": "metrics-repo"}).status_code == 200
        assert httpx.post(f"{settings.query.url}/v1/search", json={"query": "x"}).status_code == 401
        run = query.post("/v1/runs", json={"goal": "g"}).json()
        stale = {"state_version": 1, "to": "RUNNING"}
        assert query.post(f"/v1/runs/{run['run_id']}/transition", json=stale).status_code == 200
        assert query.post(f"/v1/runs/{run['run_id']}/transition", json=stale).status_code == 409
        illegal = {"state_version": 2, "events": [{"type": "ApprovalGranted", "approval_id": "x"}]}
        assert query.post(f"/v1/runs/{run['run_id']}/events", json=illegal).status_code == 409
        assert query.get(f"/v1/runs/{run['run_id']}/resume").status_code == 200
        remembered = query.post("/v1/memory/proposals", json={
            "scope": "project", "owner": "metrics-repo", "content": f"helper adds {round_}",
            "memory_type": "fact", "source": {"kind": "agent"},
            "subject": {"kind": "repo", "id": "metrics-repo"}})  # fmt: skip
        assert remembered.status_code == 201, remembered.text
        default = {"Authorization": "Bearer key-default"}
        waited = query.get("/v1/wait", params={"read_token": token, "timeout": 60}, headers=default)
        assert waited.status_code == 200 and waited.json()["applied"], waited.text

    async def malformed() -> None:
        async with EventPublisher(settings.kafka) as publisher:
            await publisher.publish_raw(b"bad", b"{not json")

    asyncio.run(malformed())


def _scrape_all(stack: Supervisor) -> dict[str, str]:
    """Every target of the file_sd list, read again at each try: a child restarted on a new
    port (its first was taken before it bound it) is scraped where it now listens."""
    texts: dict[str, str] = {}

    def scraped() -> bool:
        texts.clear()
        targets = json.loads((stack.data_dir / "prometheus" / "targets.json").read_text())
        for group in targets:
            for address in group["targets"]:
                try:
                    answer = httpx.get(f"http://{address}/metrics", timeout=10)
                except httpx.TransportError:
                    return False
                texts[group["labels"]["process"]] = answer.text
        return True

    wait_for(scraped, 60, "every /metrics target answering")
    return texts


def test_metrics_dashboards_and_alerts_against_real_prometheus(
    stack: Supervisor, prometheus: str, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "metrics-repo", {"util.py": UTIL, "README.md": "# metrics\n"})
    summary = asyncio.run(
        index_directory(
            stack.settings, repo, repo="metrics-repo", tenant="acme", timeout_s=180, progress=False
        )
    )
    assert summary.complete
    _traffic(stack, 1)
    time.sleep(3)  # Prometheus scrapes every second: the counters now exist in its samples
    _traffic(stack, 2)

    # Every process serves /metrics, and between them every metric the ops files use.
    texts = _scrape_all(stack)
    workers = stack.settings.embedded.parse_workers
    parsers = {f"parse-{i}" for i in range(workers)}
    assert set(texts) == {*parsers, "graph-sink", "vector-sink", "query", "gateway"}
    for process, text in texts.items():
        service = "parse" if process in parsers else process
        assert f'service="{service}"' in text, f"{process}: no build_info"
    served = "\n".join(texts.values())
    used = {name for _, expr in dashboard_queries() + alert_queries()
            for name in metric_names(expr)}  # fmt: skip
    missing = {n for n in used if not re.search(rf"^{n}(\{{| )", served, re.MULTILINE)}
    assert not missing, f"used by dashboards or alerts but not served: {sorted(missing)}"
    parse_texts = "\n".join(texts[name] for name in parsers)  # whichever owns the partition
    assert re.search(r'patchstream_dlq_messages_total\{reason="not_json",stage="parse"\} [1-9]',
                     parse_texts)  # fmt: skip
    assert re.search(r'patchstream_sync_lag_seconds_count\{repo="metrics-repo",sink="graph",'
                     r'tenant="acme"\} [1-9]', texts["graph-sink"])  # fmt: skip

    # Prometheus: every target up, every dashboard query returns data.
    def all_up() -> bool:
        up = _query(prometheus, 'up{job="patchstream"}')
        expected = 4 + workers
        return len(up) == expected and all(r["value"][1] == "1" for r in up)  # type: ignore[index]

    wait_for(all_up, timeout=30, what="prometheus to scrape every process")
    time.sleep(3)
    empty = []
    for title, expr in dashboard_queries():
        result = _query(prometheus, for_prometheus(expr, window="1m"))
        values = [float(r["value"][1]) for r in result]  # type: ignore[index]
        if not any(math.isfinite(v) for v in values):
            empty.append(f"{title}: {expr} -> {result}")
    assert not empty, "dashboard queries without data:\n" + "\n".join(empty)

    # The alert rules loaded into this Prometheus and evaluate without errors.
    def rules_evaluated() -> list[dict[str, object]]:
        groups = httpx.get(f"{prometheus}/api/v1/rules", timeout=10).json()["data"]["groups"]
        return [rule for group in groups for rule in group["rules"]]

    def evaluated() -> bool:
        return all(str(r.get("lastEvaluation", "")).startswith("20") for r in rules_evaluated())

    wait_for(evaluated, timeout=30, what="rules to be evaluated")
    rules = rules_evaluated()
    assert {r["name"] for r in rules} == {name for name, _ in alert_queries()}
    assert all(r["health"] == "ok" for r in rules), rules


def test_query_service_workers_share_their_metrics(stack: Supervisor, tmp_path: Path) -> None:
    """``query-service --workers 2``: whichever worker answers a scrape reports every request."""
    port = free_port()
    env = {**stack.environment(), "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "multiproc")}
    section = json.loads(env["PATCHSTREAM_QUERY"])
    env["PATCHSTREAM_QUERY"] = json.dumps({**section, "port": port})
    log = (tmp_path / "query.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "patchstream.cli.main", "query-service", "--workers", "2"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        wait_for(lambda: port_is_open("127.0.0.1", port), timeout=60, what="query workers")
        base = f"http://127.0.0.1:{port}"
        assert len(list((tmp_path / "multiproc").glob("*.db"))) >= 2  # one file per worker
        for _ in range(40):  # new connections: the kernel spreads them over the workers
            assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200
        pattern = re.compile(r'patchstream_http_request_seconds_count\{endpoint="/healthz",'
                             r'method="GET",service="query",status="200"\} (\S+)')  # fmt: skip
        for _ in range(6):
            found = pattern.search(httpx.get(f"{base}/metrics", timeout=10).text)
            assert found and float(found.group(1)) == 40
    finally:
        os.killpg(process.pid, 15)
        process.wait(30)
        log.close()
