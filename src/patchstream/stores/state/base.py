"""The agent state store: versioned documents (runs, sessions) with compare-and-set, and the
event log of runs with its publication marks.

Contract (``tests/integration/test_agent_state_store.py`` holds adapters to it):

- ``create`` stores a document at its first version unless one with that id exists.
- ``replace`` stores a new version only if the stored one is still ``expected``; otherwise
  it changes nothing and says so. The document and its new events land in one transaction,
  so a reader never sees a snapshot without the events that made it.
- Events stay unpublished until ``mark_published``; nothing is lost if the bus is down.
- Every call is scoped to one tenant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

DocKind = Literal["Run", "Session", "Memory", "MemoryDecision"]


@dataclass(frozen=True)
class StoredDoc:
    doc_id: str
    version: int
    doc: str  # JSON of the snapshot


@dataclass(frozen=True)
class NewEvent:
    seq: int
    doc: str  # JSON of the event


class AgentStateStore(Protocol):
    def get(self, tenant: str, kind: DocKind, doc_id: str) -> StoredDoc | None:
        """The document's current version, or None."""

    def create(
        self,
        tenant: str,
        kind: DocKind,
        doc_id: str,
        doc: StoredDoc,
        fields: dict[str, object],
        events: list[NewEvent],
    ) -> bool:
        """Store the first version; False when ``doc_id`` exists already."""

    def replace(
        self,
        tenant: str,
        kind: DocKind,
        doc_id: str,
        expected: int,
        doc: StoredDoc,
        fields: dict[str, object],
        events: list[NewEvent],
    ) -> bool:
        """Store ``doc`` if the stored version is ``expected``; False (nothing written) if not."""

    def find(
        self, tenant: str, kind: DocKind, equals: dict[str, str], limit: int
    ) -> list[StoredDoc]:
        """Documents whose indexed ``fields`` equal ``equals``, newest first."""

    def events(self, tenant: str, run_id: str, after_seq: int, limit: int) -> list[str]:
        """A run's events (JSON) after ``after_seq``, in order."""

    def unpublished(self, tenant: str, limit: int) -> list[tuple[str, str]]:
        """(event uid, JSON) of events not yet on the bus, oldest first."""

    def mark_published(self, tenant: str, uids: list[str]) -> None: ...

    def delete(self, tenant: str, kind: DocKind, doc_ids: list[str]) -> int:
        """Delete documents (and a run's events) for good; how many were there."""

    def expired(self, tenant: str, kind: DocKind, now: float, limit: int) -> list[str]:
        """Ids of documents whose ``expires_at`` field has passed."""
