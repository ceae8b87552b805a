"""The ``trace-events`` contract: calls a traced command made, from the functions of one file.

A runtime edge is a fact about two files at two contents: it stands while the caller's file
still has ``content_hash`` and the callee's file ``callee_hash``, and an edit of either fences
it out until the code is traced again. Events are keyed like the file's patch events, so a
trace and the edits of its file stay in order.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from patchstream.errors import ContractError
from patchstream.schemas.events import NAME_PATTERN, check_name, file_key, require_timezone
from patchstream.schemas.paths import CONTROL_CHARACTERS, validate_repo_path

CONTENT_HASH_PATTERN = r"^[0-9a-f]{32}$"  # xxh3-128, hex
MAX_CALLS_PER_EVENT = 20_000
MAX_COUNT = 10**12  # calls of one pair in one trace; more is not a count a run can make
_SYMBOL_ID_MAX = 2048


def _repo_path(value: str) -> str:
    try:
        return validate_repo_path(value)
    except ContractError as exc:  # re-raised as a pydantic ValueError with the reason
        raise ValueError(str(exc)) from exc


class TracedCall(BaseModel):
    """One caller -> callee pair the command executed, ``count`` times."""

    model_config = ConfigDict(frozen=True)

    caller: str = Field(description="symbol id of the caller, a function (or module) of the file")
    callee: str = Field(description="symbol id of the function called")
    callee_path: str
    callee_hash: str = Field(pattern=CONTENT_HASH_PATTERN,
                             description="xxh3-128 of the callee's file as traced")  # fmt: skip
    count: int = Field(ge=1, le=MAX_COUNT)

    @field_validator("callee_path")
    @classmethod
    def _safe_path(cls, value: str) -> str:
        return _repo_path(value)

    @field_validator("caller", "callee")
    @classmethod
    def _plain_id(cls, value: str) -> str:
        if len(value) > _SYMBOL_ID_MAX or CONTROL_CHARACTERS.search(value):
            raise ValueError(f"symbol id {value[:80]!r} is too long or has a control character")
        return value


class TraceEvent(BaseModel):
    """The traced calls whose caller lies in ``path``, with the content both files had."""

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[1] = 1
    event_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    tenant: str = Field(pattern=NAME_PATTERN)
    repo: str = Field(pattern=NAME_PATTERN)
    ref: str = Field(default="main", pattern=NAME_PATTERN)
    path: str
    content_hash: str = Field(pattern=CONTENT_HASH_PATTERN)
    command: str = Field(max_length=2000, description="what was traced, as the user typed it")
    traced_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    calls: list[TracedCall] = Field(max_length=MAX_CALLS_PER_EVENT)

    @field_validator("path")
    @classmethod
    def _safe_path(cls, value: str) -> str:
        return _repo_path(value)

    @field_validator("tenant", "repo", "ref")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        return check_name(value)

    @field_validator("command")
    @classmethod
    def _printable(cls, value: str) -> str:
        if CONTROL_CHARACTERS.search(value):
            raise ValueError("command has a control character")
        return value

    @field_validator("traced_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return require_timezone(value, "traced_at")

    @model_validator(mode="after")
    def _ids_in_their_files(self) -> Self:
        """Every id names a symbol of the file it claims: a caller of this event's file, a
        callee of its ``callee_path``, both of this repository."""
        mine = f"{self.repo}::{self.path}::"
        for call in self.calls:
            if not call.caller.startswith(mine):
                raise ValueError(f"caller {call.caller[:120]!r} is not a symbol of {self.path!r}")
            if not call.callee.startswith(f"{self.repo}::{call.callee_path}::"):
                raise ValueError(
                    f"callee {call.callee[:120]!r} is not a symbol of {call.callee_path!r}"
                )
        return self

    @property
    def occurred_at(self) -> datetime:
        """When the calls happened (the sinks' sync lag is measured from it)."""
        return self.traced_at

    @property
    def key(self) -> str:
        """The caller file's key: the same partition as the file's patch events."""
        return file_key(self.tenant, self.repo, self.ref, self.path)
