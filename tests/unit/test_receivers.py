"""Receiver-aware call resolution in Python: calls through typed attributes, parameters,
locals built from a class, factories with a return annotation, super() and cls."""

from __future__ import annotations

import pytest

from patchstream.parsing.filestate import FileStateBuilder
from patchstream.parsing.type_text import type_parts
from patchstream.stores.graph.keys import shadowed
from tests.conftest import build_state

SOURCE = b"""
from .adapters import HTTPAdapter
from . import models
from .base import Remote


class Base:
    def send(self, r):
        return r


class Helper:
    def go(self):
        pass


def make_helper() -> "Helper":
    return Helper()


class Session(Base):
    pool: HTTPAdapter

    def __init__(self):
        super().__init__()
        self.adapter = HTTPAdapter()
        self.local = Helper()
        self.either = Helper()
        self.either = Base()

    def send(self, request: "models.Request", extra: Optional[Helper] = None):
        super().send(request)
        self.adapter.send(request)
        self.pool.close()
        self.local.go()
        self.either.go()
        p = models.PreparedRequest()
        p.prepare(request)
        request.copy()
        extra.go()
        make_helper().go()
        h = make_helper()
        h.go()
        return self.merge(request)

    @classmethod
    def make(cls):
        return cls()

    def merge(self, r):
        return r

    def helper(self) -> Helper:
        return Helper()

    def use(self, other: "Session"):
        f = other.helper()
        f.go()

    helper_class = Helper

    def aliased(self):
        make = make_helper
        make()
        self.helper_class()

    def helpers(self) -> list[Helper]:
        return [Helper()]

    def each(self):
        for item in self.helpers():
            item.go()


class Client(Remote):
    def call(self):
        self.connect()
        return super().call()


class Sub(Session):
    def __init__(self, helper: Helper):
        Session.__init__(self)
        self.kept = helper
        with Session() as s:
            s.merge(1)

    def later(self):
        self.kept.go()
"""


def _calls(method: str) -> set[str]:
    state = build_state(FileStateBuilder(), "pkg/session.py", SOURCE)
    prefix = "r::pkg/session.py::"
    return {
        f"{e.type.value} {e.dst.removeprefix(prefix)}"
        for e in state.edges
        if e.src == f"{prefix}{method}" and e.type.value in ("CALLS", "INSTANTIATES")
    }


def test_calls_resolve_through_the_receivers_type() -> None:
    calls = _calls("Session.send")
    assert "CALLS Base.send" in calls  # super().send(...)
    assert "CALLS ref:HTTPAdapter.send@pkg.adapters" in calls  # self.adapter = HTTPAdapter()
    assert "CALLS ref:HTTPAdapter.close@pkg.adapters" in calls  # class-level `pool: HTTPAdapter`
    assert "CALLS Helper.go" in calls  # self.local, the Optional[Helper] parameter, h
    assert "CALLS ref:models.PreparedRequest.prepare@pkg" in calls  # a local from a class
    assert "CALLS ref:models.Request.copy@pkg" in calls  # a string annotation
    assert "CALLS Session.merge" in calls
    # Bound to two different types: no type (and no guess), the name stays unresolved.
    assert "CALLS ref:self.either.go" in calls
    assert not any("super" in call for call in calls)


def test_a_methods_return_annotation_types_what_it_returns() -> None:
    assert "CALLS Helper.go" in _calls("Session.use")  # f = other.helper(); f.go()
    assert "CALLS Helper.go" in _calls("Session.each")  # for item in self.helpers() (list)


def test_class_qualified_calls_and_with_targets() -> None:
    # Session.__init__(self) and `with Session() as s: s.merge(...)`
    assert {"CALLS Session.__init__", "CALLS Session.merge"} <= _calls("Sub.__init__")


def test_an_attribute_takes_the_type_of_the_parameter_assigned_to_it() -> None:
    assert _calls("Sub.later") == {"CALLS Helper.go"}  # self.kept = helper (helper: Helper)


def test_aliases_call_what_they_name() -> None:
    assert _calls("Session.aliased") == {"CALLS make_helper", "INSTANTIATES Helper"}


