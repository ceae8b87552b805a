"""Each call edge says how sure it is (exact / inferred / name-only), and walks follow only
what the caller asks for: FalkorDB, real deltas, either arrival order."""

from __future__ import annotations

import itertools

from patchstream.schemas.graph import CallResolution
from patchstream.stores.graph.cypher import CypherGraphStore
from tests.integration.deltas import upsert
from tests.integration.test_graph_store import PRICED_TS
from tests.integration.test_graph_store import SESSIONS as TYPED_SESSIONS

EXACT, INFERRED, NAME_ONLY = CallResolution.EXACT, CallResolution.INFERRED, CallResolution.NAME_ONLY

ADAPTERS = """\
class HTTPAdapter:
    def send(self, request):
        return request

    def close(self):
        pass
"""

# The typed-receiver fixture of the contract suite, plus a call on an untyped parameter.
SESSIONS = TYPED_SESSIONS + "\n\ndef shutdown(thing):\n    thing.close()\n"

A = "app::pkg/adapters.py::"
S = "app::pkg/sessions.py::"


def _callers(
    graph: CypherGraphStore, tenant: str, sid: str, weakest: CallResolution = INFERRED
) -> dict[str, str]:
    return {n.symbol.id: n.resolution for n in graph.callers(tenant, sid, 1, "main", weakest)}


def test_declared_types_are_exact_and_constructor_guesses_inferred_in_either_order(
    graph: CypherGraphStore, tenant: str
) -> None:
    files = (("pkg/adapters.py", ADAPTERS), ("pkg/sessions.py", SESSIONS))
    for number, order in enumerate(itertools.permutations(files)):
        scoped = f"{tenant}-{number}"
        for version, (path, text) in enumerate(order, start=1):
            graph.apply(upsert(scoped, path, text, version))
        send = A + "HTTPAdapter.send"
        # ``adapter: HTTPAdapter`` is declared; ``self.adapter = HTTPAdapter()`` is a guess.
        assert _callers(graph, scoped, send) == {
            S + "mount": "exact",
            S + "Session.send": "inferred",
        }
        assert _callers(graph, scoped, send, EXACT) == {S + "mount": "exact"}
        # What the stored edges say, as the snapshot compares them.
        calls = {(src.rsplit("|", 1)[-1], dst.rsplit("|", 1)[-1], res)
                 for src, kind, dst, res in graph.snapshot(scoped).resolutions
                 if kind == "CALLS"}  # fmt: skip
        assert (S + "mount", send, "exact") in calls
        assert (S + "Session.send", send, "inferred") in calls


def test_callees_and_impact_take_the_same_minimum(graph: CypherGraphStore, tenant: str) -> None:
    graph.apply(upsert(tenant, "pkg/adapters.py", ADAPTERS, 1))
    graph.apply(upsert(tenant, "pkg/sessions.py", SESSIONS, 2))
    callees = graph.callees(tenant, S + "Session.send", 1, "main", INFERRED)
    assert {(n.symbol.id, n.resolution) for n in callees} == {(A + "HTTPAdapter.send", "inferred")}
    assert graph.callees(tenant, S + "Session.send", 1, "main", EXACT) == []
    impact = graph.impact(tenant, A + "HTTPAdapter.send", 3, "main", EXACT)
    assert {n.symbol.id for n in impact} == {S + "mount"}


def test_a_path_is_as_sure_as_its_weakest_hop(graph: CypherGraphStore, tenant: str) -> None:
    """``run`` -> (exact) ``Session.send`` -> (inferred) ``HTTPAdapter.send``."""
    runner = "from pkg.sessions import Session\n\n\ndef run(s: Session):\n    return s.send(1)\n"
    graph.apply(upsert(tenant, "pkg/adapters.py", ADAPTERS, 1))
    graph.apply(upsert(tenant, "pkg/sessions.py", SESSIONS, 2))
    graph.apply(upsert(tenant, "pkg/run.py", runner, 3))
    two = graph.callers(tenant, A + "HTTPAdapter.send", 2)
    assert {(n.symbol.id, n.depth, n.resolution) for n in two} == {
        (S + "mount", 1, "exact"), (S + "Session.send", 1, "inferred"),
        ("app::pkg/run.py::run", 2, "inferred"),
    }  # fmt: skip
    direct = graph.callers(tenant, S + "Session.send", 1)
    assert [(n.symbol.id, n.resolution) for n in direct] == [("app::pkg/run.py::run", "exact")]


