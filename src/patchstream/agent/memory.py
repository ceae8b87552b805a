"""Long-term memory records and the deterministic write policy (pure: no I/O, no clock).

The model proposes; ``decide`` disposes, by the rules of the policy file
(``memory_policy.toml``), and says why. In order: hidden Unicode is refused; forbidden
instructions are refused from every source; a stable procedure is refused with a hint to make
it a skill; the scope, visibility and retention must be allowed; instruction-like text (by
its content, whatever type was claimed) is active only from a trusted source and otherwise
quarantined (or refused); a fact about the same subject and key as an active one supersedes
it when its source ranks as high, and is quarantined as a conflict when not.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from patchstream.errors import ConfigError
from patchstream.schemas.events import ID_PATTERN
from patchstream.text_flags import unicode_flags

MemoryType = Literal["fact", "user-claim", "inference", "preference", "summary", "instruction-like"]
SourceKind = Literal[
    "user", "agent", "tool-output", "repository", "web", "document", "commit", "session"
]
State = Literal["active", "superseded", "expired", "quarantined"]
_OWNER = r"^[A-Za-z0-9][A-Za-z0-9._\-/~@]{0,199}$"
_SUBJECT = r"^[^\x00-\x1f\x7f]{1,2048}$"
_DAY = 86_400.0


class Subject(BaseModel):
    """What a memory is about. Code subjects (``symbol``: a symbol id; ``file``:
    ``repo::path``) are checked against the graph when read."""

    kind: Literal["symbol", "file", "repo", "person", "topic"]
    id: str = Field(pattern=_SUBJECT)
    ref: str = Field(default="main", pattern=r"^[A-Za-z0-9][A-Za-z0-9._\-/~]{0,199}$")


class Source(BaseModel):
    """Where the content came from; ``ref`` links it to what deletes it (``file:repo::path``,
    ``session:<id>``, ``document:<id>``, ``commit:<sha>``, ``run:<id>``)."""

    kind: SourceKind
    ref: str | None = Field(default=None, pattern=_SUBJECT)
    proposed_by: str | None = Field(default=None, pattern=ID_PATTERN)
    session_id: str | None = Field(default=None, pattern=ID_PATTERN)
    run_id: str | None = Field(default=None, pattern=ID_PATTERN)


class Proposal(BaseModel):
    scope: Literal["project", "user", "team"]
    owner: str = Field(pattern=_OWNER, description="the repository, user or team")
    visibility: Literal["private", "shared"] = "shared"
    subject: Subject
    key: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9][a-z0-9_.\-]{0,63}$",
        description="what about the subject: facts of one key supersede",
    )
    content: str = Field(min_length=1, max_length=20_000)
    memory_type: MemoryType
    source: Source
    confidence: float = Field(default=0.8, ge=0, le=1)
    ttl_days: float | None = Field(default=None, gt=0)
    supersedes: str | None = Field(default=None, pattern=ID_PATTERN)


class Memory(Proposal):
    memory_id: str
    tenant: str
    state: State = "active"
    created_at: float
    last_verified_at: float
    expires_at: float
    verified_hash: str | None = None  # the code subject's content hash when verified
    superseded_by: str | None = None
    policy_version: str
    reason: str


class SourcesPolicy(BaseModel):
    trusted: list[str]
    untrusted_instructions: Literal["quarantine", "refuse"] = "quarantine"
    rank: dict[str, int] = Field(default_factory=dict)


class ContentPolicy(BaseModel):
    max_chars: int = 2000
    instruction_patterns: list[str]
    forbidden_patterns: list[str]
    procedure_patterns: list[str]


class ReadPolicy(BaseModel):
    stale: Literal["flag", "hide"] = "flag"
    context_items: int = Field(default=3, ge=0, le=20)


class Policy(BaseModel):
    """The policy file, validated; ``version`` goes into every decision."""

    version: str
    scopes: dict[str, list[str]]
    retention: dict[str, float]
    sources: SourcesPolicy
    content: ContentPolicy
    read: ReadPolicy = Field(default_factory=ReadPolicy)

    @classmethod
    def load(cls, path: str | None = None) -> Policy:
        """The policy file at ``path``, or the one shipped with the package."""
        try:
            if path:
                text = Path(path).read_text(encoding="utf-8")
            else:
                shipped = resources.files("patchstream.agent").joinpath("memory_policy.toml")
                text = shipped.read_text(encoding="utf-8")
            policy = cls.model_validate(tomllib.loads(text))
            policy.compiled  # noqa: B018 - a bad pattern fails here, at startup
            return policy
        except (OSError, tomllib.TOMLDecodeError, re.error, ValueError) as exc:
            raise ConfigError(f"memory policy {path or '(built in)'}: {exc}") from exc

    @cached_property
    def compiled(self) -> dict[str, list[re.Pattern[str]]]:
        c = self.content
        return {
            "instruction_patterns": [re.compile(p) for p in c.instruction_patterns],
            "forbidden_patterns": [re.compile(p) for p in c.forbidden_patterns],
            "procedure_patterns": [re.compile(p) for p in c.procedure_patterns],
        }

    def rank(self, source: str) -> int:
        return self.sources.rank.get(source, 0)

    def matches(self, kind: str, text: str) -> bool:
        return any(p.search(text) for p in self.compiled[kind])


@dataclass(frozen=True)
class Decision:
    outcome: Literal["active", "quarantined", "refused"]
    reason: str
    memory_type: str
    supersedes: str | None = None  # the active memory this one replaces
    conflicts_with: str | None = None


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def decide(proposal: Proposal, policy: Policy, same_key: Memory | None) -> Decision:
    """The policy's decision on ``proposal``; ``same_key`` is the active memory of the same
    scope, owner, subject and key, if any."""
    content, kind = proposal.content, proposal.memory_type

    def refused(reason: str) -> Decision:
        return Decision("refused", reason, kind)

    if unicode_flags(content):
        return refused("hidden_unicode: invisible or bidirectional-control characters")
    if len(content) > policy.content.max_chars:
        return refused("too_long: a memory is a short claim; keep documents in the repository")
    if policy.matches("forbidden_patterns", content):
        return refused("forbidden_instruction: memory never weakens security, tests or review")
    if policy.matches("procedure_patterns", content):
        return refused(
            "procedure: a stable procedure belongs in a skill (a versioned file the "
            "agent loads), not in memory"
        )
    if proposal.visibility not in policy.scopes.get(proposal.scope, []):
        return refused(f"scope: {proposal.scope} memories may not be {proposal.visibility}")
    max_days = policy.retention.get("max_ttl_days", 365)
    if proposal.ttl_days is not None and proposal.ttl_days > max_days:
        return refused(f"retention: at most {max_days:g} days")
    if kind != "instruction-like" and policy.matches("instruction_patterns", content):
        kind = "instruction-like"  # the content decides, not the claimed type
    if kind == "instruction-like" and proposal.source.kind not in policy.sources.trusted:
        if policy.sources.untrusted_instructions == "refuse":
            return refused(
                f"untrusted_instruction: instruction-like text from {proposal.source.kind}"
            )
        return Decision(
            "quarantined",
            f"untrusted_instruction: instruction-like text from "
            f"{proposal.source.kind} waits for a human's approval",
            kind,
        )
    if same_key is not None and same_key.content != content:
        if policy.rank(proposal.source.kind) < policy.rank(same_key.source.kind):
            return Decision(
                "quarantined",
                f"conflict: contradicts {same_key.memory_id} from a "
                f"higher-ranked source ({same_key.source.kind})",
                kind,
                conflicts_with=same_key.memory_id,
            )
        return Decision(
            "active", f"supersedes {same_key.memory_id}", kind, supersedes=same_key.memory_id
        )
    return Decision("active", "accepted", kind)


def ttl_seconds(proposal: Proposal, policy: Policy, memory_type: str) -> float:
    default = policy.retention.get(memory_type, policy.retention.get("max_ttl_days", 365))
    return float(proposal.ttl_days or default) * _DAY
