"""The ``patch-events`` contract: one change to one file."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from patchstream.errors import ContractError
from patchstream.schemas.paths import validate_repo_path

Op = Literal["upsert", "delete", "rename"]
Source = Literal["github", "gitlab", "agent", "cli", "snapshot"]

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._\-/]{0,199}$"
_NAME_PATTERN = NAME_PATTERN
# A ref as reads name it: a branch, or a workspace overlay of one (``main~agent-42``).
VIEW_REF_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._\-/]{0,199}(~[A-Za-z0-9][A-Za-z0-9._\-/]{0,199})?$"
# Ids of sessions and runs; actors (user names, bots such as ``dependabot[bot]``).
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}$"
ACTOR_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@+\[\]\-]{0,127}$"
OBJECT_ID_PATTERN = r"^[0-9a-f]{40}([0-9a-f]{24})?$"


class BlobRef(BaseModel):
    """Where to read content that is not inline: a git object in the repository's mirror."""

    model_config = ConfigDict(frozen=True)

    sha: str = Field(pattern=OBJECT_ID_PATTERN, description="git blob object id")
    size: int | None = Field(default=None, ge=0)


class EditHint(BaseModel):
    """The byte range an editor changed, to let the parser reuse the previous tree.

    Optional: the parser derives the same range itself from the previous content.
    """

    model_config = ConfigDict(frozen=True)

    start_byte: int = Field(ge=0)
    old_end_byte: int = Field(ge=0)
    new_end_byte: int = Field(ge=0)


class WithheldContent(BaseModel):
    """The producer kept the file's content on its machine (too large, binary or a secret):
    the index holds the file's name, flagged with the reason, and nothing of its content."""

    model_config = ConfigDict(frozen=True)

    reason: Literal["too_large", "binary", "secret"]
    size: int = Field(ge=0, description="the content's size in bytes")


class PatchEvent(BaseModel):
    """One file write, delete or rename, keyed by ``tenant/repo/ref/path``.

    ``version`` only grows for a file (producers use a monotonic clock in nanoseconds or a
    commit sequence); sinks ignore anything not newer than what they hold.
    """

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[1] = 1
    event_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    tenant: str = Field(pattern=_NAME_PATTERN)
    repo: str = Field(pattern=_NAME_PATTERN)
    ref: str = Field(default="main", pattern=_NAME_PATTERN, description="branch name")
    workspace: str | None = Field(
        default=None, pattern=_NAME_PATTERN, description="an agent session's private overlay"
    )
    base_ref: str | None = Field(
        default=None, pattern=_NAME_PATTERN,
        description="the ref is an overlay of this branch: it stores only what it changed",
    )  # fmt: skip
    closes_overlay: bool = Field(
        default=False, description="this delete drops the overlay (its branch is gone or merged)"
    )
    path: str
    op: Op
    old_path: str | None = Field(default=None, description="previous path, for op=rename")
    content: str | None = Field(default=None, description="new UTF-8 content, inline")
    blob: BlobRef | None = Field(default=None, description="new content as a git blob")
    withheld: WithheldContent | None = Field(
        default=None, description="op=upsert without content: a flagged name, and why"
    )
    content_hash: str | None = Field(default=None, description="xxh3-128 hex of the content")
    edit: EditHint | None = None
    version: int = Field(ge=0)
    source: Source
    actor: str | None = Field(default=None, pattern=ACTOR_PATTERN)
    run_id: str | None = Field(default=None, pattern=ID_PATTERN)
    session_id: str | None = Field(default=None, pattern=ID_PATTERN)
    commit: str | None = Field(default=None, pattern=OBJECT_ID_PATTERN)
    batch_id: str | None = Field(
        default=None, pattern=ID_PATTERN, description="shared by all files of one push"
    )
    occurred_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @field_validator("path", "old_path")
    @classmethod
    def _safe_path(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return validate_repo_path(value)
        except ContractError as exc:  # re-raised as a pydantic ValueError with the reason
            raise ValueError(str(exc)) from exc

    @field_validator("tenant", "repo", "ref", "workspace", "base_ref")
    @classmethod
    def _safe_name(cls, value: str | None) -> str | None:
        if value is not None:
            check_name(value)
        return value

    @field_validator("content")
    @classmethod
    def _encodable(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(
                    f"content is not valid UTF-8 text (lone surrogate at {exc.start})"
                ) from exc
        return value

    @field_validator("occurred_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return require_timezone(value, "occurred_at")

    @model_validator(mode="after")
    def _op_fields(self) -> Self:
        has_content = self.content is not None or self.blob is not None
        if self.content is not None and self.blob is not None:
            raise ValueError("send either inline content or a blob reference, not both")
        if self.withheld is not None:
            if has_content or self.op != "upsert":
                raise ValueError("withheld is for op=upsert with no content or blob")
            return self
        if self.op in ("upsert", "rename") and not has_content:
            # A rename carries the new content: the old path's state lives on another
            # partition, so the parse stage cannot borrow it.
            raise ValueError(f"op={self.op} needs content or blob")
        if self.op == "delete" and has_content:
            raise ValueError("op=delete carries no content")
        if self.op == "rename":
            if self.old_path is None:
                raise ValueError("op=rename needs old_path")
            if self.old_path == self.path:
                raise ValueError("op=rename needs old_path different from path")
        elif self.old_path is not None:
            raise ValueError("old_path is only allowed with op=rename")
        return self

    @property
    def key(self) -> str:
        """Partition key: every event of one file lands on one partition, in order."""
        return file_key(self.tenant, self.repo, self.ref, self.path, self.workspace)


def require_timezone(value: datetime, field: str) -> datetime:
    """A time an event carries: naive times are ambiguous across producers."""
    if value.tzinfo is None:
        raise ValueError(f"{field} must carry a timezone (UTC recommended)")
    return value


def check_name(value: str) -> str:
    """A tenant, repo, ref or workspace name: the pattern, and no ``..`` or empty component
    (``a/../b`` and ``a//b`` would alias other names in keys, paths and logs)."""
    if ".." in value or "//" in value or value.endswith("/") or value.endswith(".lock"):
        raise ValueError(f"name {value!r} has '..', an empty component or ends in '/' or '.lock'")
    return value


def refuse_bad_names(**names: str | None) -> None:
    """ContractError naming the first of ``names`` (tenant, repo, ref, base ...) that no event
    could carry: checked before anything is opened or published."""
    for field, value in names.items():
        if value is None:
            continue
        if not re.fullmatch(_NAME_PATTERN, value):
            raise ContractError(f"{field} {value[:80]!r} is not a valid name (letters, digits, "
                                "'.', '_', '-', '/'; at most 200; starting with a letter or "
                                "digit)", code="bad_name")  # fmt: skip
        try:
            check_name(value)
        except ValueError as exc:
            raise ContractError(f"{field}: {exc}", code="bad_name") from exc


def view_ref(ref: str, workspace: str | None) -> str:
    """The ref reads name: the branch, or its agent workspace overlay ``ref~workspace``."""
    return ref if workspace is None else f"{ref}~{workspace}"


def file_key(tenant: str, repo: str, ref: str, path: str, workspace: str | None = None) -> str:
    """``tenant/repo/ref/path``; a workspace overlay is ``ref~workspace``."""
    return f"{tenant}/{repo}/{view_ref(ref, workspace)}/{path}"
