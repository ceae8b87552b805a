"""Writes the Grafana dashboards (``*.json`` beside this file) from the panel lists below.

The JSON is generated so every panel has the same datasource, units and layout; edit here and
run ``python dashboards/build.py`` (a test fails when the JSON and this file disagree).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
RATE = "$__rate_interval"
TENANT = 'tenant=~"$tenant"'


def quantiles(metric: str, by: str, selector: str = "") -> list[tuple[str, str]]:
    """p50/p95/p99 of a histogram, one series per ``by`` value."""
    return [
        (
            f"histogram_quantile({q}, sum by ({by}, le) "
            f"(rate({metric}_bucket{{{selector}}}[{RATE}])))",
            f"p{int(q * 100)} {{{{{by}}}}}",
        )
        for q in (0.5, 0.95, 0.99)
    ]


def panel(
    title: str,
    targets: list[tuple[str, str]],
    unit: str,
    kind: str = "timeseries",
    width: int = 12,
    description: str = "",
) -> dict[str, Any]:
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "gridPos": {"w": width, "h": 8},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "right"}}
        if kind == "timeseries"
        else {},
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "expr": expr,
                "legendFormat": legend,
                "datasource": DATASOURCE,
            }
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def variables(with_tenant: bool) -> list[dict[str, Any]]:
    found = [
        {
            "name": "datasource",
            "label": "Prometheus",
            "type": "datasource",
            "query": "prometheus",
            "current": {},
            "hide": 0,
        }
    ]
    if with_tenant:
        found.append(
            {
                "name": "tenant",
                "label": "Tenant",
                "type": "query",
                "datasource": DATASOURCE,
                "definition": "label_values(patchstream_sync_lag_seconds_count, tenant)",
                "query": {
                    "query": "label_values(patchstream_sync_lag_seconds_count, tenant)",
                    "refId": "tenants",
                },
                "includeAll": True,
                "allValue": ".*",
                "multi": True,
                "current": {"text": "All", "value": "$__all"},
                "refresh": 2,
                "hide": 0,
            }
        )
    return found


def dashboard(uid: str, title: str, panels: list[dict[str, Any]], tenant: bool) -> dict[str, Any]:
    x = y = 0
    for number, item in enumerate(panels, start=1):  # fill rows left to right
        width = item["gridPos"]["w"]
        if x + width > 24:
            x, y = 0, y + 8
        item["id"] = number
        item["gridPos"].update({"x": x, "y": y})
        x += width
    return {
        "uid": uid,
        "title": title,
        "tags": ["patchstream"],
        "timezone": "utc",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": variables(tenant)},
        "annotations": {"list": []},
        "panels": panels,
    }


def sync_lag() -> dict[str, Any]:
    lag = "patchstream_sync_lag_seconds"
    chunks = "patchstream_chunks_total"
    consumer_lag = "max by (group, topic, partition) (patchstream_consumer_lag_messages)"
    return dashboard(
        "patchstream-sync-lag",
        "patchstream / Sync lag",
        [
            panel(
                "Sync lag p95 (worst sink)",
                [
                    (
                        f"max(histogram_quantile(0.95, sum by (sink, le) "
                        f"(rate({lag}_bucket{{{TENANT}}}[{RATE}]))))",
                        "p95",
                    )
                ],
                "s",
                kind="stat",
                width=6,
                description="From the change at its source to applied in the store.",
            ),
            panel(
                "Pending messages",
                [(f"sum({consumer_lag})", "pending")],
                "short",
                kind="stat",
                width=6,
                description="All groups: end offset minus committed.",
            ),
            panel(
                "Embedding cache hit ratio",
                [
                    (
                        f'sum(rate({chunks}{{outcome="reused"}}[{RATE}])) / '
                        f"clamp_min(sum(rate({chunks}[{RATE}])), 1e-9)",
                        "reused / written",
                    )
                ],
                "percentunit",
                kind="stat",
                width=6,
                description="Chunks whose vector was reused by content hash.",
            ),
            panel(
                "DLQ messages/s",
                [(f"sum(rate(patchstream_dlq_messages_total[{RATE}]))", "dlq")],
                "short",
                kind="stat",
                width=6,
            ),
            panel("Sync lag by sink", quantiles(lag, "sink", TENANT), "s"),
            panel(
                "Worst repositories (p95 sync lag)",
                [
                    (
                        f"topk(10, histogram_quantile(0.95, sum by (tenant, repo, le) "
                        f"(rate({lag}_bucket{{{TENANT}}}[{RATE}]))))",
                        "{{tenant}}/{{repo}}",
                    )
                ],
                "s",
                description="Repositories beyond the label cap report as _other.",
            ),
            panel(
                "Consumer lag by partition", [(consumer_lag, "{{group}} p{{partition}}")], "short"
            ),
            panel(
                "Events/s by stage and outcome",
                [
                    (
                        f"sum by (stage, outcome) (rate(patchstream_events_total[{RATE}]))",
                        "{{stage}} {{outcome}}",
                    )
                ],
                "ops",
            ),
            panel(
                "DLQ rate by reason",
                [
                    (
                        f"sum by (stage, reason) (rate(patchstream_dlq_messages_total[{RATE}]))",
                        "{{stage}} {{reason}}",
                    )
                ],
                "ops",
            ),
            panel(
                "Chunks written/s",
                [(f"sum by (outcome) (rate({chunks}[{RATE}]))", "{{outcome}}")],
                "ops",
            ),
            panel(
                "Parse seconds p95 by language",
                quantiles("patchstream_parse_seconds", "language")[1:2],
                "s",
                width=8,
            ),
            panel(
                "Store write seconds p95 by store",
                quantiles("patchstream_store_write_seconds", "store")[1:2],
                "s",
                width=8,
            ),
            panel(
                "Embedder seconds p95 per call",
                quantiles("patchstream_embed_seconds", "embedder")[1:2],
                "s",
                width=8,
            ),
        ],
        tenant=True,
    )


def query_service() -> dict[str, Any]:
    seconds = "patchstream_http_request_seconds"
    query = 'service="query"'
    count = f"{seconds}_count"
    return dashboard(
        "patchstream-query-service",
        "patchstream / Query service",
        [
            panel(
                "Requests/s",
                [(f"sum(rate({count}{{{query}}}[{RATE}]))", "req/s")],
                "reqps",
                kind="stat",
                width=8,
            ),
            panel(
                "5xx ratio",
                [
                    (
                        f'(sum(rate({count}{{{query}, status=~"5.."}}[{RATE}])) or vector(0)) / '
                        f"clamp_min(sum(rate({count}{{{query}}}[{RATE}])), 1e-9)",
                        "5xx",
                    )
                ],
                "percentunit",
                kind="stat",
                width=8,
            ),
            panel(
                "p99 latency (all endpoints)",
                [
                    (
                        f"histogram_quantile(0.99, sum by (le) (rate({seconds}_bucket{{{query}}}"
                        f"[{RATE}])))",
                        "p99",
                    )
                ],
                "s",
                kind="stat",
                width=8,
            ),
            panel("Latency by endpoint", quantiles(seconds, "endpoint", query), "s", width=24),
            panel(
                "Requests/s by endpoint",
                [(f"sum by (endpoint) (rate({count}{{{query}}}[{RATE}]))", "{{endpoint}}")],
                "reqps",
            ),
            panel(
                "Errors/s by endpoint and status",
                [
                    (
                        f'sum by (endpoint, status) (rate({count}{{{query}, status=~"4..|5.."}}'
                        f"[{RATE}]))",
                        "{{endpoint}} {{status}}",
                    )
                ],
                "reqps",
            ),
            panel(
                "Gateway requests/s by endpoint and status",
                [
                    (
                        f'sum by (endpoint, status) (rate({count}{{service="gateway"}}[{RATE}]))',
                        "{{endpoint}} {{status}}",
                    )
                ],
                "reqps",
            ),
            panel(
                "Gateway events published/s",
                [
                    (
                        f'sum by (outcome) (rate(patchstream_events_total{{stage="gateway"}}'
                        f"[{RATE}]))",
                        "{{outcome}}",
                    )
                ],
                "ops",
            ),
            panel(
                "Runs entering each status/s",
                [
                    (
                        f"sum by (status) (rate(patchstream_run_transitions_total[{RATE}]))",
                        "{{status}}",
                    )
                ],
                "ops",
                width=8,
            ),
            panel(
                "Run writes refused/s (illegal transition, version conflict)",
                [
                    (
                        f"sum by (status) (rate(patchstream_run_refused_total[{RATE}]))",
                        "refused in {{status}}",
                    ),
                    (
                        f"sum by (kind) (rate(patchstream_run_version_conflicts_total[{RATE}]))",
                        "conflict {{kind}}",
                    ),
                ],
                "ops",
                width=8,
            ),
            panel(
                "Memory decisions/s by outcome",
                [
                    (
                        f"sum by (outcome) (rate(patchstream_memory_decisions_total[{RATE}]))",
                        "{{outcome}}",
                    )
                ],
                "ops",
                width=24,
            ),
            panel(
                "Runs resumed/s",
                [(f"sum by (status) (rate(patchstream_run_resumes_total[{RATE}]))", "{{status}}")],
                "ops",
                width=8,
            ),
            panel(
                "Overlays held (workspaces, branches)",
                [("sum by (kind) (patchstream_overlays)", "{{kind}}")],
                "short",
                width=8,
            ),
            panel(
                "Files held by overlays",
                [("sum by (kind) (patchstream_overlay_files)", "{{kind}}")],
                "short",
                width=8,
            ),
            panel(
                "Time stopped for garbage collection, by process and generation",
                [
                    (
                        "sum by (instance, generation) "
                        f"(rate(patchstream_gc_pause_seconds_sum[{RATE}]))",
                        "{{instance}} gen {{generation}}",
                    ),
                ],
                "percentunit",
                width=24,
                description="Seconds per second each process spent in Python's collector. "
                "Full collections (gen 2) walk every object; the query service freezes its "
                "search copy out of them, so gen 2 here is a regression.",
            ),
        ],
        tenant=False,
    )


DASHBOARDS = {"sync-lag.json": sync_lag, "query-service.json": query_service}


def render() -> dict[str, str]:
    return {name: json.dumps(build(), indent=2) + "\n" for name, build in DASHBOARDS.items()}


def main() -> int:
    for name, text in render().items():
        (HERE / name).write_text(text)
        print(f"wrote {HERE / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