def test_cls_and_inherited_members_of_imported_bases() -> None:
    assert _calls("Session.make") == {"INSTANTIATES Session"}
    calls = _calls("Client.call")
    assert "CALLS ref:Remote.connect@pkg.base" in calls  # self.connect() from Remote
    assert "CALLS ref:Remote.call@pkg.base" in calls  # super().call()


@pytest.mark.parametrize(
    ("written", "parts"),
    [
        ("Session", ("Session",)),
        ('"models.Request"', ("models", "Request")),
        ("Optional[Helper]", ("Helper",)),
        ("typing.Optional['a.B']", ("a", "B")),
        ("Helper | None", ("Helper",)),
        ("list[Helper]", None),
        ("A | B", None),
        ("Callable[[int], str]", None),
    ],
)
def test_type_parts(written: str, parts: tuple[str, ...] | None) -> None:
    assert type_parts(written) == parts


@pytest.mark.parametrize(
    ("written", "parts"),
    [("list[Helper]", ("Helper",)), ('Iterator["a.B"]', ("a", "B")),
     ("tuple[Helper, ...]", ("Helper",)), ("dict[str, Helper]", None), ("Helper", None)],
)  # fmt: skip
def test_element_parts(written: str, parts: tuple[str, ...] | None) -> None:
    from patchstream.parsing.type_text import element_parts

    assert element_parts(written) == parts


TS_SOURCE = b"""import { Store } from "./store";
import * as models from "./models";

interface Priced { price(): number; }

class Item implements Priced {
  price(): number { return 1; }
}

export class Cart {
  helper = new Item();
  constructor(private store: Store, public other: Item) {}
  total(one: Item, req: models.Request, p: Priced): number {
    this.store.put("k", 1);
    this.helper.price();
    this.other.price();
    one.price();
    req.send();
    p.price();
    const it = new Item();
    return it.price();
  }
}
"""


def test_typescript_calls_resolve_through_declared_and_constructed_types() -> None:
    state = build_state(FileStateBuilder(), "src/cart.ts", TS_SOURCE)
    prefix = "r::src/cart.ts::"
    calls = {e.dst.removeprefix(prefix) for e in state.edges
             if e.src == f"{prefix}Cart.total" and e.type.value == "CALLS"}  # fmt: skip
    assert calls == {
        "ref:Store.put@src/store",  # a parameter property: a field of the class
        "Item.price",  # a field from `new`, a parameter property, a parameter, a local
        "ref:Request.send@src/models",  # a namespace import's type
        "Priced.price",  # an interface: its implementations are found by the graph
    }


GO_SOURCE = b"""package logs

import "example.com/app/store"

type Store interface {
	Put(key string, v int) error
}

type Memory struct{}

func (m *Memory) Put(key string, v int) error { return nil }

type Logger struct {
	store Store
	mem   *Memory
	ext   store.Backend
}

func NewLogger() *Logger { return &Logger{} }

func (l *Logger) Log(key string, v int) {
	l.store.Put(key, v)
	l.mem.Put(key, v)
	l.ext.Flush()
	m := &Memory{}
	m.Put(key, v)
	other := NewLogger()
	other.Log(key, v)
}

func Use(b store.Backend, lg *Logger) {
	b.Flush()
	lg.Log("k", 1)
}
"""


def test_go_calls_resolve_through_receivers_fields_and_constructors() -> None:
    state = build_state(FileStateBuilder(), "logs/logs.go", GO_SOURCE)
    prefix = "r::logs/logs.go::"

    def calls(src: str) -> set[str]:
        return {e.dst.removeprefix(prefix) for e in state.edges
                if e.src == f"{prefix}{src}" and e.type.value == "CALLS"}  # fmt: skip

    assert calls("Logger.Log") == {
        "Store.Put",  # l.store: a struct field of interface type
        "Memory.Put",  # l.mem (*Memory) and m := &Memory{}
        "ref:Backend.Flush@example.com/app/store",  # a field of an imported type
        "Logger.Log",  # other := NewLogger() returns *Logger
        "NewLogger",
    }
    assert calls("Use") == {"ref:Backend.Flush@example.com/app/store", "Logger.Log"}


