"""Many walks read together keep each one's own answer (``stores.graph.walks``)."""

from __future__ import annotations

from patchstream.stores.graph.walks import Walks


def _p(uid: str) -> dict[str, str]:
    return {"uid": uid}


def test_each_walk_keeps_its_own_seen_set_frontier_and_cap() -> None:
    # a -> x -> y and b -> x: x is new to both walks; y only through a's frontier at level 2.
    walks = Walks({"A": _p("a"), "B": _p("b")}, cap=10)
    assert [p["uid"] for p in walks.frontier()] == ["a", "b"]
    walks.advance([("a", "x", _p("x")), ("b", "x", _p("x")), ("b", "b", _p("b"))], 1)
    assert [p["uid"] for p in walks.frontier()] == ["x"]
    walks.advance([("x", "y", _p("y")), ("x", "a", _p("a"))], 2)
    found = {k: [(d, p["uid"]) for d, p in v] for k, v in walks.found().items()}
    # B reaches a through x (a is B's neighbor at depth 2); A never lists itself.
    assert found == {"A": [(1, "x"), (2, "y")], "B": [(1, "x"), (2, "y"), (2, "a")]}


def test_a_full_walk_stops_taking_rows_and_leaves_the_frontier() -> None:
    walks = Walks({"A": _p("a"), "B": _p("b")}, cap=2)
    walks.advance([("a", f"n{i}", _p(f"n{i}")) for i in range(5)] + [("b", "m", _p("m"))], 1)
    assert [len(v) for v in walks.found().values()] == [2, 1]
    assert walks.room() == 2 - 1 + 2  # A is full: its rows would be dropped
    assert [p["uid"] for p in walks.frontier()] == ["m"]  # A is full: its frontier rests


def test_parts_name_each_open_walk_with_its_own_limit() -> None:
    walks = Walks({"A": _p("a"), "B": _p("b"), "C": _p("c")}, cap=2)
    assert walks.parts() == [(["a"], 3), (["b"], 3), (["c"], 3)]
    walks.advance([("a", "n0", _p("n0")), ("a", "n1", _p("n1")), ("b", "m", _p("m"))], 1)
    # A is full; C found nothing, so it has no frontier left either.
    assert walks.parts() == [(["m"], 2 - 1 + 2)]
