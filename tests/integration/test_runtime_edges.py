"""Runtime edges against a model of their promise, in any interleaving of deltas and traces:
an edge stands once a trace of both files' current content is applied, until either file's
content changes; a trace of content the graph no longer holds stores nothing. The static
graph is what a clean rebuild of the final files gives."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchstream.parsing.hashing import hash_bytes
from patchstream.schemas.state import FileDelta
from patchstream.schemas.traces import TracedCall, TraceEvent
from patchstream.stores.graph.cypher import CypherGraphStore
from tests.integration.deltas import delete, upsert

PATHS = ["pkg/a.py", "pkg/b.py"]
VARIANTS = [
    "def f():\n    return 1\n",
    "def f():\n    return 2\n",
    "def f():\n    return 1\n\n\ndef g():\n    return 3\n",
    "def g():\n    return 4\n",
]
FUNCTIONS = {0: ["f"], 1: ["f"], 2: ["f", "g"], 3: ["g"]}
RUNTIME_EDGES = (
    "MATCH (s:Symbol)-[r:CALLS]->(t:Symbol) WHERE r.via = '<runtime>' RETURN s.uid, t.uid"
)

# A step: a write (path, variant; -1 deletes), or a trace of the files as written so far.
steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, 1), st.integers(-1, len(VARIANTS) - 1)),
        st.tuples(st.just("trace"), st.integers(0, 1), st.integers(0, 3)),
    ),
    min_size=3,
    max_size=10,
)


def _trace(tenant: str, files: dict[str, int], caller_path: int, pick: int) -> TraceEvent | None:
    """Calls from the functions of one file to those of the other (``pick`` chooses which),
    as a run of the files ``files`` (path -> variant) would record them."""
    here, there = PATHS[caller_path], PATHS[1 - caller_path]
    if here not in files or there not in files:
        return None
    callers, callees = FUNCTIONS[files[here]], FUNCTIONS[files[there]]
    pairs = [(a, b) for a in callers for b in callees]
    chosen = [pair for n, pair in enumerate(pairs) if pick & (1 << n) or len(pairs) == 1]
    if not chosen:
        return None
    return TraceEvent(
        tenant=tenant, repo="app", ref="main", path=here,
        content_hash=hash_bytes(VARIANTS[files[here]].encode()), command="pytest",
        traced_at=datetime.now(UTC),
        calls=[TracedCall(caller=f"app::{here}::{a}", callee=f"app::{there}::{b}",
                          callee_path=there, count=1,
                          callee_hash=hash_bytes(VARIANTS[files[there]].encode()))
               for a, b in chosen],
    )  # fmt: skip


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=steps, data=st.data())
def test_runtime_edges_keep_their_promise_in_any_interleaving(
    graph: CypherGraphStore, plan: list[tuple[str, int, int]], data: st.DataObject
) -> None:
    streamed, rebuilt = f"s{uuid.uuid4().hex[:10]}", f"r{uuid.uuid4().hex[:10]}"
    written: dict[str, int] = {}  # the files as the writer made them, in plan order
    items: list[FileDelta | TraceEvent] = []
    for version, (kind, path_index, value) in enumerate(plan, start=1):
        path = PATHS[path_index]
        if kind == "write":
            if value < 0:
                written.pop(path, None)
                items.append(delete(streamed, path, version))
            else:
                written[path] = value
                items.append(upsert(streamed, path, VARIANTS[value], version))
        elif (event := _trace(streamed, written, path_index, value)) is not None:
            items.append(event)
    if not items:
        return
    # Deltas and traces travel on different topics: any interleaving, replays included.
    delivery = data.draw(st.permutations(items + data.draw(st.lists(st.sampled_from(items),
                                                                    max_size=3))))  # fmt: skip
    model_files: dict[str, tuple[int, str | None]] = {}  # path -> (version, content hash)
    model_edges: set[tuple[str, str]] = set()
    for item in delivery:
        if isinstance(item, TraceEvent):
            graph.apply_traces([item])
            for call in item.calls:
                held = {p: h for p, (_, h) in model_files.items() if h is not None}
                if (held.get(item.path) == item.content_hash
                        and held.get(call.callee_path) == call.callee_hash):  # fmt: skip
                    model_edges.add((call.caller, call.callee))
            continue
        graph.apply(item)
        version, before = model_files.get(item.path, (0, None))
        if item.version <= version:
            continue  # stale: the fence refuses it
        after = item.content_hash if item.op == "upsert" else None
        model_files[item.path] = (item.version, after)
        if after != before:
            model_edges = {e for e in model_edges
                           if f"::{item.path}::" not in e[0] + "|" + e[1]}  # fmt: skip
    for path, variant in sorted(written.items()):
        graph.apply(upsert(rebuilt, path, VARIANTS[variant], 1))
    try:
        scope = f"{streamed}|app|main|"
        stored = {(s.removeprefix(scope), t.removeprefix(scope))
                  for s, t in graph._read(streamed, RUNTIME_EDGES, {})}  # fmt: skip
        assert stored == model_edges
        symbols = {repr(s).replace(streamed, "T") for s in graph.snapshot(streamed).symbols}
        assert symbols == {repr(s).replace(rebuilt, "T") for s in graph.snapshot(rebuilt).symbols}
    finally:
        for tenant in (streamed, rebuilt):
            getattr(graph, "drop_tenant", lambda _t: None)(tenant)
