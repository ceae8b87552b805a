"""Discussions in the graph (issue #54): GitHub's webhook objects become ``_discussions/``
pages applied to a real graph store beside the commits of a repository made by the test. A
commit links the PR it names or was merged by and the issues that PR closes; a file's review
comments are found from the file; nothing links across tenants; a deleted page unlinks; an
overlay at an older commit sees no discussion opened after it; a deleted thread takes its
comments with it."""

from __future__ import annotations

from pathlib import Path

from patchstream.parsing.filestate import FileStateBuilder
from patchstream.producers.discussions import Page, github_hook_pages, page_events
from patchstream.stores.graph.cypher import CypherGraphStore
from patchstream.streams.blobs import BlobReader
from patchstream.streams.parse_batch import PreviousStates, parse_batch
from patchstream.streams.parse_stage import ParseStage
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


def _opened(number: int, title: str, at: str) -> dict[str, object]:
    return {**_issue(number, title), "created_at": at, "updated_at": at}


def test_an_overlay_at_an_older_commit_does_not_see_discussions_opened_after_it(
    graph: CypherGraphStore, tenant: str, root: Path
) -> None:
    """No future leak: an evaluation at an issue's base commit must not read the issue, the
    pull request that fixed it or the review comments on the file, all opened later."""
    pull = {**_opened(3, "Area from the side", "2026-02-10T00:00:00Z"), "head": {"sha": "d" * 40}}
    late_note = {"id": 41, "body": "use side ** 2", "path": "geo/shapes.py",
                 "user": {"login": "cy"}, "created_at": "2026-02-20T00:00:00Z",
                 "updated_at": "2026-02-20T00:00:00Z"}  # fmt: skip
    early_note = {
        **late_note,
        "id": 40,
        "body": "looks fine",
        "created_at": "2026-01-20T00:00:00Z",
        "updated_at": "2026-01-20T00:00:00Z",
    }
    pages = [
        *github_hook_pages("issues", {"action": "opened", "issue": _opened(
            1, "Squares exist", "2026-01-15T00:00:00Z")}),
        *github_hook_pages("issues", {"action": "opened", "issue": _opened(
            2, "Square.area returns 1", "2026-02-15T00:00:00+01:00")}),
        *github_hook_pages("pull_request", {"action": "opened", "pull_request": pull}),
        *github_hook_pages("pull_request_review_comment", {
            "action": "created", "pull_request": pull, "comment": late_note}),
        *github_hook_pages("pull_request_review_comment", {
            "action": "created", "pull_request": pull, "comment": early_note}),
    ]  # fmt: skip
    version = _apply(graph, tenant, pages, 0)
    commit(root, {"geo/shapes.py": AREA_V1}, "Add squares", "2026-01-01T12:00:00Z")
    c2 = commit(root, {"geo/util.py": "X = 1\n"}, "Add util", "2026-02-01T12:00:00Z")
    git(root, "branch", "at-base")
    commit(root, {"geo/shapes.py": AREA_V2}, "Fix the area (#3)", "2026-03-01T12:00:00Z")
    publisher = Publisher(graph, tenant)
    publisher.version = version
    publisher.index(root, "main")
    git(root, "checkout", "-q", "at-base")
    graph.declare_overlay(tenant, "app", "at-base", "main", "branch")
    publisher.index(root, "at-base", base="main")

    view = graph.view(tenant, "app", "at-base")
    assert view is not None
    main_scope = view.scopes[-1]
    seen = {p for p in (f"_discussions/{k}.md" for k in (
        "issue-1", "issue-2", "pr-3", "pr-3/review-comment-40", "pr-3/review-comment-41"))
        if view.visible(main_scope, p)}  # fmt: skip
    # Issue 2 opened at 23:00 UTC on Feb 14th (its zone read), after the head of Feb 1st.
    assert seen == {"_discussions/issue-1.md", "_discussions/pr-3/review-comment-40.md"}
    assert [h.sha for h in graph.history(tenant, "app", "at-base", path="geo/util.py")] == [c2]
    notes = graph.path_discussions(tenant, "app", "at-base", ["geo/shapes.py"])
    assert [n["key"] for n in notes["geo/shapes.py"]] == ["pr-3/review-comment-40"]
    # Main, at the newest commit, sees every discussion, later ones included.
    on_main = graph.path_discussions(tenant, "app", "main", ["geo/shapes.py"])["geo/shapes.py"]
    assert [n["key"] for n in on_main] == ["pr-3/review-comment-41", "pr-3/review-comment-40"]
    # A workspace over main (no head of its own) is not behind: it hides nothing.
    graph.declare_overlay(tenant, "app", "main~agent", "main", "workspace")
    ahead = graph.view(tenant, "app", "main~agent")
    assert ahead is not None
    assert ahead.visible(ahead.scopes[-1], "_discussions/issue-2.md")


def test_deleting_a_thread_deletes_its_comments_through_the_parse_stage(
    graph: CypherGraphStore, tenant: str
) -> None:
    """GitHub sends one ``deleted`` event for an issue and none for its comments: the parse
    stage finds the notes in the graph and deletes each (graph and vectors alike)."""
    issue = _issue(12, "Square.area returns 1")
    comments = [{"id": n, "body": f"comment {n}", "user": {"login": "cy"},
                 "created_at": "2026-01-05T00:00:00Z", "updated_at": "2026-01-05T00:00:00Z"}
                for n in (7, 8)]  # fmt: skip
    pages = [*github_hook_pages("issues", {"action": "opened", "issue": issue})]
    for comment in comments:
        pages += github_hook_pages("issue_comment", {"action": "created", "issue": issue,
                                                     "comment": comment})  # fmt: skip
    other = {**_issue(13, "Another"), "number": 13}
    pages += github_hook_pages("issue_comment", {"action": "created", "issue": other,
                                                 "comment": {**comments[0], "id": 9}})  # fmt: skip
    _apply(graph, tenant, pages, 0)
    assert graph.thread_notes(tenant, "app", "main", "issue-12") == [
        "_discussions/issue-12/comment-7.md",
        "_discussions/issue-12/comment-8.md",
    ]

    [deleted] = github_hook_pages("issues", {"action": "deleted", "issue": issue})
    stage = ParseStage(FileStateBuilder(), BlobReader(""))
    states = PreviousStates(graph, capacity=16)
    [event] = page_events(tenant, "app", "main", [deleted], "github")
    [outcome] = parse_batch(stage, states, [event])
    assert outcome.output is not None
    follow_ups = outcome.output.events
    assert [(e.op, e.path, e.version) for e in follow_ups] == [
        ("delete", "_discussions/issue-12/comment-7.md", event.version),
        ("delete", "_discussions/issue-12/comment-8.md", event.version),
    ]
    deltas = [d for o in parse_batch(stage, states, follow_ups) for d in o.output.deltas]  # type: ignore[union-attr]
    for delta in [*outcome.output.deltas, *deltas]:
        assert graph.apply(delta).applied
    assert graph.thread_notes(tenant, "app", "main", "issue-12") == []
    assert graph.thread_notes(tenant, "app", "main", "issue-13") == [
        "_discussions/issue-13/comment-9.md"
    ]
