"""The operations files against the real tools: Debian's docker-compose and promtool.

Both are installed by ``make test``; a missing tool fails the run, it is never skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from patchstream.config.settings import Settings
from patchstream.http.security import resolve_api_keys
from tests.promql import DASHBOARDS, alert_queries, dashboard_queries

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose"


def _tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is not installed: run `make test`, which installs it (Debian package)"
    return found


def _compose_config(env_file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_tool("docker-compose"), "-f", str(COMPOSE / "compose.yaml"), "--env-file",
         str(env_file), "config"],
        capture_output=True, text=True, check=False, cwd=COMPOSE,
    )  # fmt: skip


def test_compose_file_validates_with_the_example_environment() -> None:
    result = _compose_config(COMPOSE / ".env.example")
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)
    services = config["services"]
    wanted = {"kafka", "topics", "memgraph", "etcd", "minio", "milvus", "prometheus", "grafana",
              "gateway", "parse-worker", "graph-sink", "vector-sink", "query"}  # fmt: skip
    assert wanted <= set(services)
    assert services["parse-worker"]["deploy"]["replicas"] == 2
    for name in wanted - {"topics"}:
        assert "healthcheck" in services[name], f"{name} has no healthcheck"
    for name in ("kafka", "memgraph", "milvus", "etcd", "minio", "prometheus", "grafana"):
        sources = {str(v).split(":")[0] for v in services[name]["volumes"]}
        assert f"{name}-data" in sources, f"{name} keeps its data in the named volume"
    assert {f"{n}-data" for n in ("kafka", "milvus", "grafana")} <= set(config["volumes"])
    # Every patchstream service reads its settings from this environment: they must parse.
    for name in ("gateway", "parse-worker", "graph-sink", "vector-sink", "query", "topics"):
        env = services[name]["environment"]
        assert services[name]["build"]["dockerfile"] == "Dockerfile"
        settings = _settings_from(env)
        assert settings.kafka.bootstrap == "kafka:9092"
        assert settings.graph.backend == "memgraph"
        assert settings.vector.milvus_uri == "http://milvus:19530"
        assert settings.metrics.port == 9100 and settings.metrics.host == "0.0.0.0"
        assert "dev-local-key" not in settings.query.api_keys
    # Both HTTP services bind 0.0.0.0 in compose: they must start with real keys from .env.
    gateway = _settings_from(services["gateway"]["environment"])
    assert resolve_api_keys(gateway.gateway.api_keys, gateway.gateway.host, "gateway") == {
        "replace-with-another-long-random-key": "default"
    }
    query = _settings_from(services["query"]["environment"])
    assert "dev-local-key" not in resolve_api_keys(query.query.api_keys, query.query.host, "query")


def _settings_from(env: dict[str, str]) -> Settings:
    code = (
        "import json, sys; from patchstream.config.settings import Settings; "
        "sys.stdout.write(Settings().model_dump_json())"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTREAM")}
    out = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    return Settings.model_validate(json.loads(out))


def test_compose_refuses_to_start_without_its_secrets(tmp_path: Path) -> None:
    empty = tmp_path / "empty.env"
    empty.write_text("")
    result = _compose_config(empty)
    assert result.returncode != 0
    assert "MINIO_ROOT_USER" in result.stderr or "PATCHSTREAM_QUERY_API_KEYS" in result.stderr


def test_compose_gateway_requires_its_api_keys(tmp_path: Path) -> None:
    env = tmp_path / "no-gateway-keys.env"
    lines = (COMPOSE / ".env.example").read_text().splitlines()
    env.write_text("\n".join(x for x in lines if not x.startswith("PATCHSTREAM_GATEWAY_API_KEYS")))
    result = _compose_config(env)
    assert result.returncode != 0
    assert "PATCHSTREAM_GATEWAY_API_KEYS" in result.stderr


def test_compose_file_holds_no_secret_values() -> None:
    text = (COMPOSE / "compose.yaml").read_text()
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        if key.startswith("#"):
            continue
        if any(word in key.upper() for word in ("PASSWORD", "SECRET", "API_KEYS", "ROOT_USER")):
            assert value.strip().startswith("${"), f"literal secret in compose.yaml: {line}"


def test_prometheus_config_and_alert_rules_pass_promtool(tmp_path: Path) -> None:
    promtool = _tool("promtool")
    checked = subprocess.run([promtool, "check", "rules", str(DASHBOARDS / "alerts.yml")],
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert checked.returncode == 0 and "4 rules found" in checked.stdout, checked.stderr
    tested = subprocess.run([promtool, "test", "rules", "alerts.test.yml"], cwd=DASHBOARDS,
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr
    # The compose Prometheus config, with the rule file where the container mounts it.
    config = (COMPOSE / "prometheus" / "prometheus.yml").read_text()
    local = tmp_path / "prometheus.yml"
    local.write_text(config.replace("/etc/prometheus/alerts.yml", str(DASHBOARDS / "alerts.yml")))
    result = subprocess.run([promtool, "check", "config", str(local)], capture_output=True,
                            text=True, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_dashboards_are_generated_from_build_py() -> None:
    sys.path.insert(0, str(DASHBOARDS))
    try:
        import build  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(DASHBOARDS))
    for name, text in build.render().items():
        assert (DASHBOARDS / name).read_text() == text, f"run `python dashboards/build.py` ({name})"
    titles = {json.loads((DASHBOARDS / n).read_text())["title"] for n in build.DASHBOARDS}
    assert titles == {"patchstream / Sync lag", "patchstream / Query service"}


@pytest.mark.parametrize("source", ["dashboards", "alerts"])
def test_every_query_parses_as_promql(source: str, tmp_path: Path) -> None:
    """promtool parses each expression (as a recording rule) after Grafana fills its variables."""
    from tests.promql import for_prometheus

    queries = dashboard_queries() if source == "dashboards" else alert_queries()
    rules = {"groups": [{"name": "check", "rules": [
        {"record": f"check:q{i}", "expr": for_prometheus(expr)} for i, (_, expr) in
        enumerate(queries)]}]}  # fmt: skip
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    result = subprocess.run([_tool("promtool"), "check", "rules", str(path)],
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(queries)} rules found" in result.stdout
