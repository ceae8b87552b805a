"""Issues, pull/merge requests, reviews and comments -> ``_discussions/`` pages.

One reader per platform takes an object in the platform's REST shape (a webhook carries the
same objects: ``issue``, ``pull_request``, ``comment``, ``review``; GitLab's
``object_attributes``) and returns the page it becomes. Both the gateway's webhooks and
``patchstream import discussions`` use them.

Every field is a stranger's: a number must be an integer in range, text must be text, and a
record that is not what it claims is refused with the field that is wrong (``RecordError``),
never half-read. A page's version is the platform's ``updated_at``: a late redelivery of an
older edit cannot overwrite a newer one.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from patchstream.errors import ContractError
from patchstream.parsing.discussion_text import render_discussion
from patchstream.schemas.discussions import (
    DiscussionInfo,
    closing_refs,
    discussion_path,
    epoch_of,
)
from patchstream.schemas.events import ACTOR_PATTERN, PatchEvent, Source
from patchstream.schemas.history import SHA


class RecordError(ContractError):
    """A record that cannot be a discussion page (what is wrong is in the message)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="bad_discussion")


@dataclass(frozen=True)
class Page:
    path: str
    content: str | None  # None: the page is deleted
    version: int
    actor: str | None = None


def _field(record: dict[str, Any], name: str, kind: type, default: Any = None) -> Any:
    value = record.get(name, default)
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise RecordError(f"{name} is {type(value).__name__}, not {kind.__name__}")
    return value


def _number(record: dict[str, Any], name: str) -> int:
    value = _field(record, name, int)
    if value is None or not 1 <= value < 1_000_000_000:
        raise RecordError(f"{name} is missing or out of range")
    return int(value)


def _note_id(record: dict[str, Any]) -> int:
    value = _field(record, "id", int)
    if value is None or not 1 <= value < 10**19:
        raise RecordError("id is missing or out of range")
    return int(value)


def _text(record: dict[str, Any], name: str) -> str:
    return str(_field(record, name, str, ""))


def _login(record: dict[str, Any], name: str, key: str) -> str:
    who = _field(record, name, dict, {})
    return str(_field(who, key, str, ""))[:128]


def version_of(stamp: str) -> int:
    """Nanoseconds of an ISO 8601 stamp; now when there is none (or it does not parse)."""
    at = epoch_of(stamp)
    return time.time_ns() if at is None else max(0, int(at * 1e9))


def _shas(*values: object) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if isinstance(v, str) and SHA.fullmatch(v)))


def _labels(record: dict[str, Any]) -> tuple[str, ...]:
    labels = _field(record, "labels", list, [])
    names = [item if isinstance(item, str) else _mapping(item).get("name") or
             _mapping(item).get("title") for item in labels[:50]]  # fmt: skip
    return tuple(str(name) for name in names if isinstance(name, str) and name.strip())[:30]


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _page(info: dict[str, Any], body: str, stamp: str) -> Page:
    try:
        discussion = DiscussionInfo(**info)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise RecordError(f"{where}: {error['msg']}") from exc
    path = discussion_path(discussion.kind, discussion.number, discussion.note)
    return Page(path, render_discussion(discussion, body), version_of(stamp))


def _clip(text: str, limit: int) -> str:
    return text[:limit]


# -- GitHub -----------------------------------------------------------------------------------


def github_thread(record: dict[str, Any], pull: bool | None = None) -> Page:
    """An issue or a pull request (REST ``/issues`` lists both; a PR has ``pull_request``)."""
    number = _number(record, "number")
    is_pull = pull if pull is not None else ("pull_request" in record or "merged_at" in record)
    body = _text(record, "body")
    state = _clip(_text(record, "state"), 20).lower()
    if is_pull and (_field(record, "merged", bool, False) or _text(record, "merged_at")):
        state = "merged"
    commits: tuple[str, ...] = ()
    if is_pull:
        head = _mapping(record.get("head")).get("sha")
        merged = record.get("merge_commit_sha") if state == "merged" else None
        commits = _shas(head, merged)
    info = {"kind": "pr" if is_pull else "issue", "number": number,
            "title": _clip(_text(record, "title"), 512), "state": _state(state),
            "author": _login(record, "user", "login"),
            "date": _clip(_text(record, "created_at"), 40),
            "url": _clip(_text(record, "html_url"), 500), "labels": _labels(record),
            "closes": closing_refs(body) if is_pull else (), "commits": commits}  # fmt: skip
    return _page(info, body, _text(record, "updated_at"))


def github_note(record: dict[str, Any], kind: str, number: int, note: str) -> Page:
    """A comment, a review or a review comment on thread ``kind``-``number``."""
    body = _text(record, "body")
    path = _text(record, "path")
    stamp = _text(record, "updated_at") or _text(record, "submitted_at")
    info = {"kind": kind, "number": number, "note": f"{note}-{_note_id(record)}",
            "author": _login(record, "user", "login"),
            "date": _clip(_text(record, "created_at") or _text(record, "submitted_at"), 40),
            "url": _clip(_text(record, "html_url"), 500),
            "state": _state(_clip(_text(record, "state"), 20).lower()),
            "commits": _shas(record.get("commit_id")),
            "paths": (path,) if path else ()}  # fmt: skip
    return _page(info, body, stamp)


def number_from_url(url: str) -> int:
    """The trailing number of ``.../issues/12`` or ``.../pulls/12``."""
    tail = url.rstrip("/").rsplit("/", 1)[-1]
    if not tail.isdigit() or not 1 <= int(tail) < 1_000_000_000:
        raise RecordError("the url names no issue or pull request number")
    return int(tail)


def _state(value: str) -> str:
    return "".join(ch for ch in value if ch.isascii() and (ch.isalpha() or ch == "_"))


