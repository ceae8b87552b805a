"""The pure half of overlays: what a view sees, and the hashes a branch overlay compares
its files with."""

from __future__ import annotations

from patchstream.stores.overlays import Layer, View, logical_key, merged_hashes, split_workspace

OVERLAY, BASE = "t|app|main~w", "t|app|main"
VIEW = View("t", "app", "main~w", (Layer(OVERLAY, frozenset({"a.py", "gone.py"})),
                                   Layer(BASE, frozenset())))  # fmt: skip


def test_an_upper_layer_hides_the_same_path_below() -> None:
    assert VIEW.visible(OVERLAY, "a.py") and VIEW.visible(OVERLAY, "gone.py")
    assert not VIEW.visible(BASE, "a.py") and not VIEW.visible(BASE, "gone.py")
    assert VIEW.visible(BASE, "b.py")
    assert not VIEW.visible("t|app|other", "b.py")  # a scope outside the view
    assert not VIEW.visible("t|app|main~x", "c.py")  # another workspace of the same base
    assert (VIEW.owner("a.py"), VIEW.owner("b.py")) == (OVERLAY, BASE)


def test_a_key_names_the_same_symbol_in_every_layer() -> None:
    key = "t|app|main|pkg.util|helper"
    assert logical_key(key) == "pkg.util|helper"
    assert VIEW.keys(key) == [f"{OVERLAY}|pkg.util|helper", f"{BASE}|pkg.util|helper"]
    assert VIEW.keys(f"{OVERLAY}|m|A.run") == [f"{OVERLAY}|m|A.run", f"{BASE}|m|A.run"]


def test_workspace_refs_split_at_the_mark() -> None:
    assert split_workspace("main~agent-42") == ("main", "agent-42")
    assert split_workspace("feature/x") == ("feature/x", None)


def test_a_branch_compares_with_its_base_under_its_own_files() -> None:
    hashes = {"main": {"a": "1", "b": "2", "c": "3"}, "feature": {"b": "9", "d": "4"}}
    versions = {"main": {"a": 1, "b": 1, "c": 1}, "feature": {"b": 5, "c": 6, "d": 7}}
    merged = merged_hashes(lambda _t, _r, ref: hashes[ref], lambda _t, _r, ref: versions[ref],
                           "t", "app", ["feature", "main"])  # fmt: skip
    assert merged == {"a": "1", "b": "9", "d": "4"}  # c is deleted in the branch
    plain = merged_hashes(lambda _t, _r, ref: hashes[ref], lambda _t, _r, ref: versions[ref],
                          "t", "app", ["main"])  # fmt: skip
    assert plain == hashes["main"]