def test_go_results_of_methods_and_interface_methods_type_receivers() -> None:
    """goldmark's ``for c := n.FirstChild(); c != nil; c = c.NextSibling()`` over an
    interface, and ``seg := r.Peek()`` of a struct's method: the declared results type them
    (go/types' reference on goldmark: recall 0.818 -> 0.869 with this)."""
    source = b"""package ast

type Node interface {
	FirstChild() Node
	NextSibling() Node
}

type Segment struct{}

func (s Segment) Len() int { return 0 }

type Reader struct{}

func (r *Reader) Peek() Segment { return Segment{} }

func Walk(n Node, r *Reader) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
	}
	seg := r.Peek()
	seg.Len()
}
"""
    state = build_state(FileStateBuilder(), "ast/ast.go", source)
    prefix = "r::ast/ast.go::"
    calls = {e.dst.removeprefix(prefix) for e in state.edges
             if e.src == f"{prefix}Walk" and e.type.value == "CALLS"}  # fmt: skip
    assert calls == {"Node.FirstChild", "Node.NextSibling", "Reader.Peek", "Segment.Len"}


def _resolutions(method: str) -> dict[str, str]:
    state = build_state(FileStateBuilder(), "pkg/session.py", SOURCE)
    prefix = "r::pkg/session.py::"
    return {
        e.dst.removeprefix(prefix): str(e.resolution)
        for e in state.edges
        if e.src == f"{prefix}{method}" and e.type.value in ("CALLS", "INSTANTIATES")
    }


def test_each_call_says_whether_a_declaration_or_a_constructor_guess_resolved_it() -> None:
    send = _resolutions("Session.send")
    assert send["ref:HTTPAdapter.send@pkg.adapters"] == "inferred"  # self.adapter = HTTPAdapter()
    assert send["ref:HTTPAdapter.close@pkg.adapters"] == "exact"  # class-level `pool: HTTPAdapter`
    assert send["ref:models.PreparedRequest.prepare@pkg"] == "inferred"  # p = models.Prepared...()
    assert send["Base.send"] == "exact"  # super().send()
    # Helper.go is reached through a guess (self.local = Helper()) and through the annotated
    # ``extra: Optional[Helper]``: one edge, as sure as its surest call site.
    assert send["Helper.go"] == "exact"
    assert _resolutions("Sub.later") == {"Helper.go": "exact"}  # self.kept = helper: Helper
    # Edges that are not calls carry none.
    state = build_state(FileStateBuilder(), "pkg/session.py", SOURCE)
    assert {e.resolution for e in state.edges if e.type.value == "DEFINES"} == {None}


def test_a_nested_def_with_its_own_self_is_not_a_method_of_the_class_around_it() -> None:
    source = b"""
class Builder:
    def __repr__(self):
        return "b"

    def add_str(self):
        def __str__(self):
            return self.__repr__()

        def closure():
            return self.__repr__()

        return __str__, closure
"""
    state = build_state(FileStateBuilder(), "pkg/builder.py", source)
    prefix = "r::pkg/builder.py::"
    calls = {(e.src.removeprefix(prefix), e.dst.removeprefix(prefix)) for e in state.edges
             if e.type.value == "CALLS"}  # fmt: skip
    assert ("Builder.add_str.closure", "Builder.__repr__") in calls  # the method's own self
    assert ("Builder.add_str.__str__", "Builder.__repr__") not in calls


def test_calls_on_what_a_call_builds_and_on_private_classes() -> None:
    source = b"""
from ._compat import _Extractor
from .models import Model


class Local:
    def go(self):
        pass


def make() -> Local:
    return Local()


def use(x, parser: _Extractor):
    Local().go()
    make().go()
    _Extractor(x).first()
    parser.second()
    Model.create(x).save()
"""
    state = build_state(FileStateBuilder(), "pkg/use.py", source)
    prefix = "r::pkg/use.py::"
    calls = {(e.dst.removeprefix(prefix), str(e.resolution)) for e in state.edges
             if e.src == prefix + "use" and e.type.value == "CALLS"}  # fmt: skip
    assert ("Local.go", "exact") in calls  # Local().go() and make().go() (-> Local)
    # A leading underscore is still a class name by convention.
    assert ("ref:_Extractor.first@pkg._compat", "exact") in calls
    assert ("ref:_Extractor.second@pkg._compat", "exact") in calls
    # What another file's classmethod returns is for the graph to join, through the
    # method's RETURNS edge there: ``<Model.create's key>().save``.
    assert ("ref:Model.create().save@pkg.models", "exact") in calls


