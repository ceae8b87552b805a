"""Discussions in the graph (issue #54): GitHub's webhook objects become ``_discussions/``
pages applied to a real graph store beside the commits of a repository made by the test. A
commit links the PR it names or was merged by and the issues that PR closes; a file's review
comments are found from the file; nothing links across tenants; a deleted page unlinks."""

from __future__ import annotations

from pathlib import Path

from patchstream.producers.discussions import Page, github_hook_pages
from patchstream.stores.graph.cypher import CypherGraphStore
from tests.integration.deltas import delete, upsert
from tests.integration.history_repo import AREA_V1, AREA_V2, Publisher, commit, git


def _apply(graph: CypherGraphStore, tenant: str, pages: list[Page], version: int) -> int:
    for page in pages:
        version += 1
        delta = (upsert(tenant, page.path, page.content, version) if page.content is not None
                 else delete(tenant, page.path, version))  # fmt: skip
        assert graph.apply(delta).applied
    return version


def _issue(number: int, title: str) -> dict[str, object]:
    return {
        "number": number,
        "title": title,
        "body": "",
        "state": "open",
        "user": {"login": "ann"},
        "html_url": f"https://github.com/a/b/issues/{number}",
    }


def test_a_commit_links_its_pull_request_and_the_issues_it_closes_in_its_tenant_only(
    graph: CypherGraphStore, tenant: str, root: Path
) -> None:
    other = f"{tenant}o"
    try:
        _linked_in_one_tenant(graph, tenant, other, root)
    finally:
        graph.drop_tenant(other)  # type: ignore[attr-defined]


def _linked_in_one_tenant(graph: CypherGraphStore, tenant: str, other: str, root: Path) -> None:
    pull = {"number": 34, "title": "Area from the side", "body": "Fixes #12\n",
            "state": "open", "head": {"sha": "c" * 40}}  # fmt: skip
    review = {"id": 9, "body": "why not side ** 2?", "path": "geo/shapes.py",
              "user": {"login": "cy"}, "created_at": "2026-01-05T00:00:00Z"}  # fmt: skip
    pages = [
        *github_hook_pages("issues", {"action": "opened",
                                      "issue": _issue(12, "Square.area returns 1")}),
        *github_hook_pages("pull_request", {"action": "opened", "pull_request": pull}),
        *github_hook_pages("pull_request_review_comment", {
            "action": "created", "pull_request": pull, "comment": review}),
    ]  # fmt: skip
    # Discussions first: links are made at read time, whatever arrived first.
    version = _apply(graph, tenant, pages, 0)
    _apply(graph, other, github_hook_pages("issues", {
        "action": "opened", "issue": _issue(12, "OTHER TENANT'S ISSUE")}), 0)  # fmt: skip

    c1 = commit(root, {"geo/shapes.py": AREA_V1}, "Add squares")
    c2 = commit(root, {"geo/shapes.py": AREA_V2}, "Compute the area from the side (#34)")
    git(root, "branch", "feature")
    c3 = commit(root, {"geo/util.py": "X = 1\n"}, "Rebased without a number")
    publisher = Publisher(graph, tenant)
    publisher.version = version
    publisher.index(root, "main")
    merged = {"number": 35, "title": "Util", "body": "", "state": "closed", "merged": True,
              "merge_commit_sha": c3, "head": {"sha": c3}}  # fmt: skip
    version = _apply(
        graph,
        tenant,
        github_hook_pages("pull_request", {"action": "closed", "pull_request": merged}),
        publisher.version,
    )

    hits = graph.history(tenant, "app", "main", path="geo/shapes.py")
    assert [hit.sha for hit in hits] == [c2, c1]
    linked = {t["key"]: (t["title"], t["via"]) for t in hits[0].linked}
    assert linked == {"pr-34": ("Area from the side", "named"),
                      "issue-12": ("Square.area returns 1", "closed by pr-34")}  # fmt: skip
    assert hits[1].linked == []
    [util] = graph.history(tenant, "app", "main", path="geo/util.py")
    assert [(t["key"], t["via"]) for t in util.linked] == [("pr-35", "merged")]
    several = graph.histories(tenant, "app", "main", ["geo/shapes.py"])
    assert [t["key"] for t in several["geo/shapes.py"][0].linked] == ["pr-34", "issue-12"]
    notes = graph.path_discussions(tenant, "app", "main", ["geo/shapes.py"])["geo/shapes.py"]
    assert [(n["thread"], n["title"], n["author"]) for n in notes] == [
        ("pr-34", "Area from the side", "cy")
    ]

    # A branch over main reads main's discussions; the other tenant reads none of these.
    git(root, "checkout", "-q", "feature")
    graph.declare_overlay(tenant, "app", "feature", "main", "branch")
    publisher.index(root, "feature", base="main")
    [on_branch, _] = graph.history(tenant, "app", "feature", path="geo/shapes.py")
    assert {t["key"] for t in on_branch.linked} == {"pr-34", "issue-12"}
    assert graph.history(other, "app", "main", path="geo/shapes.py") == []
    assert graph.path_discussions(other, "app", "main", ["geo/shapes.py"]) == {}
    titles = {t["title"] for hit in graph.history(tenant, "app", "main") for t in hit.linked}
    assert "OTHER TENANT'S ISSUE" not in titles

    # A deleted issue unlinks; the PR that named it stays.
    _apply(graph, tenant, github_hook_pages("issues", {
        "action": "deleted", "issue": _issue(12, "gone")}), version)  # fmt: skip
    [latest, _] = graph.history(tenant, "app", "main", path="geo/shapes.py")
    assert [t["key"] for t in latest.linked] == ["pr-34"]
