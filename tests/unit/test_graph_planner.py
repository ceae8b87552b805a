"""The graph apply planner, without a database: stored state + delta -> statements."""

from __future__ import annotations

from patchstream.stores.graph.keys import scope_of, symbol_key
from patchstream.stores.graph.planner import (
    EMPTY,
    PLANNED_STATEMENTS,
    FenceRow,
    Stored,
    fingerprint,
    merge_plans,
    plan_apply,
)
from patchstream.stores.graph.statements import (
    DELETE_SYMBOLS,
    DROP_INHERITED_OVERRIDES,
    UPSERT_FENCES,
    UPSERT_OVERLAY,
    UPSERT_SYMBOLS,
)
from tests.integration.deltas import delete, upsert

CODE = (
    "def helper(x):\n    return x + 1\n\n\n"
    "class Base:\n    def run(self):\n        return helper(1)\n"
)


def _rows(plan_statements: list[tuple[str, dict[str, object]]], query: str) -> list[object]:
    return [row for q, params in plan_statements if q == query for row in params["rows"]]  # type: ignore[union-attr]


def test_a_new_file_writes_every_symbol_and_its_fence() -> None:
    delta = upsert("t", "pkg/util.py", CODE, 1)
    plan = plan_apply(delta, None, EMPTY, now=1.0)
    assert plan.result.applied and plan.result.symbols_written == len(delta.symbols)
    written = {row["id"] for row in _rows(plan.statements, UPSERT_SYMBOLS)}  # type: ignore[index]
    assert written == {s.id for s in delta.symbols}
    fence = _rows(plan.statements, UPSERT_FENCES)[0]
    assert fence["props"]["version"] == 1 and fence["props"]["applied_at"] == 1.0  # type: ignore[index]


def test_stale_and_duplicate_deltas_plan_nothing() -> None:
    delta = upsert("t", "pkg/util.py", CODE, 3)
    for held in (3, 7):
        plan = plan_apply(delta, FenceRow(held, False, "pkg.util"), EMPTY, now=1.0)
        assert plan.statements == [] and plan.result.reason == "stale"


def test_unchanged_symbols_are_not_rewritten_and_removed_ones_are_deleted() -> None:
    delta = upsert("t", "pkg/util.py", CODE, 2)
    scope = scope_of("t", delta.repo, delta.ref)
    module = next(s.qualified_name for s in delta.symbols if s.kind.value == "module")
    fingerprints = {
        s.id: (fingerprint(s, symbol_key(scope, module, s)), symbol_key(scope, module, s))
        for s in delta.symbols
    }
    fingerprints["app::pkg/util.py::gone"] = ("x", None)
    stored = Stored(fingerprints, set(), {})
    plan = plan_apply(delta, FenceRow(1, False, module), stored, now=1.0)
    assert _rows(plan.statements, UPSERT_SYMBOLS) == []
    removed = [p["uids"] for q, p in plan.statements if q == DELETE_SYMBOLS]
    assert removed == [[f"{scope}|app::pkg/util.py::gone"]]
    gone = plan_apply(delete("t", "pkg/util.py", 3), FenceRow(2, False, module), stored, 1.0)
    assert gone.result.symbols_removed == len(fingerprints)


def test_a_batch_of_plans_is_one_statement_per_phase_in_phase_order() -> None:
    files = [upsert("t", f"pkg/m{i}.py", CODE.replace("helper", f"helper{i}"), 1) for i in range(5)]
    plans = [plan_apply(delta, None, EMPTY, now=1.0).statements for delta in files]
    merged = merge_plans(plans)
    queries = [q for q, _ in merged]
    assert len(queries) == len(set(queries)) == len({q for plan in plans for q, _ in plan})
    assert queries == sorted(queries, key=PLANNED_STATEMENTS.index)
    # Every row of every file is kept, once, in the merged statement of its phase.
    for query, params in merged:
        name = next(k for k in ("rows", "uids", "keys", "fuids") if k in params)
        each = [row for plan in plans for q, p in plan if q == query for row in p[name]]
        expected = list(dict.fromkeys(each)) if name == "keys" else each
        assert params[name] == expected
    fences = _rows(merged, UPSERT_FENCES)
    assert [f["fuid"].rsplit("|", 1)[1] for f in fences] == [d.path for d in files]  # type: ignore[index]


def test_statements_with_different_scalars_or_no_list_stay_apart() -> None:
    plans = [
        [(DROP_INHERITED_OVERRIDES[0], {"fuids": ["a"], "via": "<inherit>"})],
        [(DROP_INHERITED_OVERRIDES[0], {"fuids": ["b"], "via": "<inherit>"}),
         (DROP_INHERITED_OVERRIDES[0], {"fuids": ["c"], "via": "<other>"})],
        [(UPSERT_OVERLAY, {"uid": "s1", "now": 1.0, "props": {}})],
        [(UPSERT_OVERLAY, {"uid": "s2", "now": 1.0, "props": {}})],
    ]  # fmt: skip
    merged = merge_plans(plans)
    assert [(q == UPSERT_OVERLAY, p.get("fuids"), p.get("uid")) for q, p in merged] == [
        (False, ["a", "b"], None), (False, ["c"], None), (True, None, "s1"), (True, None, "s2")
    ]  # fmt: skip
