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


ELEMENTS = b"""import { Subject } from './Subject';
import { SchedulerLike } from './types';
import { HotObservable } from './HotObservable';

export class Runner {
  public readonly hot: HotObservable[] = [];

  flush() {
    const hot = this.hot;
    hot.shift()!.setup();
  }
}

export function windows(scheduler: SchedulerLike, teardown: unknown, total: number) {
  let opened = [new Subject<number>()];
  opened.shift()!.complete();
  opened[0].next(1);
  scheduler.schedule(function () {
    this.schedule();
  });
  if (teardown instanceof Subject) {
    teardown.error(1);
  }
  const due = total - scheduler!.now();
}

export function build(): Subject<number | string> | null {
  return null;
}
"""


def _edges_of(source: bytes, path: str) -> set[tuple[str, str, str]]:
    state = build_state(FileStateBuilder(), path, source)
    prefix = f"r::{state.path}::"

    def named(dst: str, ref: object) -> str:
        return dst.removeprefix(prefix) if ref is None else f"ref:{ref.name}"  # type: ignore[attr-defined]

    return {(e.type.value, e.src.removeprefix(prefix), named(e.dst, e.ref)) for e in state.edges}


def test_elements_narrowing_callback_this_and_misparsed_receivers() -> None:
    edges = _edges_of(ELEMENTS, "src/windows.ts")
    calls = {dst for kind, src, dst in edges if kind == "CALLS" and src == "windows"}
    assert {
        "ref:Subject.complete",  # [new Subject()].shift()!
        "ref:Subject.next",  # opened[0]
        "ref:SchedulerLike.schedule(*).schedule",  # this in a function passed to schedule()
        "ref:Subject.error",  # inside if (teardown instanceof Subject)
        "ref:SchedulerLike.now",  # total - scheduler!.now(), which the grammar misparses
    } <= calls
    assert ("CALLS", "Runner.flush", "ref:HotObservable.setup") in edges  # this.hot's element
    # A union inside the generics is not a union of the return type.
    assert ("RETURNS", "build", "ref:Subject") in edges


def test_a_passed_functions_declared_this_is_a_callback_parameter_of_its_callee() -> None:
    source = b"""import { SchedulerAction } from './types';
export interface SchedulerLike {
  schedule(work: (this: SchedulerAction<number>, state?: number) => void): void;
}
"""
    edges = _edges_of(source, "src/types2.ts")
    assert ("CALLBACK_PARAM", "SchedulerLike.schedule", "ref:SchedulerAction") in edges
