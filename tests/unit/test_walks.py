"""Many walks read together keep each one's own answer (``stores.graph.walks``)."""

from __future__ import annotations

from patchstream.stores.graph.walks import Walks


def _p(uid: str) -> dict[str, str]:
    return {"uid": uid}


def _e(src: str, uid: str, res: str = "exact") -> tuple[str, str, dict[str, str], str]:
    return (src, uid, _p(uid), res)


def test_each_walk_keeps_its_own_seen_set_frontier_and_cap() -> None:
    # a -> x -> y and b -> x: x is new to both walks; y only through a's frontier at level 2.
    walks = Walks({"A": _p("a"), "B": _p("b")}, cap=10)
    assert [p["uid"] for p in walks.frontier()] == ["a", "b"]
    walks.advance([_e("a", "x"), _e("b", "x"), _e("b", "b")], 1)
    assert [p["uid"] for p in walks.frontier()] == ["x"]
    walks.advance([_e("x", "y"), _e("x", "a")], 2)
    found = {k: [(d, p["uid"]) for d, p, _ in v] for k, v in walks.found().items()}
    # B reaches a through x (a is B's neighbor at depth 2); A never lists itself.
    assert found == {"A": [(1, "x"), (2, "y")], "B": [(1, "x"), (2, "y"), (2, "a")]}


def test_a_full_walk_stops_taking_rows_and_leaves_the_frontier() -> None:
    walks = Walks({"A": _p("a"), "B": _p("b")}, cap=2)
    walks.advance([_e("a", f"n{i}") for i in range(5)] + [_e("b", "m")], 1)
    assert [len(v) for v in walks.found().values()] == [2, 1]
    assert walks.room() == 2 - 1 + 2  # A is full: its rows would be dropped
    assert [p["uid"] for p in walks.frontier()] == ["m"]  # A is full: its frontier rests


def test_parts_name_each_open_walk_with_its_own_limit() -> None:
    walks = Walks({"A": _p("a"), "B": _p("b"), "C": _p("c")}, cap=2)
    assert walks.parts() == [(["a"], 3), (["b"], 3), (["c"], 3)]
    walks.advance([_e("a", "n0"), _e("a", "n1"), _e("b", "m")], 1)
    # A is full; C found nothing, so it has no frontier left either.
    assert walks.parts() == [(["m"], 2 - 1 + 2)]


def test_a_neighbor_says_the_weakest_hop_of_the_strongest_path_that_reached_it() -> None:
    walks = Walks({"A": _p("a")}, cap=10)
    # x is reached by a guess and by a certain call at the same level: exact wins.
    walks.advance([_e("a", "x", "inferred"), _e("a", "x"), _e("a", "y", "inferred")], 1)
    # Level 2: z through x (exact, exact) and w through y (inferred, exact): the path's
    # weakest hop is what the neighbor says.
    walks.advance([_e("x", "z"), _e("y", "w"), _e("x", "v", "name-only")], 2)
    found = {p["uid"]: (d, res) for d, p, res in walks.found()["A"]}
    assert found == {"x": (1, "exact"), "y": (1, "inferred"), "z": (2, "exact"),
                     "w": (2, "inferred"), "v": (2, "name-only")}  # fmt: skip
    # The order is the store's (first reached), as before resolutions.
    assert [p["uid"] for _, p, _ in walks.found()["A"]] == ["x", "y", "z", "w", "v"]