ALTERNATIVES = b"""
import sys

if sys.platform == "win32":
    def raw_terminal():
        return 1

    def getchar():
        return raw_terminal()
else:
    def raw_terminal():
        return 2

    def getchar():
        return raw_terminal()


def outside():
    return raw_terminal()


def overloaded(x):
    return x


def overloaded(x, y=None):
    return x


def first():
    from ._impl import helper as f

    return f()


def second():
    from ._impl import other as f

    return f()


def third(flag):
    f = first if flag else second
    return f()
"""


def test_definitions_in_other_branches_are_all_reached_and_none_hides_another() -> None:
    state = build_state(FileStateBuilder(), "pkg/term.py", ALTERNATIVES)
    prefix = "r::pkg/term.py::"
    calls = {(e.src.removeprefix(prefix), e.dst.removeprefix(prefix)) for e in state.edges
             if e.type.value == "CALLS"}  # fmt: skip
    # A call outside the if may run either variant; one inside a branch runs its own.
    assert {d for s, d in calls if s == "outside"} == {"raw_terminal", "raw_terminal#2"}
    assert {d for s, d in calls if s == "getchar"} == {"raw_terminal"}
    assert {d for s, d in calls if s == "getchar#2"} == {"raw_terminal#2"}
    variants = {s.id.removeprefix(prefix): s.alternative for s in state.symbols}
    assert variants["raw_terminal"] and variants["raw_terminal#2"]
    # Sequential redefinitions still shadow: the later one is what runs.
    assert not variants["overloaded"] and not variants["overloaded#2"]
    assert shadowed(state.symbols, "python") == {prefix + "overloaded"}


def test_an_import_inside_a_function_binds_its_name_there_only() -> None:
    state = build_state(FileStateBuilder(), "pkg/term.py", ALTERNATIVES)
    prefix = "r::pkg/term.py::"
    calls = {(e.src.removeprefix(prefix), e.dst) for e in state.edges if e.type.value == "CALLS"}
    assert ("first", "ref:helper@pkg._impl") in calls
    assert ("second", "ref:other@pkg._impl") in calls
    # ``f`` in a third function is neither import.
    assert not any(s == "third" and d.endswith("@pkg._impl") for s, d in calls)


def test_elements_of_annotated_containers_have_the_element_type() -> None:
    source = b"""
from .models import Option, Arg


class Parser:
    def __init__(self):
        self._long: dict[str, Option] = {}
        self._args: list[Arg] = []

    def match(self, opt):
        option = self._long[opt]
        option.process(1)
        for index, arg in enumerate(self._args):
            arg.consume(index)
        return [a.render() for a in self._args]


def use(items: list[Arg], names: dict[Option, str]):
    for it in items:
        it.go()
    for key in names:
        key.flag()


def windows(count):
    opened = [Option()]
    for window in opened:
        window.flag()
    window = Option()
    opened.append(window)
"""
    state = build_state(FileStateBuilder(), "pkg/parser.py", source)
    prefix = "r::pkg/parser.py::"
    calls = {(e.src.removeprefix(prefix), e.dst) for e in state.edges if e.type.value == "CALLS"}
    assert ("Parser.match", "ref:Option.process@pkg.models") in calls  # dict[str, Option][k]
    assert ("Parser.match", "ref:Arg.consume@pkg.models") in calls  # enumerate(list[Arg])
    assert ("Parser.match", "ref:Arg.render@pkg.models") in calls  # a comprehension
    assert ("use", "ref:Arg.go@pkg.models") in calls
    assert ("use", "ref:Option.flag@pkg.models") in calls  # iterating a dict gives its keys
    # A loop over a container of unknown elements does not undo the constructor's type: an
    # element is the weakest fact.
    assert ("windows", "ref:Option.flag@pkg.models") in calls


def test_typescript_array_callbacks_and_for_of_take_the_element_type() -> None:
    source = b"""import { Priced } from "./priced";

export function total(items: Priced[], more: Array<Priced>): number {
  items.forEach(it => it.ship());
  for (const m of more) { m.cost(); }
  for (const k in more) { k.none(); }
  return items.reduce((acc, x) => acc + x.price(), 0);
}
"""
    state = build_state(FileStateBuilder(), "src/cart.ts", source)
    calls = {e.dst for e in state.edges if e.type.value == "CALLS"}
    assert {"ref:Priced.ship@src/priced", "ref:Priced.cost@src/priced",
            "ref:Priced.price@src/priced"} <= calls  # fmt: skip
    assert "ref:k.none" in calls  # for-in gives keys, not elements


