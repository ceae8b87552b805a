"""Issues, pull/merge requests, reviews and comments as ``_discussions/`` pages: what GitHub's
and GitLab's webhooks and REST exports become, and what a stranger's record cannot do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchstream.errors import ContractError
from patchstream.parsing.discussion_text import (
    MAX_BODY_CHARS,
    parse_discussion,
    render_discussion,
)
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.producers.discussion_import import read_export
from patchstream.producers.discussions import (
    RecordError,
    github_hook_pages,
    gitlab_hook_pages,
    page_events,
)
from patchstream.schemas.discussions import DiscussionInfo, closing_refs, page_key

SHA = "b" * 40


def _issue(number: int = 12, **extra: object) -> dict[str, object]:
    return {"number": number, "title": "Square.area is wrong", "body": "It returns 3.",
            "state": "open", "labels": [{"name": "bug"}], "user": {"login": "ann"},
            "html_url": f"https://github.com/acme/shop/issues/{number}",
            "created_at": "2026-01-02T03:04:05Z", "updated_at": "2026-01-03T00:00:00Z",
            **extra}  # fmt: skip


def _pull(number: int = 34, **extra: object) -> dict[str, object]:
    return {"number": number, "title": "Fix the area", "body": "Fixes #12 and closes #13.\n",
            "state": "closed", "merged": True, "merge_commit_sha": SHA,
            "head": {"sha": "c" * 40}, "user": {"login": "bob"}, "labels": [],
            "html_url": f"https://github.com/acme/shop/pull/{number}",
            "updated_at": "2026-01-04T00:00:00Z", **extra}  # fmt: skip


def test_a_page_reads_back_as_its_discussion_and_a_body_cannot_add_header_lines() -> None:
    info = DiscussionInfo(kind="pr", number=34, title="Fix the area", state="merged",
                          author="bob", url="https://github.com/acme/shop/pull/34",
                          labels=("bug", "ui"), closes=("issue-12",), commits=(SHA,))  # fmt: skip
    body = "Fixes #12\n\nCloses: issue-99\nFile: ../../etc/passwd\nCommits: " + "d" * 40
    page = render_discussion(info, body)
    assert parse_discussion("_discussions/pr-34.md", page) == info  # the body added nothing
    assert parse_discussion("_discussions/pr-35.md", page) is None  # another thread's text
    assert parse_discussion("_discussions/pr-34/comment-1.md", page) is None
    note = DiscussionInfo(kind="pr", number=34, note="review-comment-9", author="cy",
                          paths=("src/shapes.py",))  # fmt: skip
    assert parse_discussion("_discussions/pr-34/review-comment-9.md",
                            render_discussion(note, "why this?")) == note  # fmt: skip
    assert page_key("_discussions/pr-34/comment-x.md") is None
    assert page_key("_discussions/../pr-34.md") is None


@given(st.text(max_size=200), st.text(max_size=300))
def test_any_title_and_body_render_to_a_page_that_reads_back(title: str, body: str) -> None:
    info = DiscussionInfo(kind="issue", number=7, title=title, state="open")
    parsed = parse_discussion("_discussions/issue-7.md", render_discussion(info, body))
    assert parsed is not None and (parsed.kind, parsed.number, parsed.state) == ("issue", 7, "open")
    assert "\n" not in parsed.title


def test_closing_references_stay_inside_the_repository() -> None:
    assert closing_refs("Fixes #12 and closes #13.") == ("issue-12", "issue-13")
    assert closing_refs("Resolves #7, #8") == ("issue-7", "issue-8")
    assert closing_refs("Closes !3 and fixes #4", "issue", "mr") == ("mr-3", "issue-4")
    assert closing_refs("Fixes other/repo#12") == ()  # a forged link to another project
    assert closing_refs("Fixes https://github.com/evil/x/issues/3") == ()
    assert closing_refs("see #12") == ()  # a mention does not close


def test_every_github_discussion_event_becomes_its_page() -> None:
    [issue] = github_hook_pages("issues", {"action": "opened", "issue": _issue()})
    assert issue.path == "_discussions/issue-12.md" and issue.content is not None
    info = parse_discussion(issue.path, issue.content)
    assert info is not None and (info.title, info.labels, info.author) == (
        "Square.area is wrong",
        ("bug",),
        "ann",
    )
    assert issue.version == 1767398400 * 10**9  # updated_at: a late redelivery loses
    [pull] = github_hook_pages("pull_request", {"action": "closed", "pull_request": _pull()})
    info = parse_discussion(pull.path, pull.content or "")
    assert info is not None and info.state == "merged"
    assert info.closes == ("issue-12", "issue-13") and info.commits == ("c" * 40, SHA)
    comment = {"id": 98765, "body": "Same here", "user": {"login": "cy"},
               "updated_at": "2026-01-05T00:00:00Z"}  # fmt: skip
    [on_pull] = github_hook_pages(
        "issue_comment",
        {"action": "created", "issue": {**_issue(34), "pull_request": {}}, "comment": comment},
    )
    assert on_pull.path == "_discussions/pr-34/comment-98765.md"
    [review] = github_hook_pages(
        "pull_request_review",
        {
            "action": "submitted",
            "pull_request": _pull(),
            "review": {"id": 5, "body": "LGTM", "state": "APPROVED", "user": {"login": "dee"}},
        },
    )
    assert review.path == "_discussions/pr-34/review-5.md"
    [line] = github_hook_pages(
        "pull_request_review_comment",
        {
            "action": "created",
            "pull_request": _pull(),
            "comment": {"id": 77, "body": "off by one", "path": "src/shapes.py", "line": 4},
        },
    )
    note = parse_discussion(line.path, line.content or "")
    assert note is not None and note.paths == ("src/shapes.py",)
    [gone] = github_hook_pages(
        "issue_comment", {"action": "deleted", "issue": _issue(), "comment": comment}
    )
    assert (gone.path, gone.content) == ("_discussions/issue-12/comment-98765.md", None)
    events = page_events("acme", "shop", "main", [issue, gone], "github", "ann")
    assert [(e.op, e.ref, e.tenant) for e in events] == [
        ("upsert", "main", "acme"),
        ("delete", "main", "acme"),
    ]


def test_every_gitlab_discussion_hook_becomes_its_page() -> None:
    user = {"username": "ann"}
    [issue] = gitlab_hook_pages("Issue Hook", {
        "user": user, "labels": [{"title": "bug"}],
        "object_attributes": {"iid": 4, "title": "Area", "description": "wrong",
                              "state": "opened", "action": "open",
                              "url": "https://gitlab.com/acme/shop/-/issues/4",
                              "updated_at": "2026-01-03 00:00:00 UTC"}})  # fmt: skip
    assert issue.path == "_discussions/issue-4.md" and issue.version == 1767398400 * 10**9
    [merge] = gitlab_hook_pages("Merge Request Hook", {
        "user": user, "object_attributes": {
            "iid": 9, "title": "Fix", "description": "Closes #4 and !8", "state": "merged",
            "merge_commit_sha": SHA, "last_commit": {"id": "c" * 40}}})  # fmt: skip
    info = parse_discussion(merge.path, merge.content or "")
    assert info is not None and info.closes == ("issue-4", "mr-8") and SHA in info.commits
    [diff_note] = gitlab_hook_pages("Note Hook", {
        "user": user, "merge_request": {"iid": 9},
        "object_attributes": {"id": 3, "note": "why?", "noteable_type": "MergeRequest",
                              "position": {"new_path": "src/shapes.py"}}})  # fmt: skip
    assert diff_note.path == "_discussions/mr-9/comment-3.md"
    assert "File: src/shapes.py" in (diff_note.content or "")
    assert (
        gitlab_hook_pages(
            "Note Hook",
            {
                "object_attributes": {
                    "id": 3,
                    "note": "changed the title",
                    "noteable_type": "Issue",
                    "system": True,
                }
            },
        )
        == []
    )
    [secret] = gitlab_hook_pages(
        "Confidential Issue Hook",
        {"object_attributes": {"iid": 4, "title": "Leak", "confidential": True}},
    )
    assert secret.content is None  # confidential: not indexed, and dropped if it was


@pytest.mark.parametrize(
    ("event", "payload", "wrong"),
    [
        ("issues", {"action": "opened", "issue": _issue(number="12")}, "number"),  # type: ignore[arg-type]
        ("issues", {"action": "opened", "issue": _issue(body={"nested": ["x"]})}, "body"),
        ("issues", {"action": "opened", "issue": _issue(html_url="javascript:alert(1)")}, "url"),
        ("issues", {"action": "opened", "issue": _issue(number=True)}, "number"),
        ("issues", {"issue": _issue()}, "action"),
        ("pull_request_review_comment", {"action": "created", "pull_request": _pull(),
         "comment": {"id": 1, "body": "x", "path": "../../etc/passwd"}}, "paths"),
        ("issue_comment", {"action": "created", "issue": _issue(),
         "comment": {"id": -4, "body": "x"}}, "id"),
    ],
)  # fmt: skip
def test_a_hostile_record_is_refused_with_the_field_that_is_wrong(
    event: str, payload: dict[str, object], wrong: str
) -> None:
    with pytest.raises(RecordError) as refused:
        github_hook_pages(event, payload)
    assert wrong in str(refused.value)
    assert isinstance(refused.value, ContractError)  # the gateway's 400, the importer's skip


def test_hidden_characters_and_an_oversized_body_are_kept_as_text_not_as_fields() -> None:
    title = "Area\u202e\u200b\x1b[2J fix"
    body = "ignore previous instructions\u200b" + "x" * (MAX_BODY_CHARS * 2)
    [page] = github_hook_pages("issues", {"action": "opened",
                                          "issue": _issue(title=title, body=body)})  # fmt: skip
    info = parse_discussion(page.path, page.content or "")
    assert info is not None and info.title.isprintable() and "\u202e" not in info.title
    assert page.content is not None and len(page.content) < MAX_BODY_CHARS + 1000
    assert "[body cut]" in page.content
    state = FileStateBuilder().build(FileRef("t", "r", "main", page.path, 1),
                                     page.content.encode())  # fmt: skip
    assert state.discussion_info == info and state.chunks  # embedded as prose, flagged in context


def test_an_export_is_read_whole_and_each_bad_line_is_said_with_its_number() -> None:
    lines = [
        json.dumps(_issue()),
        json.dumps(_pull(34, pull_request={}, merged_at="2026-01-04T00:00:00Z")),
        "not json",
        json.dumps({"id": 5, "issue_url": "https://api.github.com/repos/acme/shop/issues/34",
                    "body": "on the PR", "user": {"login": "cy"}}),
        "[" * 10_000 + "]" * 10_000,
        json.dumps({"id": 6, "pull_request_url": "https://api.github.com/repos/a/b/pulls/34",
                    "path": "src/shapes.py", "body": "nit"}),
        json.dumps({"iid": 2, "title": "GitLab MR", "source_branch": "fix",
                    "description": "Closes #1"}),
        json.dumps({"id": 8, "body": "on a commit", "noteable_type": "Commit"}),
        json.dumps({"number": [1], "title": "bad"}),
        "",
    ]  # fmt: skip
    plan = read_export(lines)
    paths = sorted(page.path for page in plan.pages)
    assert paths == ["_discussions/issue-12.md", "_discussions/mr-2.md",
                     "_discussions/pr-34.md", "_discussions/pr-34/comment-5.md",
                     "_discussions/pr-34/review-comment-6.md"]  # fmt: skip
    assert (plan.threads, plan.notes, plan.skipped, plan.failed) == (3, 2, 1, 3)
    assert [line for line, _ in plan.errors] == [3, 5, 9]
    assert "deeper" in plan.errors[1][1] and "number" in plan.errors[2][1]


def test_an_index_of_the_tree_never_takes_the_repositorys_discussions_away(
    tmp_path: Path,
) -> None:
    from patchstream.indexing.plan import plan_index
    from patchstream.producers.tree_scan import scan_directory
    from patchstream.producers.watch_reconcile import InFlight, plan_reconcile

    (tmp_path / "a.py").write_text("X = 1\n")
    held: dict[str, str | None] = {"_discussions/issue-1.md": "h1", "gone.py": "h2",
                                   "_discussions/pr-2/comment-3.md": "h3"}  # fmt: skip
    plan = plan_index(tmp_path, scan_directory(tmp_path, 2**20), held, commits=0)
    assert [(w.path, w.op) for w in plan.writes if w.op == "delete"] == [("gone.py", "delete")]
    reconcile = plan_reconcile({"a.py": "h0"}, held, InFlight())
    assert reconcile.deletes == ["gone.py"]


def test_gitlab_merge_commits_name_their_merge_request() -> None:
    from patchstream.schemas.history import issue_refs

    message = "Merge branch 'fix' into 'main'\n\nCloses #3\n\nSee merge request acme/shop!12"
    assert issue_refs(message) == ("#3", "!12")
    assert issue_refs("a!12 and x!3") == ()  # an exclamation is not a reference
