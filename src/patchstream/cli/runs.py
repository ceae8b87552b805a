"""``patchstream run`` and ``patchstream session``: durable runs and session working state in
the query service of a running stack (what an agent worker or a person at a shell uses)."""

from __future__ import annotations

import json
from typing import Any

import click

from patchstream.client import PatchClientError, RunClient, RunConflictError
from patchstream.config.settings import get_settings


def _client() -> RunClient:
    query = get_settings().query
    return RunClient(query.url, query.api_key.get_secret_value())


def _do(action: Any) -> None:
    """Run ``action(client)`` and print its JSON; a refusal says what the run allows."""
    client = _client()
    try:
        click.echo(json.dumps(action(client), indent=2))
    except RunConflictError as exc:
        allowed = f" (allowed: {', '.join(exc.allowed) or 'nothing'})" if exc.allowed else ""
        current = f" (current state_version: {exc.current_version})" if exc.current_version else ""
        raise click.ClickException(f"refused: {exc}{allowed}{current}") from exc
    except PatchClientError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        client.close()


@click.group()
def run() -> None:
    """Start, advance, checkpoint and resume agent runs (execution state)."""


@run.command("start")
@click.argument("goal")
@click.option("--repo", default=None)
@click.option("--ref", default="main", show_default=True)
@click.option("--session", "session_id", default=None)
@click.option("--plan", "plan", multiple=True, help="A plan step (repeat in order).")
@click.option("--done-when", "contract", multiple=True, help="A success criterion (repeat).")
@click.option("--tool-calls", type=int, default=None, help="Tool-call budget.")
def start(
    goal: str, repo: str | None, ref: str, session_id: str | None, plan: tuple[str, ...],
    contract: tuple[str, ...], tool_calls: int | None,
) -> None:  # fmt: skip
    """Create a run and move it to RUNNING."""
    fields = {
        "repo": repo, "ref": ref, "session_id": session_id, "plan": list(plan),
        "success_contract": list(contract), "budgets": {"tool_calls_left": tool_calls},
    }  # fmt: skip
    _do(lambda c: c.start(goal, **fields))


@run.command("show")
@click.argument("run_id")
@click.option("--events", is_flag=True, help="The event log instead of the snapshot.")
def show(run_id: str, events: bool) -> None:
    """A run's snapshot (or its events)."""
    _do(lambda c: c.events(run_id) if events else c.get(run_id))


@run.command("step")
@click.argument("run_id")
@click.argument("step")
@click.option("--done", is_flag=True, help="Record the step as completed (else: started).")
@click.option("--observe", default=None, help="Also record this observation.")
def step(run_id: str, step: str, done: bool, observe: str | None) -> None:
    """Start (or complete) a step of the run at its current version."""
    events: list[dict[str, Any]] = [
        {"type": "StepCompleted" if done else "StepStarted", "step": step}
    ]
    if observe:
        events.append({"type": "ObservationRecorded", "text": observe, "step": step})
    _do(lambda c: c.record(c.get(run_id), *events))


@run.command("checkpoint")
@click.argument("run_id")
@click.option("--note", default=None)
def checkpoint(run_id: str, note: str | None) -> None:
    """Mark a point to resume from: later code changes are reported against it."""
    _do(lambda c: c.checkpoint(c.get(run_id), note))


@run.command("transition")
@click.argument("run_id")
@click.argument("to", type=click.Choice(["RUNNING", "WAITING_FOR_HUMAN",
                                         "WAITING_FOR_EXTERNAL_EVENT", "COMPLETED", "FAILED",
                                         "CANCELLED"]))  # fmt: skip
@click.option("--reason", default=None)
def transition(run_id: str, to: str, reason: str | None) -> None:
    """Ask the runtime to move the run; it refuses what its status does not allow."""
    _do(lambda c: c.transition(c.get(run_id), to, reason))


@run.command("resume")
@click.argument("run_id")
@click.option("--budget", default=4000, show_default=True, type=click.IntRange(64, 200_000),
              help="Context tokens (64-200000).")  # fmt: skip
def resume(run_id: str, budget: int) -> None:
    """The state to resume from: uncertain actions, code changed since the checkpoint,
    and fresh context."""
    _do(lambda c: c.resume(run_id, budget))


@click.group()
def session() -> None:
    """A session's working state: scratchpad, diffs, tool outputs."""


@session.command("show")
@click.argument("session_id")
def session_show(session_id: str) -> None:
    """The session and its working state."""
    _do(lambda c: c.session(session_id))


@session.command("note")
@click.argument("session_id")
@click.argument("text")
@click.option("--kind", type=click.Choice(["subgoal", "plan", "note"]), default="note")
def session_note(session_id: str, text: str, kind: str) -> None:
    """Add a scratchpad item to the session."""
    _do(lambda c: c.note(session_id, text, kind=kind))
