"""Long-term memory over the agent state store (canonical records, decisions) and the Milvus
memory index (retrieval only).

Writes go through the policy (``memory.decide``); every decision is recorded with its reason
and the policy version. Reads filter first (tenant, visibility, state, expiry, the source
still existing), then check code subjects against the graph: the system of record wins, so a
memory about a symbol or file that changed since it was verified comes back stale (or not at
all, per policy). Deleting a memory deletes its index row in the same call; a decision log
entry of a deletion keeps no content.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from patchstream.agent.memory import Decision, Memory, Policy, Proposal, decide, digest, ttl_seconds
from patchstream.agent.service import NotFound, VersionConflict
from patchstream.config.settings import Settings
from patchstream.stores.graph.base import GraphStore
from patchstream.stores.graph.cypher import CypherGraphStore
from patchstream.stores.state.base import AgentStateStore, StoredDoc
from patchstream.stores.state.cypher import CypherAgentStateStore
from patchstream.stores.vector.memory_index import MilvusMemoryIndex
from patchstream.stores.vector.milvus import MilvusVectorStore

_PAGE = 1000


@dataclass(frozen=True)
class Recalled:
    memory: Memory
    stale: bool
    stale_reason: str | None = None

    def projection(self) -> dict[str, Any]:
        """What retrieval hands an agent: the claim, how far to trust it, where it came from."""
        m = self.memory
        return {
            "memory_id": m.memory_id,
            "content": m.content,
            "memory_type": m.memory_type,
            "subject": m.subject.model_dump(),
            "key": m.key,
            "scope": m.scope,
            "owner": m.owner,
            "confidence": m.confidence,
            "created_at": m.created_at,
            "last_verified_at": m.last_verified_at,
            "stale": self.stale,
            "stale_reason": self.stale_reason,
            "provenance": m.source.model_dump(exclude_none=True),
        }


class MemoryService:
    def __init__(
        self,
        store: AgentStateStore,
        index: MilvusMemoryIndex,
        graph: GraphStore,
        policy: Policy,
        clock: Callable[[], float] = time.time,
        on_decision: Callable[[str], None] | None = None,  # outcome, for metrics
    ) -> None:
        self.on_decision = on_decision or (lambda _outcome: None)
        self.store = store
        self.index = index
        self.graph = graph
        self.policy = policy
        self.clock = clock

    @classmethod
    def open(
        cls, settings: Settings, graph: CypherGraphStore, vectors: MilvusVectorStore
    ) -> MemoryService:
        """The memory service over the configured stores and policy file."""
        index = MilvusMemoryIndex(vectors, settings.vector.collection_prefix)
        return cls(CypherAgentStateStore(graph), index, graph, Policy.load(settings.memory.policy))

    # -- writes -----------------------------------------------------------------------------

    def propose(self, tenant: str, proposal: Proposal) -> tuple[Decision, Memory | None]:
        same_key = self._same_key(tenant, proposal)
        decision = decide(proposal, self.policy, same_key)
        if decision.outcome == "refused":
            self._log(tenant, None, decision.outcome, decision.reason, proposal.content)
            return decision, None
        now = self.clock()
        memory = Memory(
            **proposal.model_dump(exclude={"memory_type", "supersedes"}),
            memory_type=decision.memory_type,
            supersedes=decision.supersedes,
            memory_id=f"mem-{uuid.uuid4().hex[:16]}",
            tenant=tenant,
            state=decision.outcome,
            created_at=now,
            last_verified_at=now,
            expires_at=now + ttl_seconds(proposal, self.policy, decision.memory_type),
            verified_hash=self._code_hash(tenant, proposal),
            policy_version=self.policy.version,
            reason=decision.reason,
        )
        self.store.create(tenant, "Memory", memory.memory_id, _doc(memory, 1), _fields(memory), [])
        if decision.supersedes:
            self._supersede(tenant, decision.supersedes, memory.memory_id)
        if memory.state == "active":
            self.index.upsert(
                tenant, memory.memory_id, memory.owner, memory.visibility, memory.content
            )
        self._log(tenant, memory.memory_id, decision.outcome, decision.reason, proposal.content)
        return decision, memory

    def approve(self, tenant: str, memory_id: str, by: str | None) -> Memory:
        """A human lets a quarantined memory become active (superseding what it conflicted
        with, if that is still the active fact)."""
        held = self.get(tenant, memory_id).memory
        if held.state != "quarantined":
            raise VersionConflict(f"memory {memory_id} is {held.state}, not quarantined", -1)
        same_key = self._same_key(tenant, held)
        if same_key is not None:
            self._supersede(tenant, same_key.memory_id, memory_id)
        approved = self._update(
            tenant,
            memory_id,
            lambda m: m.model_copy(
                update={
                    "state": "active",
                    "supersedes": same_key.memory_id if same_key else m.supersedes,
                    "reason": f"approved by {by or 'a human'}",
                }
            ),
        )
        self.index.upsert(tenant, memory_id, approved.owner, approved.visibility, approved.content)
        self._log(tenant, memory_id, "approved", f"approved by {by or 'a human'}", None)
        return approved

    def forget(self, tenant: str, memory_ids: list[str], reason: str) -> int:
        """Delete records and their index rows; the log keeps ids and the reason only."""
        if not memory_ids:
            return 0
        deleted = self.store.delete(tenant, "Memory", memory_ids)
        self.index.delete(tenant, memory_ids)
        for memory_id in memory_ids:
            self._log(tenant, memory_id, "deleted", reason, None)
        return deleted

    def purge(
        self,
        tenant: str,
        owner: str | None = None,
        scope: str | None = None,
        source_ref: str | None = None,
    ) -> int:
        """Delete every memory of the tenant that matches all the given filters."""
        equals = {
            k: v for k, v in (("owner", owner), ("scope", scope), ("source_ref", source_ref)) if v
        }
        total = 0
        while True:
            page = [d.doc_id for d in self.store.find(tenant, "Memory", equals, _PAGE)]
            if not page:
                return total
            total += self.forget(tenant, page, f"purged ({json.dumps(equals, sort_keys=True)})")

    def purge_expired(self, tenant: str) -> int:
        """Delete the tenant's memories whose time to live has passed, vectors included."""
        total = 0
        while expired := self.store.expired(tenant, "Memory", self.clock(), _PAGE):
            total += self.forget(tenant, expired, "expired")
        return total

    # -- reads ------------------------------------------------------------------------------

    def get(self, tenant: str, memory_id: str, resolve: bool = False) -> Recalled:
        """One memory; with ``resolve``, the active end of its supersede chain."""
        memory = self._load(tenant, memory_id)
        seen = {memory_id}
        while resolve and memory.superseded_by and memory.superseded_by not in seen:
            seen.add(memory.superseded_by)
            memory = self._load(tenant, memory.superseded_by)
        checked = self._checked(tenant, memory)
        if checked is None:
            raise NotFound(f"memory {memory.memory_id!r} is gone: expired or its source deleted")
        return checked

    def listed(
        self, tenant: str, owner: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[Memory]:
        equals = {k: v for k, v in (("owner", owner), ("state", state)) if v}
        return [_memory(d) for d in self.store.find(tenant, "Memory", equals, limit)]

    def search(
        self,
        tenant: str,
        query: str,
        user: str | None = None,
        limit: int = 5,
        owners: set[str] | None = None,
        include_stale: bool = False,
    ) -> list[Recalled]:
        """Relevant active memories the caller may see, fresh ones (or flagged stale ones)."""
        found: list[Recalled] = []
        # Context asks at every request; most tenants hold no memory, and one graph lookup
        # spares them a hybrid search in Milvus (which waits whenever Milvus is busy).
        if not self.store.find(tenant, "Memory", {"state": "active"}, 1):
            return found
        for memory_id in self.index.search(tenant, query, user, limit * 4):
            held = self.store.get(tenant, "Memory", memory_id)
            if held is None:
                continue
            memory = _memory(held)
            private = memory.visibility == "private" and memory.owner != user
            if memory.state != "active" or private:
                continue
            if owners is not None and memory.scope == "project" and memory.owner not in owners:
                continue
            recalled = self._checked(tenant, memory)
            if recalled is None:
                continue
            hide = self.policy.read.stale == "hide" and not include_stale
            if recalled.stale and hide:
                continue
            found.append(recalled)
            if len(found) >= limit:
                break
        return found

    def conflicts(self, tenant: str) -> list[list[str]]:
        """Groups of active memories that claim the same subject and key: should not exist."""
        groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for memory in self.listed(tenant, state="active", limit=10_000):
            if memory.key:
                groups[
                    (memory.scope, memory.owner, memory.subject.kind, memory.subject.id, memory.key)
                ].append(memory.memory_id)
        return [sorted(ids) for ids in groups.values() if len(ids) > 1]

    def decisions(self, tenant: str, limit: int = 100) -> list[dict[str, Any]]:
        return [json.loads(d.doc) for d in self.store.find(tenant, "MemoryDecision", {}, limit)]

    # -- helpers ----------------------------------------------------------------------------

    def _checked(self, tenant: str, memory: Memory) -> Recalled | None:
        """None when the memory must go (expired, or its source was deleted); else whether
        the code it speaks of changed since it was verified."""
        if memory.expires_at < self.clock():
            self.forget(tenant, [memory.memory_id], "expired")
            return None
        ref = memory.source.ref or ""
        if ref.startswith("file:") and "::" in ref:
            repo, path = ref[5:].split("::", 1)
            fence = self.graph.file_version(tenant, repo, memory.subject.ref, path)
            if fence is not None and fence.deleted:
                self.forget(tenant, [memory.memory_id], f"source deleted ({ref})")
                return None
        if memory.subject.kind in ("symbol", "file"):
            now_hash = self._code_hash(tenant, memory)
            if now_hash is None:
                return Recalled(memory, True, f"the {memory.subject.kind} no longer exists")
            if memory.verified_hash and now_hash != memory.verified_hash:
                return Recalled(memory, True, "the code changed since it was verified")
        return Recalled(memory, False)

    def _code_hash(self, tenant: str, proposal: Proposal) -> str | None:
        subject = proposal.subject
        if subject.kind == "symbol":
            symbol = self.graph.symbol(tenant, subject.id, subject.ref)
            return symbol.content_hash if symbol else None
        if subject.kind == "file" and "::" in subject.id:
            repo, path = subject.id.split("::", 1)
            return self.graph.file_content_hash(tenant, repo, subject.ref, path)
        return None

    def _same_key(self, tenant: str, proposal: Proposal) -> Memory | None:
        if proposal.supersedes:
            old = self._load(tenant, proposal.supersedes)
            if old.state != "active":
                raise VersionConflict(f"memory {proposal.supersedes} is {old.state}", -1)
            return old
        if not proposal.key:
            return None
        equals = {
            "owner": proposal.owner,
            "scope": proposal.scope,
            "key": proposal.key,
            "subject": _subject_key(proposal),
            "state": "active",
        }
        found = self.store.find(tenant, "Memory", equals, 1)
        return _memory(found[0]) if found else None

    def _load(self, tenant: str, memory_id: str) -> Memory:
        held = self.store.get(tenant, "Memory", memory_id)
        if held is None:
            raise NotFound(f"no memory {memory_id!r}")
        return _memory(held)

    def _supersede(self, tenant: str, old_id: str, new_id: str) -> None:
        """``old_id`` is replaced by ``new_id``: marked so, and no longer retrievable."""
        self._update(tenant, old_id, lambda old: old.model_copy(
            update={"state": "superseded", "superseded_by": new_id}))  # fmt: skip
        self.index.delete(tenant, [old_id])

    def _update(self, tenant: str, memory_id: str, change: Callable[[Memory], Memory]) -> Memory:
        for _ in range(20):
            held = self.store.get(tenant, "Memory", memory_id)
            if held is None:
                raise NotFound(f"no memory {memory_id!r}")
            new = change(_memory(held))
            if self.store.replace(
                tenant,
                "Memory",
                memory_id,
                held.version,
                _doc(new, held.version + 1),
                _fields(new),
                [],
            ):
                return new
        raise VersionConflict(f"memory {memory_id} is written too often to update", -1)

    def _log(
        self, tenant: str, memory_id: str | None, outcome: str, reason: str, content: str | None
    ) -> None:
        self.on_decision(outcome)
        now = self.clock()
        entry = {
            "decision_id": f"dec-{uuid.uuid4().hex[:16]}",
            "memory_id": memory_id,
            "outcome": outcome,
            "reason": reason,
            "policy_version": self.policy.version,
            "content_sha256": digest(content) if content else None,
            "at": now,
        }
        fields: dict[str, object] = {"updated_at": now}
        if memory_id:
            fields["memory_id"] = memory_id
        self.store.create(
            tenant,
            "MemoryDecision",
            entry["decision_id"],  # type: ignore[arg-type]
            StoredDoc(str(entry["decision_id"]), 1, json.dumps(entry)),
            fields,
            [],
        )


def _subject_key(proposal: Proposal) -> str:
    return f"{proposal.subject.kind}:{proposal.subject.ref}:{proposal.subject.id}"


def _memory(held: StoredDoc) -> Memory:
    return Memory.model_validate_json(held.doc)


def _doc(memory: Memory, version: int) -> StoredDoc:
    return StoredDoc(memory.memory_id, version, memory.model_dump_json())


def _fields(memory: Memory) -> dict[str, object]:
    fields: dict[str, object] = {
        "scope": memory.scope,
        "owner": memory.owner,
        "subject": _subject_key(memory),
        "state": memory.state,
        "expires_at": memory.expires_at,
        "updated_at": memory.last_verified_at,
    }
    if memory.key:
        fields["key"] = memory.key
    if memory.source.ref:
        fields["source_ref"] = memory.source.ref
    return fields
