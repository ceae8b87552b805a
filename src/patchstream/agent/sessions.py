"""Session state and its working state (the top tier of context): pure updates, bounded.

A session holds who takes part, its active run, its recent turns (bounded by count and by
tokens, oldest dropped first) and presentation preferences. Its working state is what the
agent's tools wrote: the scratchpad (open sub-goals, plan items, notes), the unified diffs of
its writes, and the last outputs of its tools, each truncated and hashed so the whole output
can be recognised without being stored. Tool output is data, never instructions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from patchstream.schemas.events import ID_PATTERN

MAX_TURNS = 20
MAX_TURN_TOKENS = 4000  # all kept turns together
MAX_SCRATCHPAD = 50
MAX_DIFFS = 20
MAX_TOOL_OUTPUTS = 10
DIFF_CHARS = 8000
OUTPUT_CHARS = 4000  # of stdout and of stderr each: the tail, where failures are
_PATH = r"^[^\x00-\x1f\x7f]{1,1024}$"


class Turn(BaseModel):
    role: Literal["user", "agent", "tool", "system"]
    text: str = Field(max_length=20_000)
    at: float = 0.0
    tokens: int = 0


class ScratchItem(BaseModel):
    item_id: str = Field(pattern=ID_PATTERN)
    kind: Literal["subgoal", "plan", "note"] = "note"
    text: str = Field(min_length=1, max_length=2000)
    done: bool = False
    at: float = 0.0


class Diff(BaseModel):
    repo: str | None = Field(default=None, max_length=200)
    path: str = Field(pattern=_PATH)
    diff: str = Field(max_length=1024 * 1024)
    sha256: str = ""
    truncated: bool = False
    at: float = 0.0


class ToolOutput(BaseModel):
    tool: str = Field(min_length=1, max_length=200)
    command: str | None = Field(default=None, max_length=2000)
    exit_code: int | None = None
    stdout: str = Field(default="", max_length=4 * 1024 * 1024)
    stderr: str = Field(default="", max_length=4 * 1024 * 1024)
    sha256: str = ""
    truncated: bool = False
    at: float = 0.0

    @property
    def failed(self) -> bool:
        return self.exit_code not in (None, 0)


class SessionPatch(BaseModel):
    """Fields a caller may set on a session; ``None`` leaves a field as it is."""

    participants: list[str] | None = Field(default=None, max_length=20)
    active_run: str | None = Field(default=None, pattern=ID_PATTERN)
    repo: str | None = Field(default=None, max_length=200)
    preferences: dict[str, str] | None = Field(default=None, max_length=50)


class Session(BaseModel):
    session_id: str
    tenant: str
    repo: str | None = None
    participants: list[str] = Field(default_factory=list)
    active_run: str | None = None
    preferences: dict[str, str] = Field(default_factory=dict)
    turns: list[Turn] = Field(default_factory=list)
    scratchpad: list[ScratchItem] = Field(default_factory=list)
    diffs: list[Diff] = Field(default_factory=list)
    tool_outputs: list[ToolOutput] = Field(default_factory=list)
    state_version: int = 0
    created_at: float = 0.0
    updated_at: float = 0.0
    expires_at: float = 0.0


def new_session(tenant: str, session_id: str, at: float, ttl_s: float) -> Session:
    return Session(
        session_id=session_id, tenant=tenant, created_at=at, updated_at=at, expires_at=at + ttl_s
    )


def touched(session: Session, at: float, ttl_s: float) -> Session:
    """Every write renews the session's time to live."""
    return session.model_copy(
        update={
            "updated_at": at,
            "expires_at": at + ttl_s,
            "state_version": session.state_version + 1,
        }
    )


def patch(session: Session, change: SessionPatch) -> Session:
    return session.model_copy(update=change.model_dump(exclude_none=True))


def add_turn(session: Session, turn: Turn, count: Callable[[str], int]) -> Session:
    turn = turn.model_copy(update={"tokens": count(turn.text)})
    turns = [*session.turns, turn][-MAX_TURNS:]
    while len(turns) > 1 and sum(t.tokens for t in turns) > MAX_TURN_TOKENS:
        turns.pop(0)
    return session.model_copy(update={"turns": turns})


def note(session: Session, item: ScratchItem) -> Session:
    """Add a scratchpad item, or replace the one with its id (to mark it done or reword it)."""
    items = [i for i in session.scratchpad if i.item_id != item.item_id] + [item]
    # Over the cap, done items go first, then the oldest open ones.
    while len(items) > MAX_SCRATCHPAD:
        done = [i for i in items if i.done]
        items.remove(done[0] if done else items[0])
    return session.model_copy(update={"scratchpad": items})


def add_diff(session: Session, diff: Diff) -> Session:
    digest = hashlib.sha256(diff.diff.encode("utf-8", "surrogatepass")).hexdigest()
    cut = len(diff.diff) > DIFF_CHARS
    kept = diff.model_copy(
        update={"diff": diff.diff[:DIFF_CHARS], "sha256": digest, "truncated": cut}
    )
    # One diff per file: the newest write of a file says what the session did to it.
    others = [d for d in session.diffs if (d.repo, d.path) != (diff.repo, diff.path)]
    return session.model_copy(update={"diffs": [*others, kept][-MAX_DIFFS:]})


def add_tool_output(session: Session, output: ToolOutput) -> Session:
    whole = f"{output.stdout}\x00{output.stderr}".encode("utf-8", "surrogatepass")
    cut = len(output.stdout) > OUTPUT_CHARS or len(output.stderr) > OUTPUT_CHARS
    kept = output.model_copy(
        update={
            "stdout": output.stdout[-OUTPUT_CHARS:],
            "stderr": output.stderr[-OUTPUT_CHARS:],
            "sha256": hashlib.sha256(whole).hexdigest(),
            "truncated": cut,
        }
    )
    return session.model_copy(
        update={"tool_outputs": [*session.tool_outputs, kept][-MAX_TOOL_OUTPUTS:]}
    )