# -- GitLab -----------------------------------------------------------------------------------


def gitlab_thread(record: dict[str, Any], merge_request: bool | None = None) -> Page:
    """An issue or a merge request (REST shape or a hook's ``object_attributes``)."""
    number = _number(record, "iid")
    is_mr = merge_request if merge_request is not None else "source_branch" in record
    body = _text(record, "description")
    state = _clip(_text(record, "state"), 20).lower()
    last = _mapping(record.get("last_commit")).get("id")
    commits = _shas(record.get("sha"), last, record.get("merge_commit_sha"),
                    record.get("squash_commit_sha")) if is_mr else ()  # fmt: skip
    info = {"kind": "mr" if is_mr else "issue", "number": number,
            "title": _clip(_text(record, "title"), 512), "state": _state(state),
            "author": _login(record, "author", "username"),
            "date": _clip(_text(record, "created_at"), 40),
            "url": _clip(_text(record, "web_url") or _text(record, "url"), 500),
            "labels": _labels(record),
            "closes": closing_refs(body) if is_mr else (), "commits": commits[:10]}  # fmt: skip
    return _page(info, body, _text(record, "updated_at"))


def gitlab_note(record: dict[str, Any], kind: str, number: int) -> Page:
    """A note on an issue or a merge request; a diff note names its file."""
    position = _mapping(record.get("position"))
    path = position.get("new_path") or position.get("old_path")
    info = {"kind": kind, "number": number, "note": f"comment-{_note_id(record)}",
            "author": _login(record, "author", "username"),
            "date": _clip(_text(record, "created_at"), 40),
            "url": _clip(_text(record, "url") or _text(record, "web_url"), 500),
            "paths": (path,) if isinstance(path, str) and path else ()}  # fmt: skip
    body = _text(record, "body") or _text(record, "note")
    return _page(info, body, _text(record, "updated_at"))


GITLAB_NOTEABLE = {"Issue": "issue", "MergeRequest": "mr"}


# -- Webhooks ---------------------------------------------------------------------------------

GITHUB_EVENTS = frozenset({"issues", "issue_comment", "pull_request", "pull_request_review",
                           "pull_request_review_comment"})  # fmt: skip
GITLAB_EVENTS = frozenset({"Issue Hook", "Merge Request Hook", "Note Hook",
                           "Confidential Issue Hook", "Confidential Note Hook"})  # fmt: skip


def _deleted(page: Page) -> Page:
    return Page(page.path, None, time.time_ns())


def github_hook_pages(event: str, payload: dict[str, Any]) -> list[Page]:
    """The page a GitHub discussion event writes (or deletes); [] for an event that changes
    nothing a page holds."""
    action = payload.get("action")
    if not isinstance(action, str):
        raise RecordError("action is missing")
    issue = _mapping(payload.get("issue"))
    pull = _mapping(payload.get("pull_request"))
    if event == "issues":
        page = github_thread(issue, pull="pull_request" in issue)
    elif event == "pull_request":
        page = github_thread(pull, pull=True)
    elif event == "issue_comment":
        kind = "pr" if "pull_request" in issue else "issue"
        page = github_note(_mapping(payload.get("comment")), kind, _number(issue, "number"),
                           "comment")  # fmt: skip
    elif event == "pull_request_review":
        page = github_note(_mapping(payload.get("review")), "pr", _number(pull, "number"),
                           "review")  # fmt: skip
    elif event == "pull_request_review_comment":
        page = github_note(_mapping(payload.get("comment")), "pr", _number(pull, "number"),
                           "review-comment")  # fmt: skip
    else:
        return []
    return [_deleted(page) if action == "deleted" else page]


def gitlab_hook_pages(event: str, payload: dict[str, Any]) -> list[Page]:
    """The page a GitLab issue, merge request or note hook writes. A confidential issue or
    note is not indexed: it is deleted if it was (an issue made confidential goes)."""
    attrs = _mapping(payload.get("object_attributes"))
    user = _login(payload, "user", "username")
    confidential = event.startswith("Confidential") or attrs.get("confidential") is True
    labels = {"labels": payload["labels"]} if isinstance(payload.get("labels"), list) else {}
    if event in ("Issue Hook", "Confidential Issue Hook", "Merge Request Hook"):
        opened = attrs.get("action") in (None, "open")
        record = {**attrs, **labels, "author": {"username": user if opened else ""}}
        page = gitlab_thread(record, merge_request=event == "Merge Request Hook")
        return [_deleted(page) if confidential else page]
    if event in ("Note Hook", "Confidential Note Hook"):
        kind = GITLAB_NOTEABLE.get(str(attrs.get("noteable_type")))
        if kind is None or attrs.get("system") is True:
            return []  # a note on a commit or a snippet, or GitLab's own "changed the title"
        parent = _mapping(payload.get("issue" if kind == "issue" else "merge_request"))
        page = gitlab_note({**attrs, "author": {"username": user}}, kind, _number(parent, "iid"))
        return [_deleted(page) if confidential else page]
    return []


_ACTOR = re.compile(ACTOR_PATTERN)


def page_events(
    tenant: str, repo: str, ref: str, pages: list[Page], source: Source, actor: object = None,
    batch_id: str | None = None,
) -> list[PatchEvent]:  # fmt: skip
    """The patch events of ``pages`` on the repository's default branch ``ref``."""
    who = actor if isinstance(actor, str) and _ACTOR.fullmatch(actor) else None
    return [PatchEvent(tenant=tenant, repo=repo, ref=ref, path=page.path,
                       op="upsert" if page.content is not None else "delete",
                       content=page.content, version=page.version, source=source, actor=who,
                       batch_id=batch_id)
            for page in pages]  # fmt: skip