def test_tuple_items_mapping_getters_and_except_blocks_have_their_own_types() -> None:
    source = b"""
from .models import Command, Option, Abort, Usage


class Group:
    def __init__(self):
        self._short: dict[str, Option] = {}

    def resolve(self, args) -> tuple[str | None, Command | None, list[str]]:
        return None, None, args

    def invoke(self, args):
        name, cmd, rest = self.resolve(args)
        cmd.make_context(name)
        option = self._short.get(name)
        option.process(rest)
        try:
            pass
        except Abort as e:
            e.abort()
        except Usage as e:
            e.show()
"""
    state = build_state(FileStateBuilder(), "pkg/group.py", source)
    prefix = "r::pkg/group.py::"
    calls = {e.dst for e in state.edges if e.src == prefix + "Group.invoke"}
    assert "ref:Command.make_context@pkg.models" in calls  # the tuple's second item
    assert "ref:Option.process@pkg.models" in calls  # dict[str, Option].get(k)
    # ``e`` is bound twice in one function: each except block knows its own.
    assert {"ref:Abort.abort@pkg.models", "ref:Usage.show@pkg.models"} <= calls
    assert "ref:Abort.show@pkg.models" not in calls and "ref:Usage.abort@pkg.models" not in calls


LIFT_TS = b"""import { Observable } from '../Observable';
import { Subscriber } from '../Subscriber';
export function operate<T, R>(
  init: (liftedSource: Observable<T>, subscriber: Subscriber<R>) => void
): void {}
export class Box {
  constructor(make?: (this: Box, sub: Subscriber<number>, n: number) => void) {}
}
"""
USES_TS = b"""import { operate, Box } from '../util/lift';
export function map(project: (v: number) => number) {
  return operate((source, subscriber) => {
    source.subscribe((value) => subscriber.next(project(value)));
  });
}
export function boxed() {
  return new Box(function (sub) { sub.complete(); });
}
class Item { price(): number { return 1; } }
export function declared(items: Item[]) {
  operate((source: Local) => source.own());
  return items.map((item) => item.price());
}
"""


def test_typescript_callbacks_take_parameter_types_from_the_callees_signature() -> None:
    lift = build_state(FileStateBuilder(), "src/util/lift.ts", LIFT_TS)
    slots = {(e.src.rsplit("::", 1)[-1], e.dst) for e in lift.edges
             if e.type.value == "CALLBACK_PARAM"}  # fmt: skip
    assert slots == {  # ``this:`` is no parameter; a constructor's belong to its class
        ("operate", "ref:Observable@src/Observable"),
        ("operate", "ref:Subscriber@src/Subscriber"),
        ("Box", "ref:Subscriber@src/Subscriber"),
    }
    uses = build_state(FileStateBuilder(), "src/operators/uses.ts", USES_TS)
    calls = {(e.src.rsplit("::", 1)[-1], e.dst): str(e.resolution) for e in uses.edges
             if e.type.value == "CALLS"}  # fmt: skip
    assert calls[("map", "ref:operate(*).subscribe@src/util/lift")] == "inferred"
    assert calls[("map", "ref:operate(*).next@src/util/lift")] == "inferred"
    assert calls[("boxed", "ref:Box(*).complete@src/util/lift")] == "inferred"
    # A declared parameter keeps its declaration; an array method's callback its element.
    assert ("declared", "ref:operate(*).own@src/util/lift") not in calls
    assert calls[("declared", "r::src/operators/uses.ts::Item.price")] == "exact"
    # The callback passed to ``source.subscribe`` is not joined twice.
    assert not any("(*).subscribe(*)" in dst for _, dst in calls)


def test_typescript_nullable_unions_type_their_one_real_type() -> None:
    source = b"""class Subscriber { next(v: number): void {} }
export function later(first: Subscriber | undefined) {
  let inner: Subscriber | null = null;
  inner.next(1);
  first.next(2);
  let either: Subscriber | Other = make();
  either.next(3);
}
"""
    state = build_state(FileStateBuilder(), "src/later.ts", source)
    calls = {e.dst for e in state.edges if e.type.value == "CALLS"}
    assert "r::src/later.ts::Subscriber.next" in calls
    assert "ref:either.next" in calls  # two real types: no guess


