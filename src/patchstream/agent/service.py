"""Runs and sessions over the agent state store: the runtime that owns transitions.

Writes of a run name the ``state_version`` they read; a stale one is a ``VersionConflict``
with the current version, never a silent overwrite. Session working state is append-like
(a note, a diff, a tool output), so the service retries its own compare-and-set there and
no caller has to. Events are stored with their snapshot; ``drain`` hands the unpublished
ones to the bus afterwards.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from patchstream.agent import runs, sessions
from patchstream.agent.runs import EventIn, Run, RunCreate, RunEvent, RunRefused, RunStatus
from patchstream.agent.sessions import Session
from patchstream.errors import PatchstreamError
from patchstream.stores.graph.base import GraphStore, SessionWrite
from patchstream.stores.state.base import AgentStateStore, NewEvent, StoredDoc

__all__ = ["AgentStateService", "NotFound", "RunRefused", "VersionConflict"]

_CAS_ATTEMPTS = 50  # an append races other appends of the same session at most this often


class NotFound(PatchstreamError):  # noqa: N818
    """No such run or session for this tenant (another tenant's reads the same)."""


class VersionConflict(PatchstreamError):  # noqa: N818
    """The write named a ``state_version`` that is no longer current."""

    def __init__(self, message: str, current: int) -> None:
        super().__init__(message)
        self.current = current


@dataclass(frozen=True)
class Resume:
    run: Run
    uncertain: list[runs.Action]
    since: float  # the checkpoint's time, or the run's start
    changes: list[SessionWrite]


class AgentStateService:
    def __init__(
        self,
        store: AgentStateStore,
        graph: GraphStore,
        session_ttl_s: float = 7 * 24 * 3600,
        count_tokens: Callable[[str], int] = lambda text: len(text) // 4 + 1,
        clock: Callable[[], float] = time.time,
        on_event: Callable[[str, str], None] | None = None,  # (what, label) for metrics
    ) -> None:
        self.store = store
        self.graph = graph
        self.session_ttl_s = session_ttl_s
        self.count_tokens = count_tokens
        self.clock = clock
        self.on_event = on_event or (lambda _what, _label: None)

    # -- runs -------------------------------------------------------------------------------

    def create_run(self, tenant: str, spec: RunCreate, actor: str | None = None) -> Run:
        run_id = spec.run_id or f"run-{uuid.uuid4().hex[:16]}"
        created = runs.created_event(tenant, run_id, spec, self.clock(), actor)
        run = runs.apply(None, created)
        if not self.store.create(
            tenant, "Run", run_id, _doc(run), _run_fields(run), [_new(created)]
        ):
            raise VersionConflict(
                f"run {run_id} exists already", self.get_run(tenant, run_id).state_version
            )
        self.on_event("transition", run.status.value)
        return run

    def get_run(self, tenant: str, run_id: str) -> Run:
        held = self.store.get(tenant, "Run", run_id)
        if held is None:
            raise NotFound(f"no run {run_id!r}")
        return Run.model_validate_json(held.doc)

    def list_runs(
        self,
        tenant: str,
        status: str | None = None,
        session_id: str | None = None,
        limit: int = 50,
    ) -> list[Run]:
        equals = {k: v for k, v in (("status", status), ("session_id", session_id)) if v}
        return [
            Run.model_validate_json(d.doc) for d in self.store.find(tenant, "Run", equals, limit)
        ]

    def append(
        self,
        tenant: str,
        run_id: str,
        expected: int,
        proposed: list[EventIn],
        actor: str | None = None,
    ) -> Run:
        """Apply ``proposed`` to the run at version ``expected``, all or nothing."""
        run = self.get_run(tenant, run_id)
        self._check_version(run, expected)
        try:
            new, stamped = runs.stamp(run, proposed, self.clock(), actor)
        except RunRefused:
            self.on_event("refused", run.status.value)
            raise
        if not self.store.replace(
            tenant, "Run", run_id, expected, _doc(new), _run_fields(new), [_new(e) for e in stamped]
        ):
            current = self.get_run(tenant, run_id).state_version
            self.on_event("conflict", "raced")
            raise VersionConflict(
                f"run {run_id} moved to state_version {current} meanwhile", current
            )
        if new.status != run.status:
            self.on_event("transition", new.status.value)
        return new

    def _check_version(self, run: Run, expected: int) -> None:
        """A write is judged against the state its writer saw, or not at all."""
        if run.state_version != expected:
            self.on_event("conflict", "stale")
            raise VersionConflict(
                f"run {run.run_id} is at state_version {run.state_version}, not {expected}",
                run.state_version,
            )

    def transition(
        self,
        tenant: str,
        run_id: str,
        expected: int,
        to: RunStatus,
        reason: str | None,
        actor: str | None = None,
        approval_id: str | None = None,
    ) -> Run:
        """Move the run to status ``to`` through the event that means it."""
        run = self.get_run(tenant, run_id)
        self._check_version(run, expected)
        event_type = runs.event_for_move(run.status, to)
        if event_type == "ApprovalGranted":
            approval_id = approval_id or next(
                (a for a, state in run.approvals.items() if state == "requested"), None
            )
        if to == RunStatus.WAITING_FOR_HUMAN:
            approval_id = approval_id or f"approval-{run.state_version + 1}"
        if event_type is None or event_type not in runs.ALLOWED[run.status]:
            self.on_event("refused", run.status.value)
            raise RunRefused(
                f"a {run.status.value} run cannot move to {to.value}",
                run.status,
                run.allowed_statuses(),
            )
        event = EventIn.model_validate(
            {"type": event_type, "reason": reason, "approval_id": approval_id, "by": actor}
        )
        return self.append(tenant, run_id, expected, [event], actor)

    def events(
        self, tenant: str, run_id: str, after_seq: int = 0, limit: int = 1000
    ) -> list[RunEvent]:
        self.get_run(tenant, run_id)  # 404 before an empty list
        return [
            RunEvent.model_validate_json(e)
            for e in self.store.events(tenant, run_id, after_seq, limit)
        ]

    def resume(self, tenant: str, run_id: str) -> Resume:
        """What a worker needs to pick the run up: its validated state, the actions whose
        effect is unknown, and the code that changed since the last checkpoint."""
        run = self.get_run(tenant, run_id)
        since = run.checkpoint.at if run.checkpoint else run.created_at
        changes = (
            self.graph.changed_since(tenant, run.repo, run.ref, run.workspace, since)
            if run.repo
            else []
        )
        self.on_event("resume", run.status.value)
        return Resume(run, run.uncertain_actions(), since, changes)

    # -- sessions ---------------------------------------------------------------------------

    def get_session(self, tenant: str, session_id: str) -> Session:
        held = self.store.get(tenant, "Session", session_id)
        session = Session.model_validate_json(held.doc) if held else None
        if session is None or session.expires_at < self.clock():
            raise NotFound(f"no session {session_id!r}")
        return session

    def find_session(self, tenant: str, session_id: str) -> Session | None:
        try:
            return self.get_session(tenant, session_id)
        except NotFound:
            return None

    def update_session(
        self, tenant: str, session_id: str, change: Callable[[Session], Session]
    ) -> Session:
        """Apply ``change`` with compare-and-set, creating the session on its first write."""
        for _ in range(_CAS_ATTEMPTS):
            now = self.clock()
            held = self.store.get(tenant, "Session", session_id)
            current = Session.model_validate_json(held.doc) if held else None
            if current is not None and current.expires_at < now:
                current = None  # expired: the write starts it anew
            base = current or sessions.new_session(tenant, session_id, now, self.session_ttl_s)
            new = sessions.touched(change(base), now, self.session_ttl_s)
            if held is None:
                written = self.store.create(
                    tenant, "Session", session_id, _doc(new), _session_fields(new), []
                )
            else:
                written = self.store.replace(
                    tenant, "Session", session_id, held.version, _doc(new), _session_fields(new), []
                )
            if written:
                return new
            self.on_event("conflict", "session")
        raise VersionConflict(f"session {session_id} is written too often to update", -1)

    def expire_sessions(self, tenant: str) -> int:
        """Delete the tenant's sessions whose time to live has passed; how many."""
        total = 0
        while expired := self.store.expired(tenant, "Session", self.clock(), 1000):
            total += self.store.delete(tenant, "Session", expired)
        return total

    # -- publication ------------------------------------------------------------------------

    def unpublished(self, tenant: str, limit: int = 500) -> list[tuple[str, RunEvent]]:
        return [
            (uid, RunEvent.model_validate_json(doc))
            for uid, doc in self.store.unpublished(tenant, limit)
        ]

    def mark_published(self, tenant: str, uids: list[str]) -> None:
        self.store.mark_published(tenant, uids)


def _doc(model: Run | Session) -> StoredDoc:
    doc_id = model.run_id if isinstance(model, Run) else model.session_id
    return StoredDoc(doc_id, model.state_version, model.model_dump_json())


def _new(event: RunEvent) -> NewEvent:
    return NewEvent(event.seq, event.model_dump_json(exclude_none=True))


def _run_fields(run: Run) -> dict[str, object]:
    fields: dict[str, Any] = {"status": run.status.value, "updated_at": run.updated_at}
    if run.session_id:
        fields["session_id"] = run.session_id
    if run.repo:
        fields["repo"] = run.repo
    return fields


def _session_fields(session: Session) -> dict[str, object]:
    return {"updated_at": session.updated_at, "expires_at": session.expires_at}


def dumps(event: RunEvent) -> bytes:
    """An event as the ``run-events`` topic carries it."""
    return json.dumps(event.model_dump(mode="json", exclude_none=True), sort_keys=True).encode()
