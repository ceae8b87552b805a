"""Every statement the apply planner can write starts from an index lookup in FalkorDB's
plan, never a scan of every node of a label (one such plan made a cold index 1.5x slower:
a batch's statements run over all its files' ``$fuids`` since ``planner.merge_plans``)."""

from __future__ import annotations

import pytest

from patchstream.embedded.services import Service
from patchstream.stores.graph.falkordb import FalkorGraphStore
from patchstream.stores.graph.planner import PLANNED_STATEMENTS
from patchstream.stores.graph.statements import READ_FENCES, READ_LOCAL_EDGES, READ_REF_EDGES

ROW = {"src": "a", "dst": "b", "type": "CALLS", "keys": ["k"], "fuid": "f", "props": {},
       "key": "k", "tail": "t", "resolution": "exact", "uid": "u"}  # fmt: skip
PARAMS = {"fuids": ["f"], "fuid": "f", "via": "<inherit>", "rows": [ROW], "uids": ["u"],
          "keys": ["k"], "uid": "u", "now": 1.0, "props": {}}  # fmt: skip


@pytest.mark.parametrize("query", [*PLANNED_STATEMENTS, READ_FENCES, READ_LOCAL_EDGES,
                                   READ_REF_EDGES])  # fmt: skip
def test_no_statement_scans_every_node_of_a_label(falkordb_service: Service, query: str) -> None:
    store = FalkorGraphStore(port=falkordb_service.port, password=falkordb_service.password)
    try:
        store._ensure_tenant("plans")  # indexes exist, as for every tenant graph written
        graph = store.db.select_graph(store.graph_name("plans"))
        params = {k: v for k, v in PARAMS.items() if f"${k}" in query}
        plan = str(graph.explain(query, params))
        assert "Label Scan" not in plan and "All Node Scan" not in plan, plan
    finally:
        store.close()
