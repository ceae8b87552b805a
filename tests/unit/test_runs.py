"""The run runtime without a store: transitions, refusals, and replay equal to the snapshot."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from patchstream.agent import runs
from patchstream.agent.runs import ALLOWED, EventIn, Run, RunRefused, RunStatus


def _run(**spec: object) -> tuple[Run, list[runs.RunEvent]]:
    created = runs.created_event("t", "r1", runs.RunCreate(goal="fix", **spec), 1.0, None)  # type: ignore[arg-type]
    return runs.apply(None, created), [created]


def _do(run: Run, *events: EventIn) -> Run:
    return runs.stamp(run, list(events), 2.0, "worker")[0]


def test_an_illegal_transition_is_refused_with_the_allowed_ones() -> None:
    run, _ = _run()
    with pytest.raises(RunRefused) as refused:
        _do(run, EventIn(type="RunCompleted"))
    assert refused.value.status == RunStatus.CREATED
    assert refused.value.allowed == ["RunCancelled", "RunStarted"]
    assert run.allowed_statuses() == ["CANCELLED", "RUNNING"]
    done = _do(run, EventIn(type="RunStarted"), EventIn(type="RunCompleted", reason="ok"))
    assert done.status == RunStatus.COMPLETED and done.outcome == "ok"
    with pytest.raises(RunRefused):  # terminal: nothing more
        _do(done, EventIn(type="ObservationRecorded", text="late"))
    # Issue #36: a waiting run listed (CANCELLED, FAILED) though a move to RUNNING succeeds.
    waiting = _do(run, EventIn(type="RunStarted"),
                  EventIn(type="ApprovalRequested", approval_id="ap1"))  # fmt: skip
    assert waiting.allowed_statuses() == ["CANCELLED", "FAILED", "RUNNING"]
    assert done.allowed_statuses() == []


def test_completion_waits_for_uncertain_actions_and_budgets_are_enforced() -> None:
    run, _ = _run(budgets={"tool_calls_left": 1, "cost_left": 1.0})
    run = _do(run, EventIn(type="RunStarted"),
              EventIn(type="ActionProposed", action_id="a1", tool="pytest"))  # fmt: skip
    assert [a.action_id for a in run.uncertain_actions()] == ["a1"]
    with pytest.raises(RunRefused, match="uncertain"):
        _do(run, EventIn(type="RunCompleted"))
    with pytest.raises(RunRefused, match="budget"):
        _do(run, EventIn(type="ActionProposed", action_id="a2", tool="pytest"))
    run = _do(run, EventIn(type="ActionExecuted", action_id="a1", outcome="ok", cost=0.25))
    assert run.uncertain_actions() == [] and run.budgets.cost_left == 0.75
    with pytest.raises(RunRefused, match="not an uncertain action"):
        _do(run, EventIn(type="ActionExecuted", action_id="a1", outcome="ok"))
    assert _do(run, EventIn(type="RunCompleted")).status == RunStatus.COMPLETED


def test_a_stamp_is_all_or_nothing_and_needs_its_fields() -> None:
    run, _ = _run()
    with pytest.raises(RunRefused, match="needs step"):
        _do(run, EventIn(type="RunStarted"), EventIn(type="StepStarted"))
    with pytest.raises(RunRefused, match="not requested"):
        _do(
            run,
            EventIn(type="RunStarted"),
            EventIn(type="ApprovalRequested", approval_id="ap1"),
            EventIn(type="ApprovalGranted", approval_id="x"),
        )
    assert run.state_version == 1  # the input snapshot is never changed


def test_steps_checkpoints_and_waits() -> None:
    run, _ = _run(plan=["read", "edit", "test"])
    run = _do(run, EventIn(type="RunStarted"), EventIn(type="StepStarted", step="read"),
              EventIn(type="StepCompleted", step="read"), EventIn(type="StepStarted", step="edit"),
              EventIn(type="CheckpointCreated", text="edited"))  # fmt: skip
    assert run.pending_steps == ["test"] and run.completed_steps == ["read"]
    assert run.current_step == "edit" and run.checkpoint is not None
    assert run.checkpoint.step == "edit" and run.checkpoint.seq == run.state_version
    waiting = _do(run, EventIn(type="ApprovalRequested", approval_id="ap1"))
    assert waiting.status == RunStatus.WAITING_FOR_HUMAN
    with pytest.raises(RunRefused):
        _do(waiting, EventIn(type="StepStarted", step="test"))
    back = _do(waiting, EventIn(type="ApprovalGranted", approval_id="ap1", by="alice"))
    assert back.status == RunStatus.RUNNING and back.approvals == {"ap1": "granted"}
    again = _do(back, EventIn(type="StepStarted", step="edit"))
    assert again.retries == {"edit": 1}


_EVENTS = st.sampled_from([
    EventIn(type="RunStarted"), EventIn(type="StepStarted", step="s1"),
    EventIn(type="StepStarted", step="s2"), EventIn(type="StepCompleted", step="s1"),
    EventIn(type="ObservationRecorded", text="saw"),
    EventIn(type="ActionProposed", action_id="a1", tool="edit"),
    EventIn(type="ActionProposed", action_id="a2", tool="test"),
    EventIn(type="ActionExecuted", action_id="a1", outcome="ok", cost=1.0),
    EventIn(type="ActionExecuted", action_id="a2", outcome="error"),
    EventIn(type="ApprovalRequested", approval_id="p1"),
    EventIn(type="ApprovalGranted", approval_id="p1"),
    EventIn(type="ApprovalDenied", approval_id="p1"),
    EventIn(type="ExternalEventAwaited", reason="ci"), EventIn(type="ExternalEventReceived"),
    EventIn(type="ArtifactRecorded", artifact={"kind": "blob", "ref": "ab12"}),  # type: ignore[arg-type]
    EventIn(type="CheckpointCreated"), EventIn(type="RunCompleted"),
    EventIn(type="RunFailed", reason="x"), EventIn(type="RunCancelled"),
])  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(proposals=st.lists(_EVENTS, max_size=40))
def test_replaying_the_log_gives_the_snapshot_and_moves_follow_the_table(
    proposals: list[EventIn],
) -> None:
    run, log = _run(budgets={"tool_calls_left": 3})
    for proposal in proposals:
        before = run.status
        try:
            run, stamped = runs.stamp(run, [proposal], 3.0, "w")
        except RunRefused as refused:
            assert refused.allowed == sorted(refused.allowed)
            continue
        assert proposal.type in ALLOWED[before]
        log += stamped
        assert runs.rebuild(log) == run
    assert [e.seq for e in log] == list(range(1, len(log) + 1))
    assert run.budgets.tool_calls_left is not None and run.budgets.tool_calls_left >= 0