def test_typescript_return_annotations_give_returns_edges_and_type_local_calls() -> None:
    source = b"""import { Subscription } from './Subscription';
export class Observable<T> {
  subscribe(s: unknown): Subscription { return new Subscription(); }
  pipe(): Observable<T> { return this; }
}
export interface SchedulerLike { schedule(work: () => void): Subscription; }
export function innerFrom<O>(input: O): Observable<O>;
export function innerFrom<T>(input: T): Observable<T> { return new Observable<T>(); }
export function untyped(input: unknown) { return input; }
export function use(x: unknown, s: unknown, scheduler: SchedulerLike) {
  innerFrom(x).subscribe(s);
  innerFrom(x).pipe().subscribe(s);
  untyped(x).subscribe(s);
  scheduler.schedule(() => {}).add(s);
}
"""
    state = build_state(FileStateBuilder(), "src/inner.ts", source)
    returns = {(e.src.rsplit("::", 1)[-1], e.dst) for e in state.edges
               if e.type.value == "RETURNS"}  # fmt: skip
    assert returns == {  # generics dropped; an overload and its body name the same class
        ("innerFrom", "r::src/inner.ts::Observable"),
        ("Observable.pipe", "r::src/inner.ts::Observable"),
        ("Observable.subscribe", "ref:Subscription@src/Subscription"),
        ("SchedulerLike.schedule", "ref:Subscription@src/Subscription"),
    }
    calls = {e.dst for e in state.edges if e.type.value == "CALLS"}
    # In the file, what a function returns types the call on it (joined later across files).
    assert "r::src/inner.ts::Observable.subscribe" in calls
    assert "ref:subscribe" in calls  # untyped(x).subscribe: no type, no guess


def test_typescript_locals_bound_to_a_call_take_what_the_callee_returns() -> None:
    source = b"""import { make } from './make';
export class Sub { unsubscribe(): void {} }
export function local(): Sub { return new Sub(); }
export function use() {
  const a = local();
  a.unsubscribe();
  const b = make(1);
  b.unsubscribe();
  const n = [1].map((x) => x);
  n.unsubscribe();
}
"""
    state = build_state(FileStateBuilder(), "src/u.ts", source)
    calls = {e.dst: str(e.resolution) for e in state.edges if e.type.value == "CALLS"}
    assert calls["r::src/u.ts::Sub.unsubscribe"] == "exact"  # local()'s declared return
    assert calls["ref:make().unsubscribe@src/make"] == "exact"  # joined by make's RETURNS
    assert "ref:n.unsubscribe" in calls  # an array method's result: no type, no guess


def test_a_local_taken_from_an_attribute_has_the_attributes_type() -> None:
    typescript = b"""export class Clock { now(): number { return 1; } }
export class Other { now(): number { return 2; } }
export class Replay {
  private _clock: Clock = new Clock();
  private other: Other;
  private untyped = make();
  next() {
    const { _clock, other } = this;
    _clock.now();
    other.now();
  }
  later() {
    const c = this._clock;
    c.now();
    const u = this.untyped;
    u.now();
  }
}
"""
    state = build_state(FileStateBuilder(), "src/replay.ts", typescript)
    calls = {(e.src.rsplit("::", 1)[-1], e.dst) for e in state.edges if e.type.value == "CALLS"}
    assert ("Replay.next", "r::src/replay.ts::Clock.now") in calls  # destructured from this
    assert ("Replay.next", "r::src/replay.ts::Other.now") in calls
    assert ("Replay.later", "r::src/replay.ts::Clock.now") in calls  # const c = this._clock
    assert ("Replay.later", "ref:u.now") in calls  # an untyped field gives no guess
    python = b"""class Clock:
    def now(self):
        return 1


class Replay:
    def __init__(self, clock: Clock):
        self._clock = clock

    def next(self):
        c = self._clock
        return c.now()
"""
    state = build_state(FileStateBuilder(), "replay.py", python)
    calls = {(e.src.rsplit("::", 1)[-1], e.dst) for e in state.edges if e.type.value == "CALLS"}
    assert ("Replay.next", "r::replay.py::Clock.now") in calls
