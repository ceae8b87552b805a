"""History in the graph (issue #54): a repository made by the test, its commits read by
``git log`` as ``index`` reads them, published as the ``_commits/`` pages of a ref and applied
to a real graph store. A ref sees only the commits reachable from its head (a branch over main
at an older commit sees none of main's later history), a force-push drops what only the lost
commits held, and a definition's history names the commits whose hunks fell in it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from patchstream.indexing.plan import plan_index
from patchstream.parsing.commit_text import HEAD_PATH
from patchstream.parsing.hashing import hash_bytes
from patchstream.producers.tree_scan import scan_directory
from patchstream.stores.graph.cypher import CypherGraphStore
from tests.integration.deltas import delete, upsert

AREA_V1 = (
    "class Square:\n    def area(self):\n        return 1\n\n    def side(self):\n"
    "        return 1\n"
)
AREA_V2 = AREA_V1.replace("return 1\n\n    def side", "return self.s * self.s\n\n    def side")


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), "-c", "user.name=Ann", "-c",
                           "user.email=ann@example.com", *args],
                          check=True, capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip()


def _commit(root: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", message)
    return _git(root, "rev-parse", "HEAD")


class Publisher:
    """``index``'s plan of the checkout at ``root`` applied to the graph for ``ref``: what it
    would publish, with versions that grow."""

    def __init__(self, graph: CypherGraphStore, tenant: str) -> None:
        self.graph, self.tenant, self.version = graph, tenant, 0
        self.held: dict[str, dict[str, str | None]] = {}

    def index(self, root: Path, ref: str, base: str | None = None) -> None:
        held = dict(self.held.get(base or ref, {})) if base else self.held.setdefault(ref, {})
        if base:
            held.update(self.held.get(ref, {}))
        plan = plan_index(root, scan_directory(root, 2**20), held, commits=1000)
        mine = self.held.setdefault(ref, {})
        for write in plan.writes:
            self.version += 1
            if write.op == "delete":
                delta = delete(self.tenant, write.path, self.version, ref=ref)
                mine.pop(write.path, None)
            else:
                assert write.content is not None
                delta = upsert(self.tenant, write.path, write.content, self.version, ref=ref)
                mine[write.path] = hash_bytes(write.content.encode())
            assert self.graph.apply(delta).applied


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty repository on branch main."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    return repo


def _shas(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [hit.sha for hit in hits]


def test_a_branch_at_an_older_commit_sees_none_of_mains_later_history(
    graph: CypherGraphStore, tenant: str, root: Path
) -> None:
    c1 = _commit(root, {"geo/shapes.py": AREA_V1, "README.md": "# geo\n"}, "Add squares")
    c2 = _commit(root, {"geo/util.py": "def clamp(x):\n    return x\n"}, "Add clamp")
    _git(root, "branch", "old")
    c3 = _commit(root, {"geo/shapes.py": AREA_V2}, "Compute the area from the side\n\nFixes #7")
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

    _git(root, "checkout", "-q", "old")
    graph.declare_overlay(tenant, "app", "old", "main", "branch")
    publisher.index(root, "old", base="main")
    assert _shas(graph.history(tenant, "app", "old", path="geo/shapes.py")) == [c1]
    assert _shas(graph.history(tenant, "app", "old")) == [c2, c1]
    assert _shas(graph.history(tenant, "app", "main")) == [c3, c2, c1]  # main unchanged


def test_a_force_push_drops_what_only_the_lost_commits_held(
    graph: CypherGraphStore, tenant: str, root: Path
) -> None:
    c1 = _commit(root, {"geo/shapes.py": AREA_V1}, "Add squares")
    lost = _commit(root, {"geo/shapes.py": AREA_V2}, "A change that is taken back")
    publisher = Publisher(graph, tenant)
    publisher.index(root, "main")
    assert _shas(graph.history(tenant, "app", "main", path="geo/shapes.py")) == [lost, c1]

    _git(root, "reset", "-q", "--hard", c1)
    c2 = _commit(root, {"geo/other.py": "X = 1\n"}, "Another way")
    publisher.index(root, "main")
    assert _shas(graph.history(tenant, "app", "main", path="geo/shapes.py")) == [c1]
    assert _shas(graph.history(tenant, "app", "main")) == [c2, c1]
    snapshot = graph.snapshot(tenant)
    assert {sha for _, sha, _ in snapshot.commits} == {c1, c2}  # the lost commit's node went
    assert list(snapshot.heads.values()) == [c2]
    assert HEAD_PATH in publisher.held["main"]
