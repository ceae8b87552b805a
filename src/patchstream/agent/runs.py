"""Execution state of an agent run: events, the snapshot they fold into, and the transitions
the runtime allows. Pure: no I/O, no clock (every event carries its own time), so replaying a
run's events from its first gives the same snapshot the store holds.

The model proposes; this module decides. ``RunCompleted`` is refused while an action is
uncertain (proposed, never reported executed), an action is refused once the tool-call
budget is spent, and every event is checked against the run's status::

    CREATED -> RUNNING -> {WAITING_FOR_HUMAN, WAITING_FOR_EXTERNAL_EVENT} -> RUNNING
    RUNNING -> {COMPLETED, FAILED, CANCELLED};  CREATED/WAITING_* -> CANCELLED (or FAILED)
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from patchstream.errors import PatchstreamError
from patchstream.schemas.events import ID_PATTERN

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._\-/~]{0,199}$"
_MAX_OBSERVATIONS = 20  # the snapshot keeps the newest; the event log keeps all
_TEXT = 4000  # characters of one observation, summary or reason


class RunStatus(StrEnum):
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    WAITING_FOR_HUMAN = "WAITING_FOR_HUMAN"
    WAITING_FOR_EXTERNAL_EVENT = "WAITING_FOR_EXTERNAL_EVENT"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


TERMINAL = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED})

EventType = Literal[
    "RunCreated",
    "RunStarted",
    "StepStarted",
    "StepCompleted",
    "ObservationRecorded",
    "ActionProposed",
    "ActionExecuted",
    "ApprovalRequested",
    "ApprovalGranted",
    "ApprovalDenied",
    "ExternalEventAwaited",
    "ExternalEventReceived",
    "ArtifactRecorded",
    "CheckpointCreated",
    "RunCompleted",
    "RunFailed",
    "RunCancelled",
]

_WORK = {
    "StepStarted",
    "StepCompleted",
    "ObservationRecorded",
    "ActionProposed",
    "ActionExecuted",
    "ArtifactRecorded",
    "CheckpointCreated",
}
_LATE = {"ActionExecuted", "ObservationRecorded", "ArtifactRecorded"}  # results may arrive late
ALLOWED: dict[RunStatus, frozenset[str]] = {
    RunStatus.CREATED: frozenset({"RunStarted", "RunCancelled"}),
    RunStatus.RUNNING: frozenset(
        _WORK
        | {"ApprovalRequested", "ExternalEventAwaited", "RunCompleted", "RunFailed", "RunCancelled"}
    ),
    RunStatus.WAITING_FOR_HUMAN: frozenset(
        _LATE | {"ApprovalGranted", "ApprovalDenied", "RunFailed", "RunCancelled"}
    ),
    RunStatus.WAITING_FOR_EXTERNAL_EVENT: frozenset(
        _LATE | {"ExternalEventReceived", "RunFailed", "RunCancelled"}
    ),
    **{status: frozenset() for status in TERMINAL},
}
_MOVES: dict[str, RunStatus] = {
    "RunStarted": RunStatus.RUNNING,
    "ApprovalRequested": RunStatus.WAITING_FOR_HUMAN,
    "ApprovalGranted": RunStatus.RUNNING,
    "ApprovalDenied": RunStatus.RUNNING,
    "ExternalEventAwaited": RunStatus.WAITING_FOR_EXTERNAL_EVENT,
    "ExternalEventReceived": RunStatus.RUNNING,
    "RunCompleted": RunStatus.COMPLETED,
    "RunFailed": RunStatus.FAILED,
    "RunCancelled": RunStatus.CANCELLED,
}
# Target status -> the event that moves a run there (the transition API speaks in statuses).
EVENT_FOR_STATUS = {
    RunStatus.RUNNING: "RunStarted",
    RunStatus.COMPLETED: "RunCompleted",
    RunStatus.FAILED: "RunFailed",
    RunStatus.CANCELLED: "RunCancelled",
    RunStatus.WAITING_FOR_HUMAN: "ApprovalRequested",
    RunStatus.WAITING_FOR_EXTERNAL_EVENT: "ExternalEventAwaited",
}


def event_for_move(current: RunStatus, to: RunStatus) -> str | None:
    """The event that moves a run from ``current`` to ``to`` (back to RUNNING from a wait is
    the wait's answer, not a start)."""
    if to == RunStatus.RUNNING and current == RunStatus.WAITING_FOR_EXTERNAL_EVENT:
        return "ExternalEventReceived"
    if to == RunStatus.RUNNING and current == RunStatus.WAITING_FOR_HUMAN:
        return "ApprovalGranted"
    return EVENT_FOR_STATUS.get(to)


_REQUIRED: dict[str, tuple[str, ...]] = {
    "StepStarted": ("step",),
    "StepCompleted": ("step",),
    "ObservationRecorded": ("text",),
    "ActionProposed": ("action_id", "tool"),
    "ActionExecuted": ("action_id", "outcome"),
    "ApprovalRequested": ("approval_id",),
    "ApprovalGranted": ("approval_id",),
    "ApprovalDenied": ("approval_id",),
    "ArtifactRecorded": ("artifact",),
}


class RunRefused(PatchstreamError):  # noqa: N818 - a condition, named as callers read it
    """The runtime refuses this event in the run's state; ``allowed`` lists what it accepts."""

    def __init__(self, message: str, status: RunStatus, allowed: list[str]) -> None:
        super().__init__(message)
        self.status = status
        self.allowed = allowed


class Artifact(BaseModel):
    """By reference only: a path, a blob hash or a URL; never the payload itself."""

    kind: Literal["path", "blob", "url"]
    ref: str = Field(min_length=1, max_length=2048, pattern=r"^[^\x00-\x1f\x7f]+$")
    note: str = Field(default="", max_length=500)


class Budgets(BaseModel):
    tool_calls_left: int | None = Field(default=None, ge=0)
    cost_left: float | None = None


class EventIn(BaseModel):
    """One event as a writer proposes it. Which fields a type needs: ``_REQUIRED``."""

    type: EventType
    step: str | None = Field(default=None, max_length=500)
    text: str | None = Field(default=None, max_length=_TEXT)
    source: str | None = Field(default=None, max_length=100)
    action_id: str | None = Field(default=None, pattern=ID_PATTERN)
    tool: str | None = Field(default=None, max_length=200)
    args_summary: str | None = Field(default=None, max_length=2000)
    outcome: Literal["ok", "error"] | None = None
    cost: float | None = Field(default=None, ge=0)
    approval_id: str | None = Field(default=None, pattern=ID_PATTERN)
    by: str | None = Field(default=None, max_length=200)
    reason: str | None = Field(default=None, max_length=_TEXT)
    artifact: Artifact | None = None


class RunEvent(EventIn):
    """An event as the log holds it: numbered within its run and stamped by the runtime."""

    run_id: str
    tenant: str
    seq: int = Field(ge=1)
    at: float
    actor: str | None = None
    run: dict[str, Any] | None = None  # RunCreated only: the initial fields


class Action(BaseModel):
    action_id: str
    tool: str
    args_summary: str | None = None
    step: str | None = None
    proposed_seq: int
    outcome: str | None = None
    executed_seq: int | None = None


class Checkpoint(BaseModel):
    seq: int
    at: float
    note: str | None = None
    step: str | None = None


class RunCreate(BaseModel):
    """What a caller gives to start a run."""

    run_id: str | None = Field(default=None, pattern=ID_PATTERN)
    repo: str | None = Field(default=None, pattern=_NAME)
    ref: str = Field(default="main", pattern=_NAME)
    workspace: str | None = Field(default=None, pattern=_NAME)
    session_id: str | None = Field(default=None, pattern=ID_PATTERN)
    goal: str = Field(min_length=1, max_length=_TEXT)
    success_contract: list[str] = Field(default_factory=list, max_length=50)
    plan: list[str] = Field(default_factory=list, max_length=200)
    budgets: Budgets = Field(default_factory=Budgets)


class Run(RunCreate):
    """The snapshot reads use: the fold of the run's events."""

    run_id: str
    tenant: str
    status: RunStatus = RunStatus.CREATED
    current_step: str | None = None
    completed_steps: list[str] = Field(default_factory=list)
    pending_steps: list[str] = Field(default_factory=list)
    approvals: dict[str, str] = Field(default_factory=dict)  # id -> requested|granted|denied
    artifacts: list[Artifact] = Field(default_factory=list)
    retries: dict[str, int] = Field(default_factory=dict)  # step -> times started again
    actions: dict[str, Action] = Field(default_factory=dict)
    observations: list[str] = Field(default_factory=list)
    checkpoint: Checkpoint | None = None
    outcome: str | None = None
    state_version: int = 0
    created_at: float = 0.0
    updated_at: float = 0.0

    def uncertain_actions(self) -> list[Action]:
        """Side effects proposed and never reported done: the resumer must check them."""
        return [a for a in self.actions.values() if a.executed_seq is None]

    def allowed_events(self) -> list[str]:
        return sorted(ALLOWED[self.status])

    def allowed_statuses(self) -> list[str]:
        allowed = ALLOWED[self.status]
        return sorted(
            s.value for s in EVENT_FOR_STATUS if event_for_move(self.status, s) in allowed
        )


def created_event(
    tenant: str, run_id: str, spec: RunCreate, at: float, actor: str | None
) -> RunEvent:
    fields = spec.model_dump(mode="json", exclude={"run_id"})
    return RunEvent(
        type="RunCreated", run_id=run_id, tenant=tenant, seq=1, at=at, actor=actor, run=fields
    )


def check(run: Run, event: EventIn) -> None:
    """Raise ``RunRefused`` unless the runtime accepts ``event`` in ``run``'s state."""
    if event.type not in ALLOWED[run.status]:
        raise RunRefused(
            f"{event.type} is not allowed while the run is {run.status.value}",
            run.status,
            run.allowed_events(),
        )
    missing = [name for name in _REQUIRED.get(event.type, ()) if getattr(event, name) is None]
    if missing:
        raise RunRefused(
            f"{event.type} needs {', '.join(missing)}", run.status, run.allowed_events()
        )
    if event.type == "ActionProposed":
        if run.budgets.tool_calls_left == 0:
            raise RunRefused(
                "the run's tool-call budget is spent",
                run.status,
                sorted(ALLOWED[run.status] - {"ActionProposed"}),
            )
        if event.action_id in run.actions:
            raise RunRefused(
                f"action {event.action_id} was already proposed", run.status, run.allowed_events()
            )
    if event.type == "ActionExecuted":
        action = run.actions.get(event.action_id or "")
        if action is None or action.executed_seq is not None:
            raise RunRefused(
                f"action {event.action_id} is not an uncertain action of this run",
                run.status,
                run.allowed_events(),
            )
    if event.type == "RunCompleted" and run.uncertain_actions():
        open_ids = ", ".join(a.action_id for a in run.uncertain_actions())
        raise RunRefused(
            f"actions {open_ids} are uncertain: report them executed first",
            run.status,
            sorted(ALLOWED[run.status] - {"RunCompleted"}),
        )
    answering = event.type in ("ApprovalGranted", "ApprovalDenied")
    if answering and run.approvals.get(event.approval_id or "") != "requested":
        raise RunRefused(
            f"approval {event.approval_id} was not requested", run.status, run.allowed_events()
        )


def apply(run: Run | None, event: RunEvent) -> Run:
    """The snapshot after ``event``; ``run`` is None only before ``RunCreated``."""
    if run is None:
        if event.type != "RunCreated" or event.run is None:
            raise ValueError("a run's first event is RunCreated")
        spec = RunCreate.model_validate(event.run)
        return Run(
            **spec.model_dump(exclude={"run_id"}),
            run_id=event.run_id,
            tenant=event.tenant,
            pending_steps=list(spec.plan),
            state_version=event.seq,
            created_at=event.at,
            updated_at=event.at,
        )
    new = run.model_copy(deep=True)
    kind = event.type
    if kind == "StepStarted" and event.step:
        if event.step in new.completed_steps or event.step == new.current_step:
            new.retries[event.step] = new.retries.get(event.step, 0) + 1
        new.current_step = event.step
        if event.step in new.pending_steps:
            new.pending_steps.remove(event.step)
    elif kind == "StepCompleted" and event.step:
        if event.step not in new.completed_steps:
            new.completed_steps.append(event.step)
        if event.step in new.pending_steps:
            new.pending_steps.remove(event.step)
        if new.current_step == event.step:
            new.current_step = None
    elif kind == "ObservationRecorded" and event.text:
        new.observations = [*new.observations, event.text][-_MAX_OBSERVATIONS:]
    elif kind == "ActionProposed" and event.action_id and event.tool:
        new.actions[event.action_id] = Action(
            action_id=event.action_id,
            tool=event.tool,
            args_summary=event.args_summary,
            step=event.step or new.current_step,
            proposed_seq=event.seq,
        )
        if new.budgets.tool_calls_left is not None:
            new.budgets.tool_calls_left -= 1
    elif kind == "ActionExecuted" and event.action_id in new.actions:
        action = new.actions[event.action_id or ""]
        action.outcome, action.executed_seq = event.outcome, event.seq
        if event.cost is not None and new.budgets.cost_left is not None:
            new.budgets.cost_left -= event.cost
    elif kind == "ApprovalRequested" and event.approval_id:
        new.approvals[event.approval_id] = "requested"
    elif kind in ("ApprovalGranted", "ApprovalDenied") and event.approval_id:
        new.approvals[event.approval_id] = "granted" if kind == "ApprovalGranted" else "denied"
    elif kind == "ArtifactRecorded" and event.artifact:
        new.artifacts.append(event.artifact)
    elif kind == "CheckpointCreated":
        new.checkpoint = Checkpoint(
            seq=event.seq, at=event.at, note=event.text, step=new.current_step
        )
    elif kind in ("RunCompleted", "RunFailed", "RunCancelled"):
        new.outcome = event.reason or event.text
    if kind in _MOVES:
        new.status = _MOVES[kind]
    new.state_version = event.seq
    new.updated_at = event.at
    return new


def rebuild(events: list[RunEvent]) -> Run:
    """The snapshot from a run's whole event log, in sequence order."""
    run: Run | None = None
    for event in sorted(events, key=lambda e: e.seq):
        run = apply(run, event)
    if run is None:
        raise ValueError("no events")
    return run


def stamp(
    run: Run, proposed: list[EventIn], at: float, actor: str | None
) -> tuple[Run, list[RunEvent]]:
    """Check and apply ``proposed`` in order; the new snapshot and the events to store."""
    stamped: list[RunEvent] = []
    for event in proposed:
        check(run, event)
        full = RunEvent(
            **event.model_dump(),
            run_id=run.run_id,
            tenant=run.tenant,
            seq=run.state_version + 1,
            at=at,
            actor=actor,
        )
        run = apply(run, full)
        stamped.append(full)
    return run, stamped
