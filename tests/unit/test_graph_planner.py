"""The graph apply planner, without a database: stored state + delta -> statements."""

from __future__ import annotations

from patchstream.stores.graph.keys import scope_of, symbol_key
from patchstream.stores.graph.planner import EMPTY, FenceRow, Stored, fingerprint, plan_apply
from patchstream.stores.graph.statements import DELETE_SYMBOLS, UPSERT_FENCE, UPSERT_SYMBOLS
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
    fence = [p for q, p in plan.statements if q == UPSERT_FENCE]
    assert fence[0]["props"]["version"] == 1 and fence[0]["props"]["applied_at"] == 1.0  # type: ignore[index]


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
