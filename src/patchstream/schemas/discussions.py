"""A discussion as the graph keeps it: an issue, a pull request (GitHub) or a merge request
(GitLab), and each comment or review on one.

Discussions travel as ``_discussions/`` files of a repository's default branch, like commit
pages: ``issue-12.md``, ``pr-34.md``, ``mr-5.md`` for the thread itself and
``pr-34/comment-987.md`` for each note on it. A file per note makes every webhook an upsert
or a delete of one file (no read-modify-write of a thread), and an edit or a deleted comment
is one event. The parse stage reads this record from the file's path and header lines.

Everything here was written by strangers: titles, labels and names are kept printable and
short, urls must be http(s) without spaces, and the issues a thread closes are references
inside the same repository only (``other/repo#12`` names nothing).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from patchstream.schemas.history import SHA, printable

DISCUSSIONS_DIR = "_discussions/"  # issues, PR/MRs and their notes, as prose files

DiscussionKind = Literal["issue", "pr", "mr"]
# A thread: issue-12.md; a note on one: issue-12/comment-987.md (comment, review,
# review-comment: GitHub's three; GitLab's notes are comments).
_PAGE = re.compile(
    r"_discussions/(issue|pr|mr)-([1-9][0-9]{0,8})(?:/(comment|review|review-comment)-([1-9][0-9]{0,18}))?\.md"
)
NOTE_KINDS = ("comment", "review", "review-comment")
REF = re.compile(r"(issue|pr|mr)-[1-9][0-9]{0,8}")
URL = re.compile(r"https?://[^\s\x00-\x1f\x7f<>\"']{1,490}")
LABEL_CHARS = 100
MAX_LABELS = 30
MAX_CLOSES = 20
MAX_PATHS = 20


class DiscussionInfo(BaseModel):
    """One discussion page: a thread (``note`` empty) or one note on a thread."""

    model_config = ConfigDict(frozen=True)

    kind: DiscussionKind
    number: int = Field(ge=1, lt=1_000_000_000)
    note: str = Field(default="", max_length=40, description="comment-987; empty: the thread")
    title: str = Field(default="", max_length=512)
    state: str = Field(default="", max_length=20, pattern=r"^[a-z_]*$")
    author: str = Field(default="", max_length=128)
    date: str = Field(default="", max_length=40)
    url: str = Field(default="", max_length=500)
    labels: tuple[str, ...] = Field(default=(), max_length=MAX_LABELS)
    closes: tuple[str, ...] = Field(
        default=(), max_length=MAX_CLOSES, description="threads it closes: issue-12, mr-3"
    )
    commits: tuple[str, ...] = Field(
        default=(), max_length=10, description="a PR/MR's head and merge commits"
    )
    paths: tuple[str, ...] = Field(
        default=(), max_length=MAX_PATHS, description="files a review comment is on"
    )

    @property
    def key(self) -> str:
        """``issue-12`` or ``issue-12/comment-987``: its identity inside a repository."""
        thread = f"{self.kind}-{self.number}"
        return f"{thread}/{self.note}" if self.note else thread

    @property
    def thread(self) -> str:
        return f"{self.kind}-{self.number}"

    @field_validator("title", "author", "date")
    @classmethod
    def _printable(cls, value: str) -> str:
        return printable(value)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if value and not URL.fullmatch(value):
            raise ValueError("url is not an http(s) address without spaces")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(printable(label).strip()[:LABEL_CHARS] for label in value)

    @field_validator("closes")
    @classmethod
    def _closes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for ref in value:
            if not REF.fullmatch(ref):
                raise ValueError(f"{ref[:40]!r} is not a discussion reference")
        return value

    @field_validator("commits")
    @classmethod
    def _commits(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for sha in value:
            if not SHA.fullmatch(sha):
                raise ValueError(f"{sha[:60]!r} is not a commit sha")
        return value

    @field_validator("paths")
    @classmethod
    def _paths(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from patchstream.errors import ContractError
        from patchstream.schemas.paths import validate_repo_path

        try:
            return tuple(validate_repo_path(path) for path in value)
        except ContractError as exc:
            raise ValueError(str(exc)) from exc


def discussion_path(kind: str, number: int, note: str = "") -> str:
    thread = f"{DISCUSSIONS_DIR}{kind}-{number}"
    return f"{thread}/{note}.md" if note else f"{thread}.md"


def page_key(path: str) -> tuple[DiscussionKind, int, str] | None:
    """(kind, number, note) of a discussion page's path; None for any other path."""
    found = _PAGE.fullmatch(path)
    if found is None:
        return None
    kind: DiscussionKind = found.group(1)  # type: ignore[assignment]
    note = f"{found.group(3)}-{found.group(4)}" if found.group(3) else ""
    return kind, int(found.group(2)), note


def is_discussion_path(path: str) -> bool:
    return path.startswith(DISCUSSIONS_DIR)


def epoch_of(stamp: str) -> float | None:
    """Seconds since the epoch of an ISO 8601 stamp as GitHub (``...Z``), GitLab's API
    (``...+00:00``, ``.000Z``), GitLab's hooks (``... UTC``) and git (``%aI``) write them;
    None for none or one that does not parse (a stamp without a zone is read as UTC)."""
    if not stamp:
        return None
    try:
        at = datetime.fromisoformat(stamp.replace(" UTC", "+00:00").replace("Z", "+00:00"))
    except ValueError:
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.timestamp()


# Closing keywords, as GitHub and GitLab read them: "Fixes #12", "closes !3", "Resolves #7".
_CLOSING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?|implement(?:s|ed)?)\s*:?\s+"
    r"((?:[#!][1-9][0-9]{0,8}(?:\s*(?:,|and)\s*)?)+)(?![\w/#!])",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"([#!])([1-9][0-9]{0,8})")


def closing_refs(text: str, issue_kind: str = "issue", merge_kind: str = "mr") -> tuple[str, ...]:
    """The threads a body says it closes, inside its own repository: ``#N`` is an issue,
    ``!N`` a merge request (GitLab). ``owner/repo#N`` and urls to other projects name
    nothing: the reference must stand alone after the keyword."""
    found: dict[str, None] = {}
    for group in _CLOSING.finditer(text[:100_000]):
        for sign, number in _NUMBER.findall(group.group(1)):
            found[f"{issue_kind if sign == '#' else merge_kind}-{number}"] = None
    return tuple(found)[:MAX_CLOSES]
