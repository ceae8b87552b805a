"""The PromQL the dashboards and alert rules use, for tests that check it against reality."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

DASHBOARDS = Path(__file__).resolve().parents[1] / "dashboards"
_METRIC = re.compile(r"\b(patchstream_[a-z_]+)")


def dashboard_queries() -> list[tuple[str, str]]:
    """(``dashboard / panel``, expr) for every panel target of every dashboard."""
    found = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        board = json.loads(path.read_text())
        for panel in board["panels"]:
            for target in panel["targets"]:
                found.append((f"{board['title']} / {panel['title']}", target["expr"]))
    return found


def alert_queries() -> list[tuple[str, str]]:
    rules = yaml.safe_load((DASHBOARDS / "alerts.yml").read_text())
    return [(rule["alert"], rule["expr"]) for group in rules["groups"] for rule in group["rules"]]


def metric_names(expr: str) -> set[str]:
    return set(_METRIC.findall(expr))


def for_prometheus(expr: str, window: str = "2m") -> str:
    """A dashboard expression as Grafana would send it: variables filled in."""
    return expr.replace("$__rate_interval", window).replace('=~"$tenant"', '=~".*"')
