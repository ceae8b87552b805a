"""TypeScript receivers written in TypeScript's own ways: a non-null assertion (``x!.m()``)
and a function's declared ``this`` (``function (this: SchedulerAction) { this.m() }``)."""

from __future__ import annotations

from patchstream.parsing.filestate import FileStateBuilder
from tests.conftest import build_state

SOURCE = b"""import { SchedulerAction } from './types';

class Scheduler { now(): number { return 0; } }

export function timer(scheduler?: Scheduler) {
  const due = scheduler!.now();
  return due;
}

export function executeSchedule(run: (work: () => void) => void) {
  run(function (this: SchedulerAction<any>) {
    this.schedule(null, 0);
  });
}

export function untyped(run: (work: () => void) => void) {
  run(function () {
    this.schedule(null, 0);
  });
}
"""


def _calls(caller: str) -> set[str]:
    state = build_state(FileStateBuilder(), "src/timer.ts", SOURCE)
    prefix = f"r::{state.path}::"
    return {
        e.dst.removeprefix(prefix) if e.ref is None else f"ref:{e.ref.name}@{e.ref.module}"
        for e in state.edges
        if e.type.value == "CALLS" and e.src == f"{prefix}{caller}"
    }


def test_a_non_null_assertion_keeps_the_receivers_type() -> None:
    assert _calls("timer") == {"Scheduler.now"}


def test_a_declared_this_types_this_in_a_function_outside_any_class() -> None:
    assert "ref:SchedulerAction.schedule@src/types" in _calls("executeSchedule")
    # No declared ``this`` and no class around: nothing to type it by.
    assert _calls("untyped") == {"ref:run@None", "ref:this.schedule@None"}


def test_a_bare_name_is_never_a_member_of_the_class_or_literal_around_it() -> None:
    """In JavaScript ``setInterval()`` inside a method named ``setInterval`` is the global
    one, and ``flush()`` inside a class is not ``this.flush()``."""
    source = b"""export const intervalProvider = {
  setInterval(handler: () => void, timeout?: number) {
    return setInterval(handler, timeout);
  },
};

export class Queue {
  flush() {}
  run() {
    flush();
    this.flush();
  }
}
"""
    state = build_state(FileStateBuilder(), "src/provider.ts", source)
    prefix = f"r::{state.path}::"
    calls = {(e.src.removeprefix(prefix), e.dst.removeprefix(prefix)) for e in state.edges
             if e.type.value == "CALLS"}  # fmt: skip
    assert ("intervalProvider.setInterval", "intervalProvider.setInterval") not in calls
    assert ("Queue.run", "Queue.flush") in calls  # this.flush()
    assert ("Queue.run", "ref:flush") in calls  # flush(): a global, or another file's
