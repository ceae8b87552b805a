"""Any delivery order, with duplicates, deletes and renames, ends in the clean-rebuild state."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchstream.schemas.state import FileDelta
from patchstream.stores.graph.cypher import CypherGraphStore
from patchstream.stores.vector.milvus import MilvusVectorStore
from tests.integration.deltas import delete, upsert

PATHS = ["pkg/a.py", "pkg/b.py", "pkg/c.py"]
VARIANTS = [
    "from pkg.b import helper\n\n\ndef main():\n    return helper(1)\n",
    "from pkg.a import main\n\n\ndef helper(x):\n    return x\n\n\nclass Base:\n"
    "    def run(self):\n        return main()\n",
    "from pkg.b import Base, helper\n\n\nclass Job(Base):\n    def run(self):\n"
    "        return helper(2)\n",
    "def helper(x):\n    return x * 2\n",
    "def broken(:\n    return\n",
    # Calls through receivers: resolved across files whenever (and in whatever order) the
    # receiver's class arrives, gains or loses the method.
    "from pkg.b import Base\n\n\nclass Runner:\n    def __init__(self):\n"
    "        self.job = Base()\n\n    def go(self):\n        return self.job.run()\n",
    "from pkg.c import Job\n\n\ndef start(j: Job):\n    return j.run()\n",
]

# A step: (path index, variant index or -1 for delete).
steps = st.lists(
    st.tuples(st.integers(0, len(PATHS) - 1), st.integers(-1, len(VARIANTS) - 1)),
    min_size=1,
    max_size=10,
)


def _events(tenant: str, plan: list[tuple[int, int]]) -> list[FileDelta]:
    events = []
    for version, (path_index, variant) in enumerate(plan, start=1):
        path = PATHS[path_index]
        if variant < 0:
            events.append(delete(tenant, path, version))
        else:
            events.append(upsert(tenant, path, VARIANTS[variant], version))
    return events


def _final_plan(plan: list[tuple[int, int]]) -> list[tuple[int, int]]:
    last: dict[int, int] = {}
    for path_index, variant in plan:
        last[path_index] = variant
    return sorted((p, v) for p, v in last.items() if v >= 0)


def _graph_view(graph: CypherGraphStore, tenant: str) -> tuple[set[str], set[str], int]:
    snap = graph.snapshot(tenant)
    return (
        {repr(s).replace(tenant, "T") for s in snap.symbols},
        {repr(e).replace(tenant, "T") for e in snap.edges},
        graph.want_count(tenant),
    )


def _vector_view(vectors: MilvusVectorStore, tenant: str) -> set[str]:
    return {repr(row[1:]).replace(tenant, "T") for row in vectors.rows(tenant)}


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=steps, data=st.data())
def test_any_delivery_order_ends_in_the_clean_rebuild(
    graph: CypherGraphStore,
    vectors: MilvusVectorStore,
    plan: list[tuple[int, int]],
    data: st.DataObject,
) -> None:
    streamed = f"s{uuid.uuid4().hex[:10]}"
    rebuilt = f"r{uuid.uuid4().hex[:10]}"
    events = _events(streamed, plan)
    duplicated = events + data.draw(st.lists(st.sampled_from(events), max_size=4))
    delivery = data.draw(st.permutations(duplicated))
    batch = data.draw(st.integers(1, 8))
    for start in range(0, len(delivery), batch):
        group = delivery[start : start + batch]
        graph.apply_many(group)  # the sink's batched write: one fence read per run of files
        vectors.apply(group)
    # Rebuild: only each file's final state, applied once to empty stores.
    finals = []
    for path_index, variant in _final_plan(plan):
        finals.append(upsert(rebuilt, PATHS[path_index], VARIANTS[variant], 1))
    for delta in finals:
        graph.apply(delta)
    vectors.apply(finals)
    try:
        assert _graph_view(graph, streamed) == _graph_view(graph, rebuilt)
        assert _vector_view(vectors, streamed) == _vector_view(vectors, rebuilt)
    finally:
        for tenant in (streamed, rebuilt):
            getattr(graph, "drop_tenant", lambda _t: None)(tenant)
