"""A commit as the graph keeps it: who changed which files and symbols, when, and why.

Commits travel as the ``_commits/<sha>.md`` files of a ref (one event each, so they share the
outbox, the fences, overlays and the prose embedding with every other file); the parse stage
reads this record out of that text. ``_commits/HEAD`` names the commit a ref's history starts
from: a view sees only the commits reachable from it.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1 or SHA-256
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
ISSUE_REF = re.compile(r"[#!]\d{1,9}")  # !12: a GitLab merge request
_MENTION = re.compile(r"(?:(?<![\w&/])#|\bgh-|\bGH-)(\d{1,9})\b")
_MERGE_REQUEST = re.compile(r"\bmerge request [\w./-]*!(\d{1,9})\b")  # GitLab's merge commits
MAX_CHANGED_FILES = 300  # a merge of a vendored tree lists its first files, and says so
MAX_SYMBOLS_PER_FILE = 50


def _plain(value: str, what: str) -> str:
    if _CONTROL.search(value):
        raise ValueError(f"{what} holds control characters")
    return value


class ChangedFile(BaseModel):
    """One file a commit touched: lines added and removed, and the definitions its hunks
    fell in (by git's function context at that commit)."""

    model_config = ConfigDict(frozen=True)

    path: str = Field(min_length=1, max_length=1024)
    added: int = Field(default=0, ge=0)
    removed: int = Field(default=0, ge=0)
    symbols: tuple[str, ...] = Field(default=(), max_length=MAX_SYMBOLS_PER_FILE)

    @field_validator("path")
    @classmethod
    def _path_plain(cls, value: str) -> str:
        if value.startswith("/") or ".." in value.split("/"):
            raise ValueError(f"changed path {value!r} leaves the repository")
        return _plain(value, "a changed path")

    @field_validator("symbols")
    @classmethod
    def _names_plain(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_plain(name, "a symbol name")[:200] for name in value)


class CommitInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    sha: str = Field(pattern=SHA.pattern)
    parents: tuple[str, ...] = Field(default=(), max_length=64)
    author: str = Field(default="", max_length=256)
    date: str = Field(default="", max_length=40, description="ISO 8601, the author's date")
    subject: str = Field(default="", max_length=512)
    changes: tuple[ChangedFile, ...] = Field(default=(), max_length=MAX_CHANGED_FILES)
    changes_cut: int = Field(default=0, ge=0, description="changed files left off the list")
    issues: tuple[str, ...] = Field(
        default=(), max_length=20, description="issues the message names: #12, gh-12"
    )

    @field_validator("issues")
    @classmethod
    def _issue_refs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for ref in value:
            if not ISSUE_REF.fullmatch(ref):
                raise ValueError(f"{ref[:40]!r} is not an issue reference")
        return value

    @field_validator("parents")
    @classmethod
    def _parents_are_shas(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for parent in value:
            if not SHA.fullmatch(parent):
                raise ValueError(f"parent {parent[:60]!r} is not a commit sha")
        return value

    @field_validator("author", "date", "subject")
    @classmethod
    def _text_plain(cls, value: str) -> str:
        return _plain(value, "a commit field")


def issue_refs(message: str) -> tuple[str, ...]:
    """The issues a commit message names (``Fixes #12``, ``gh-12``), as ``#12``, and the merge
    request GitLab's merge commit names (``See merge request acme/shop!5``) as ``!5``; first 20."""
    found = dict.fromkeys(f"#{number}" for number in _MENTION.findall(message))
    found.update(dict.fromkeys(f"!{number}" for number in _MERGE_REQUEST.findall(message)))
    return tuple(found)[:20]


def printable(text: str) -> str:
    """``text`` with every character that is not printable as a space (a subject or an
    author read from a message a stranger wrote)."""
    return "".join(ch if ch.isprintable() else " " for ch in text)