def test_an_edit_that_declares_the_type_makes_the_call_exact(
    graph: CypherGraphStore, tenant: str
) -> None:
    graph.apply(upsert(tenant, "pkg/adapters.py", ADAPTERS, 1))
    graph.apply(upsert(tenant, "pkg/sessions.py", SESSIONS, 2))
    declared = SESSIONS.replace("self.adapter = HTTPAdapter()",
                                "self.adapter: HTTPAdapter = HTTPAdapter()")  # fmt: skip
    graph.apply(upsert(tenant, "pkg/sessions.py", declared, 3))
    assert _callers(graph, tenant, A + "HTTPAdapter.send", EXACT) == {
        S + "mount": "exact", S + "Session.send": "exact",
    }  # fmt: skip
    # Incremental equals a clean index of the same files, resolutions included.
    clean = f"{tenant}-clean"
    graph.apply(upsert(clean, "pkg/sessions.py", declared, 1))
    graph.apply(upsert(clean, "pkg/adapters.py", ADAPTERS, 2))
    assert _strip(graph, tenant) == _strip(graph, clean)


def _strip(graph: CypherGraphStore, tenant: str) -> set[tuple[str, ...]]:
    return {tuple(part.replace(tenant, "T") for part in row)
            for row in graph.snapshot(tenant).resolutions}  # fmt: skip


def test_name_only_callers_are_read_only_when_asked_and_only_for_a_unique_method(
    graph: CypherGraphStore, tenant: str
) -> None:
    """``thing.close()`` with ``thing`` of no known type: ``HTTPAdapter.close`` is the only
    ``close`` of the branch, so it is a name-only caller, never a default one."""
    graph.apply(upsert(tenant, "pkg/sessions.py", SESSIONS, 1))
    graph.apply(upsert(tenant, "pkg/adapters.py", ADAPTERS, 2))
    close = A + "HTTPAdapter.close"
    assert _callers(graph, tenant, close) == {}
    assert _callers(graph, tenant, close, NAME_ONLY) == {S + "shutdown": "name-only"}
    callees = graph.callees(tenant, S + "shutdown", 1, "main", NAME_ONLY)
    assert [(n.symbol.id, n.resolution) for n in callees] == [(close, "name-only")]
    # The typed callers stay as sure as they were when name-only is allowed.
    assert _callers(graph, tenant, A + "HTTPAdapter.send", NAME_ONLY) == {
        S + "mount": "exact", S + "Session.send": "inferred",
    }  # fmt: skip
    # A second ``close`` anywhere in the branch: the name no longer tells which one runs.
    graph.apply(
        upsert(tenant, "pkg/files.py", "class File:\n    def close(self):\n        pass\n", 3)
    )
    assert _callers(graph, tenant, close, NAME_ONLY) == {}
    assert graph.callees(tenant, S + "shutdown", 1, "main", NAME_ONLY) == []


def test_calls_on_an_interface_are_inferred_callers_of_each_implementation(
    graph: CypherGraphStore, tenant: str
) -> None:
    for version, (path, text) in enumerate(PRICED_TS.items(), start=1):
        graph.apply(upsert(tenant, path, text, version))
    total = "app::src/cart.ts::total"
    assert _callers(graph, tenant, "app::src/priced.ts::Priced.price") == {total: "exact"}
    assert _callers(graph, tenant, "app::src/item.ts::Item.price") == {total: "inferred"}
    assert _callers(graph, tenant, "app::src/item.ts::Item.price", EXACT) == {}


CONTEXTS = """\
class Context:
    def find(self):
        return 1

    def other(self):
        return 2


def current() -> Context:
    return Context()


def local_use():
    return current().other()
"""

USES = """\
from pkg.contexts import current


def later():
    ctx = current()
    return ctx.find()


def now():
    return current().find()
"""


def test_calls_on_what_another_files_function_returns_reach_the_method(
    graph: CypherGraphStore, tenant: str
) -> None:
    """``current() -> Context`` is declared in one file; ``current().find()`` in another
    calls ``Context.find``, in either arrival order, and stops when the annotation goes."""
    find = "app::pkg/contexts.py::Context.find"
    files = (("pkg/contexts.py", CONTEXTS), ("pkg/uses.py", USES))
    for number, order in enumerate(itertools.permutations(files)):
        scoped = f"{tenant}-{number}"
        for version, (path, text) in enumerate(order, start=1):
            graph.apply(upsert(scoped, path, text, version))
        # Direct: exact; through a local bound by a call: inferred (the name may be rebound).
        assert _callers(graph, scoped, find) == {
            "app::pkg/uses.py::now": "exact", "app::pkg/uses.py::later": "inferred",
        }  # fmt: skip
        assert _callers(graph, scoped, find, EXACT) == {"app::pkg/uses.py::now": "exact"}
        # The same file's function: resolved in the file, as before.
        other = "app::pkg/contexts.py::Context.other"
        assert _callers(graph, scoped, other) == {"app::pkg/contexts.py::local_use": "exact"}
    # The return annotation removed: nothing says what current() returns any more.
    unannotated = CONTEXTS.replace("def current() -> Context:", "def current():")
    graph.apply(upsert(f"{tenant}-1", "pkg/contexts.py", unannotated, 3))
    assert _callers(graph, f"{tenant}-1", find) == {}
    # ... but the call is still a name-only caller: ``find`` is the branch's only one.
    assert _callers(graph, f"{tenant}-1", find, NAME_ONLY) == {
        "app::pkg/uses.py::now": "name-only", "app::pkg/uses.py::later": "name-only",
    }  # fmt: skip


