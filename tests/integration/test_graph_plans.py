"""Every statement the apply planner can write starts from an index lookup in FalkorDB's
plan, never a scan of every Symbol (one such plan made a cold index 1.5x slower)."""

from __future__ import annotations

import pytest

from patchstream.embedded.services import Service
from patchstream.stores.graph.falkordb import FalkorGraphStore
from patchstream.stores.graph.planner import PLANNED_STATEMENTS
from patchstream.stores.graph.statements import READ_FENCES, READ_LOCAL_EDGES, READ_REF_EDGES

ROW = {"src": "a", "dst": "b", "type": "CALLS", "keys": ["k"], "fuid": "f", "props": {}}
PARAMS = {"fuids": ["f"], "fuid": "f", "via": "<inherit>", "rows": [ROW], "uids": ["u"],
          "keys": ["k"]}  # fmt: skip


@pytest.mark.parametrize("query", [*PLANNED_STATEMENTS, READ_FENCES, READ_LOCAL_EDGES,
                                   READ_REF_EDGES])  # fmt: skip
def test_no_statement_scans_every_node_of_a_label(falkordb_service: Service, query: str) -> None:
    store = FalkorGraphStore(port=falkordb_service.port)
    store._ensure_tenant("plans")  # indexes exist, as for every tenant graph that is written
    graph = store.db.select_graph(store.graph_name("plans"))
    plan = str(graph.explain(query, {k: v for k, v in PARAMS.items() if f"${k}" in query}))
    assert "Label Scan" not in plan and "All Node Scan" not in plan, plan
    store.close()
