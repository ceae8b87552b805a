"""History in the graph (issue #54): a repository made by the test, its commits read by
``git log`` as ``index`` reads them, published as the ``_commits/`` pages of a ref and applied
to a real graph store. A ref sees only the commits reachable from its head (a branch over main
at an older commit sees none of main's later history), a force-push drops what only the lost
commits held, and a definition's history names the commits whose hunks fell in it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from patchstream.parsing.commit_text import HEAD_PATH
from patchstream.stores.graph.cypher import CypherGraphStore
from patchstream.stores.graph.history_statements import READ_HEADS, READ_PARENTS
from tests.integration.history_repo import AREA_V1, AREA_V2, Publisher, commit, git


def _shas(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [hit.sha for hit in hits]


def _recorded_reads(graph: CypherGraphStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every query the store reads from now on, in order."""
    reads: list[str] = []
    read = graph._read

    def counted(tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]:
        reads.append(query)
        return read(tenant, query, params)

    monkeypatch.setattr(graph, "_read", counted)
    return reads


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


def test_a_pushed_commit_extends_the_kept_walk_and_anything_else_walks_again(
    graph: CypherGraphStore, tenant: str, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fast-forward reads only its new commits on top of the view's kept walk (a 30k-commit
    history's whole walk took most of a push's way to ``query history``); a gap of the
    ingested window filled, or a force push, walks the whole graph again. Either way the
    answer is the whole walk's."""
    reads = _recorded_reads(graph, monkeypatch)

    def walked_whole() -> bool:
        return READ_PARENTS in reads

    def history_now() -> list[str]:
        reads.clear()
        return _shas(graph.history(tenant, "app", "main"))

    def history_walked_afresh() -> list[str]:
        graph.__dict__.pop("_history_graphs", None)
        return _shas(graph.history(tenant, "app", "main"))

    c1 = commit(root, {"geo/shapes.py": AREA_V1}, "Add squares")
    c2 = commit(root, {"geo/util.py": "def clamp(x):\n    return x\n"}, "Add clamp")
    publisher = Publisher(graph, tenant)
    publisher.index(root, "main", commits=1)  # c1 is outside the window: a gap
    assert history_now() == [c2] and walked_whole()

    c3 = commit(root, {"geo/util.py": "def clamp(x):\n    return max(x, 0)\n"}, "Clamp at 0")
    publisher.index(root, "main", commits=2)
    assert history_now() == [c3, c2] and not walked_whole()

    publisher.index(root, "main", commits=3)  # the gap fills: c1 arrives under the same head
    assert history_now() == [c3, c2, c1] and walked_whole()

    # A merge of a side branch: two generations of new commits, read one a round trip.
    git(root, "checkout", "-q", "-b", "side")
    s1 = commit(root, {"geo/side.py": "S = 1\n"}, "Side work")
    git(root, "checkout", "-q", "main")
    m1 = commit(root, {"geo/main.py": "M = 1\n"}, "Main work")
    git(root, "merge", "-q", "--no-ff", "-m", "Merge side", "side")
    merge = git(root, "rev-parse", "HEAD")
    publisher.index(root, "main")
    extended = history_now()
    assert not walked_whole()
    assert extended[0] == merge and set(extended[1:3]) == {s1, m1} and extended[3:] == [c3, c2, c1]
    assert history_walked_afresh() == extended  # the same order, depths included

    git(root, "reset", "-q", "--hard", c3)  # a force push: the merge and its side go
    c4 = commit(root, {"geo/other.py": "X = 1\n"}, "Another way")
    history_now()  # the kept walk is the merge's
    publisher.index(root, "main")
    assert history_now() == [c4, c3, c2, c1] and walked_whole()


def test_a_views_commits_are_counted_again_only_after_a_commit_write(
    graph: CypherGraphStore, tenant: str, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a view's commits walked all of them at every context and history read (18
    ms at 30,000). Reads with no write between count once; a write that adds a commit under
    the same head (an ingest window's gap filled) bumps the scope's stamp and is counted at
    the next read, so it is seen at once."""
    reads = _recorded_reads(graph, monkeypatch)
    c1 = commit(root, {"geo/shapes.py": AREA_V1}, "Add squares")
    c2 = commit(root, {"geo/util.py": "def clamp(x):\n    return x\n"}, "Add clamp")
    publisher = Publisher(graph, tenant)
    publisher.index(root, "main", commits=1)
    for _ in range(3):
        assert _shas(graph.history(tenant, "app", "main")) == [c2]
    assert reads.count(READ_HEADS) == 1  # counted once for three reads
    publisher.index(root, "main", commits=2)  # c1 arrives under the same head
    assert _shas(graph.history(tenant, "app", "main")) == [c2, c1]
    assert reads.count(READ_HEADS) == 2