SUBSCRIPTION_TS = """\
export class Subscription {
  unsubscribe(): void {}
}
"""
SUBSCRIBER_TS = """\
import { Subscription } from './Subscription';

export class Subscriber<T> extends Subscription {
  next(value: T): void {}
  complete(): void {}
}
"""
OBSERVABLE_TS = """\
export class Observable<T> {
  subscribe(next: (value: T) => void): void {}
}
"""
LIFT_TS = """\
import { Observable } from '../Observable';
import { Subscriber } from '../Subscriber';

export function operate<T, R>(
  init: (liftedSource: Observable<T>, subscriber: Subscriber<R>) => void
): void {}
"""
MAP_TS = """\
import { operate } from '../util/lift';

export function map<T, R>(project: (value: T) => R) {
  return operate((source, subscriber) => {
    source.subscribe((value) => subscriber.next(project(value)));
  });
}

export function done() {
  return operate((source, subscriber) => {
    subscriber.complete();
    subscriber.unsubscribe();
  });
}
"""
CALLBACK_FILES = (("src/Subscription.ts", SUBSCRIPTION_TS),
                  ("src/Subscriber.ts", SUBSCRIBER_TS), ("src/Observable.ts", OBSERVABLE_TS),
                  ("src/util/lift.ts", LIFT_TS), ("src/operators/map.ts", MAP_TS))  # fmt: skip
NEXT, SUBSCRIBE = (
    "app::src/Subscriber.ts::Subscriber.next",
    "app::src/Observable.ts::Observable.subscribe",
)
MAP_FN, DONE = "app::src/operators/map.ts::map", "app::src/operators/map.ts::done"
UNSUBSCRIBE = "app::src/Subscription.ts::Subscription.unsubscribe"


def test_a_callbacks_parameters_take_their_types_from_the_callees_signature(
    graph: CypherGraphStore, tenant: str
) -> None:
    """``operate((source, subscriber) => subscriber.next())`` with ``operate``'s parameter
    typed ``(source: Observable<T>, subscriber: Subscriber<R>) => void`` in another file:
    ``map`` calls ``Subscriber.next`` and ``Observable.subscribe`` (inferred: the join does
    not know which callback parameter it is), in either arrival order, in an overlay view as
    in a clean index, and not once the signature stops saying it."""
    for order in ("forward", "reverse"):
        scoped = f"{tenant}-{order}"
        files = CALLBACK_FILES if order == "forward" else CALLBACK_FILES[::-1]
        for version, (path, text) in enumerate(files, start=1):
            graph.apply(upsert(scoped, path, text, version))
        assert _callers(graph, scoped, NEXT) == {MAP_FN: "inferred"}
        assert _callers(graph, scoped, SUBSCRIBE) == {MAP_FN: "inferred"}
        complete = "app::src/Subscriber.ts::Subscriber.complete"
        assert _callers(graph, scoped, complete) == {DONE: "inferred"}
        # Inherited: Subscriber does not define unsubscribe, its base in another file does.
        assert _callers(graph, scoped, UNSUBSCRIBE) == {DONE: "inferred"}
        assert _callers(graph, scoped, NEXT, EXACT) == {}
    # The signature without types in the base; an agent's workspace writes them back.
    untyped = LIFT_TS.replace(
        "init: (liftedSource: Observable<T>, subscriber: Subscriber<R>) => void", "init: any"
    )
    scoped = f"{tenant}-forward"
    graph.apply(upsert(scoped, "src/util/lift.ts", untyped, 10))
    assert _callers(graph, scoped, NEXT) == {}
    graph.apply(upsert(scoped, "src/util/lift.ts", LIFT_TS, 11, workspace="agent-1"))
    in_view = {n.symbol.id: n.resolution
               for n in graph.callers(scoped, NEXT, 1, "main~agent-1", INFERRED)}  # fmt: skip
    assert in_view == {MAP_FN: "inferred"}
    view_callers = graph.callers(scoped, UNSUBSCRIBE, 1, "main~agent-1", INFERRED)
    inherited = {n.symbol.id: n.resolution for n in view_callers}
    assert inherited == {DONE: "inferred"}
    assert _callers(graph, scoped, NEXT) == {}  # the base still says nothing
    assert _callers(graph, scoped, UNSUBSCRIBE) == {}
    assert {n.symbol.id for n in graph.callers(scoped, NEXT, 1, "main~agent-1", EXACT)} == set()
