"""History in the graph (issue #54): a repository made by the test, its commits read by
``git log`` as ``index`` reads them, published as the ``_commits/`` pages of a ref and applied
to a real graph store. A ref sees only the commits reachable from its head (a branch over main
at an older commit sees none of main's later history), a force-push drops what only the lost
commits held, and a definition's history names the commits whose hunks fell in it."""

from __future__ import annotations

from pathlib import Path

from patchstream.parsing.commit_text import HEAD_PATH
from patchstream.stores.graph.cypher import CypherGraphStore
from tests.integration.history_repo import AREA_V1, AREA_V2, Publisher, commit, git


def _shas(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [hit.sha for hit in hits]


def test_a_branch_at_an_older_commit_sees_none_of_mains_later_history(
    graph: CypherGraphStore, tenant: str, root: Path
) -> None:
    c1 = commit(root, {"geo/shapes.py": AREA_V1, "README.md": "# geo\n"}, "Add squares")
    c2 = commit(root, {"geo/util.py": "def clamp(x):\n    return x\n"}, "Add clamp")
    git(root, "branch", "old")
    c3 = commit(root, {"geo/shapes.py": AREA_V2}, "Compute the area from the side\n\nFixes #7")
    publisher = Publisher(graph, tenant)
    publisher.index(root, "main")

    main = graph.history(tenant, "app", "main", path="geo/shapes.py")
    assert _shas(main) == [c3, c1]
    assert main[0].issues == ["#7"] and main[0].subject == "Compute the area from the side"
    assert main[0].files[0]["symbols"] == ["area"]  # the hunk fell in Square.area
    # The commits whose hunks fell in ``area``: the fix, and the one that wrote it.
    assert _shas(graph.history(tenant, "app", "main", path="geo/shapes.py", symbol="area")) == [
        c3, c1,
    ]  # fmt: skip
    assert _shas(graph.history(tenant, "app", "main", path="geo/shapes.py", symbol="side")) == [c1]
    assert _shas(graph.history(tenant, "app", "main")) == [c3, c2, c1]
    several = graph.histories(tenant, "app", "main", ["geo/shapes.py", "geo/util.py", "no.py"])
    assert {path: _shas(hits) for path, hits in several.items()} == {
        "geo/shapes.py": [c3, c1], "geo/util.py": [c2],
    }  # fmt: skip

    git(root, "checkout", "-q", "old")
    graph.declare_overlay(tenant, "app", "old", "main", "branch")
    publisher.index(root, "old", base="main")
    assert _shas(graph.history(tenant, "app", "old", path="geo/shapes.py")) == [c1]
    assert _shas(graph.history(tenant, "app", "old")) == [c2, c1]
    assert _shas(graph.history(tenant, "app", "main")) == [c3, c2, c1]  # main unchanged


def test_a_force_push_drops_what_only_the_lost_commits_held(
    graph: CypherGraphStore, tenant: str, root: Path
) -> None:
    c1 = commit(root, {"geo/shapes.py": AREA_V1}, "Add squares")
    lost = commit(root, {"geo/shapes.py": AREA_V2}, "A change that is taken back")
    publisher = Publisher(graph, tenant)
    publisher.index(root, "main")
    assert _shas(graph.history(tenant, "app", "main", path="geo/shapes.py")) == [lost, c1]

    git(root, "reset", "-q", "--hard", c1)
    c2 = commit(root, {"geo/other.py": "X = 1\n"}, "Another way")
    publisher.index(root, "main")
    assert _shas(graph.history(tenant, "app", "main", path="geo/shapes.py")) == [c1]
    assert _shas(graph.history(tenant, "app", "main")) == [c2, c1]
    snapshot = graph.snapshot(tenant)
    assert {sha for _, sha, _ in snapshot.commits} == {c1, c2}  # the lost commit's node went
    assert list(snapshot.heads.values()) == [c2]
    assert HEAD_PATH in publisher.held["main"]


def test_a_files_history_reads_only_its_newest_commits_up_to_the_limit(
    graph: CypherGraphStore, tenant: str, root: Path
) -> None:
    """A file of a large project has thousands of commits: the newest ``limit`` reachable ones
    come back in full, newest first, with the symbol filter applied before the limit."""
    shas = [commit(root, {"geo/shapes.py": AREA_V1 + f"\nN = {i}\n"}, f"Step {i}")
            for i in range(5)]  # fmt: skip
    fix = commit(root, {"geo/shapes.py": AREA_V2 + "\nN = 4\n"}, "Fix the area")
    publisher = Publisher(graph, tenant)
    publisher.index(root, "main")
    several = graph.histories(tenant, "app", "main", ["geo/shapes.py"], limit=3)
    assert _shas(several["geo/shapes.py"]) == [fix, shas[4], shas[3]]
    assert [h.subject for h in several["geo/shapes.py"]] == ["Fix the area", "Step 4", "Step 3"]
    assert several["geo/shapes.py"][0].files[0]["symbols"] == ["area"]
    # The symbol filter before the limit: the two commits that touched ``area``.
    assert _shas(graph.history(tenant, "app", "main", path="geo/shapes.py", symbol="area",
                               limit=3)) == [fix, shas[0]]  # fmt: skip
