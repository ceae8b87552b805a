"""Calls through values (issue #34): dict, list and tuple literals called through a subscript
or a loop, and functions passed as arguments and called through the parameter. Each case
names what the call reaches; each edge is ``inferred``; nothing is invented where the value
is not a callable this file can name."""

from __future__ import annotations

from patchstream.parsing.filestate import FileStateBuilder
from tests.conftest import build_state

SOURCE = b"""
from .views import detail_view, list_view


def on_get(request):
    return request


def on_post(request):
    return request


class Job:
    def run(self):
        return 1


HANDLERS = {"get": on_get, "post": on_post, "detail": detail_view}
STEPS = [on_get, Job]


def dispatch(method, request):
    return HANDLERS[method](request)


def get_only(request):
    return HANDLERS["get"](request)


def first_step():
    return STEPS[1]()


def hooks():
    for hook in (on_get, list_view):
        hook(None)


def named_loop():
    for step in STEPS:
        step()


def local_table(request):
    table = {"x": on_post}
    return table["x"](request)


def apply(callback, value, *, then=None):
    result = callback(value)
    if then is not None:
        then(result)
    return result


def positional():
    return apply(on_get, 1)


def by_keyword():
    return apply(callback=on_post, value=2, then=detail_view)


class Runner:
    def submit(self, fn):
        return fn()

    def go(self):
        return self.submit(Job)


def closure(cb):
    def inner():
        return cb()
    return inner


def uses_closure():
    return closure(on_get)


def not_callables():
    apply(42, 1)
    apply("text", 1)
    return {"k": 1}["k"]
"""

PREFIX = "r::pkg/app.py::"


def _edges() -> dict[str, dict[str, str | None]]:
    """Caller -> {callee: resolution} for CALLS and INSTANTIATES edges."""
    state = build_state(FileStateBuilder(), "pkg/app.py", SOURCE)
    found: dict[str, dict[str, str | None]] = {}
    for e in state.edges:
        if e.type.value in ("CALLS", "INSTANTIATES"):
            resolution = e.resolution.value if e.resolution else None
            found.setdefault(e.src.removeprefix(PREFIX), {})[e.dst.removeprefix(PREFIX)] = (
                resolution
            )
    return found


def _reached(caller: str) -> set[str]:
    return {dst for dst in _edges().get(caller, {}) if not dst.startswith("ref:") or "@" in dst}


def test_a_dict_called_through_a_constant_key_reaches_that_value_only() -> None:
    assert _reached("get_only") == {"on_get"}
    assert _edges()["get_only"]["on_get"] == "inferred"


def test_a_dict_called_through_a_variable_key_reaches_every_value() -> None:
    assert _reached("dispatch") == {"on_get", "on_post", "ref:detail_view@pkg.views"}


def test_lists_tuples_and_loops_over_them() -> None:
    assert _reached("first_step") == {"Job"}
    assert _reached("hooks") == {"on_get", "ref:list_view@pkg.views"}
    assert _reached("named_loop") == {"on_get", "Job"}
    assert _reached("local_table") == {"on_post"}


def test_a_function_passed_as_an_argument_is_called_through_the_parameter() -> None:
    # apply(on_get, 1), apply(callback=on_post, ..., then=detail_view)
    assert {"on_get", "on_post", "ref:detail_view@pkg.views"} <= _reached("apply")
    assert _edges()["apply"]["on_get"] == "inferred"
    assert _reached("Runner.submit") == {"Job"}  # self.submit(Job): self is not a position
    assert _reached("closure.inner") == {"on_get"}  # through the enclosing function's parameter


def test_values_that_are_not_callables_reach_nothing() -> None:
    # apply(42, 1) and apply("text", 1) add nothing to apply's callees beyond the three above
    assert _reached("apply") == {"on_get", "on_post", "ref:detail_view@pkg.views"}
    assert _reached("not_callables") == {"apply"}


HELD = b"""
from .views import detail_view


def on_start():
    return 1


def on_stop():
    return 2


def pick():
    return on_stop


def pick_imported():
    return detail_view


def number():
    return 42


def hooks():
    yield on_start
    yield detail_view


def call_of_call():
    return pick()()


def bound_to_a_call():
    handler = pick_imported()
    return handler()


def not_a_callable():
    value = number()
    return value()


def unpacked():
    first, second = on_start, on_stop
    first()
    second()


def unpacked_literals():
    a, b = 1, on_start
    a()


def through_a_generator():
    for hook in hooks():
        hook()


class Service:
    def __init__(self, callback):
        self.on_done = on_stop
        self.given = callback

    def finish(self):
        return self.on_done()

    def relay(self):
        return self.given()


class Other:
    def finish(self):
        return self.on_done()
"""


def _inferred(path: str, source: bytes, caller: str) -> set[str]:
    """What ``caller`` reaches by inferred CALLS/INSTANTIATES edges in ``source``."""
    state = build_state(FileStateBuilder(), path, source)
    prefix = f"r::{path}::"
    return {e.dst.removeprefix(prefix) for e in state.edges
            if e.type.value in ("CALLS", "INSTANTIATES") and e.src == prefix + caller
            and e.resolution is not None and e.resolution.value == "inferred"}  # fmt: skip


def _held(caller: str) -> set[str]:
    return _inferred("pkg/held.py", HELD, caller)


def test_what_a_function_returns_is_reached_by_calling_its_result() -> None:
    assert _held("call_of_call") == {"on_stop"}
    assert _held("bound_to_a_call") == {"ref:detail_view@pkg.views"}
    assert _held("not_a_callable") == set()  # it returns 42: nothing is invented


def test_unpacking_binds_each_name_to_its_own_value() -> None:
    assert _held("unpacked") == {"on_start", "on_stop"}
    assert _held("unpacked_literals") == set()  # a() holds 1


def test_a_loop_over_a_generator_reaches_what_it_yields() -> None:
    assert _held("through_a_generator") == {"on_start", "ref:detail_view@pkg.views"}


def test_an_attribute_of_self_reaches_what_the_class_assigns_it() -> None:
    assert _held("Service.finish") == {"on_stop"}
    assert _held("Service.relay") == set()  # a parameter's value: its callers decide
    assert _held("Other.finish") == set()  # another class's attribute of the same name


BOUND = b"""
from .views import detail_view


def first():
    return 1


def second():
    return 2


def third():
    return 3


def chained():
    a = b = first
    b()
    a = b = second
    a()


def nested_tuples():
    a, (b, c) = first, (second, detail_view)
    c()


def starred():
    head, *rest, last = first, second, third, detail_view
    rest[1]()
    last()


def register(name, view):
    ROUTES[name] = view


ROUTES = {}
ROUTES["home"] = first
ROUTES["about"] = second
ROUTES["count"] = 42


def home():
    return ROUTES["home"]()


def any_route(name):
    return ROUTES[name]()


def local_registry():
    table = {}
    table[0] = third
    return table[0]()


def trace(function):
    def wrapper(*args):
        return function(*args)

    return wrapper


def checked(function):
    function()
    return function


@trace
def traced():
    return 1


@checked
@detail_view
def double():
    return 2


class Model:
    @property
    def name(self):
        return "m"

    @staticmethod
    def build():
        return Model()
"""


def _bound(caller: str) -> set[str]:
    return _inferred("pkg/bound.py", BOUND, caller)


def test_chains_nested_tuples_and_starred_names_bind_each_name_to_its_values() -> None:
    assert _bound("chained") == {"first", "second"}  # flow-insensitive: both bindings
    assert _bound("nested_tuples") == {"ref:detail_view@pkg.views"}
    assert _bound("starred") == {"third", "ref:detail_view@pkg.views"}  # rest[1], last


def test_values_stored_into_a_table_later_are_reached_through_it() -> None:
    assert _bound("home") == {"first"}
    assert _bound("any_route") == {"first", "second"}  # 42 is not a callable
    assert _bound("local_registry") == {"third"}


def test_a_decorator_is_called_where_the_definition_runs_with_the_definition() -> None:
    module = _module_calls()
    assert {"trace", "checked", "ref:detail_view@pkg.views"} <= module
    assert "property" not in str(module) and "staticmethod" not in str(module)  # builtins
    assert _bound("checked") == {"double"}  # function() is the decorated definition
    assert _bound("trace.wrapper") == {"traced"}  # through the closure's enclosing parameter


def _module_calls() -> set[str]:
    return _module_calls_of("pkg/bound.py", BOUND)


DECORATED = b"""
from functools import wraps


def outer(function):
    def outer_wrapper():
        return function()

    return outer_wrapper


def inner(function):
    @wraps(function)
    def inner_wrapper():
        return function()

    return inner_wrapper


def registering(function):
    return function


def make(tag):
    def decorate(function):
        return function

    return decorate


@outer
@inner
def job():
    return 1


@registering
def plain():
    return 2


@make("x")
def tagged():
    return 3


def caller():
    job()
    plain()
    tagged()
"""


def test_a_call_of_a_decorated_name_reaches_what_the_decorators_returned() -> None:
    """Issue #34: ``@outer @inner def job`` binds ``job`` to ``outer(inner(job))``: a call of
    ``job`` runs ``outer_wrapper``, which calls ``inner_wrapper``, which calls ``job``. A
    decorator that returns its argument changes nothing; ``@make("x")`` applies what
    ``make`` returns."""
    calls = _calls(DECORATED)
    assert calls[("caller", "job")] == "exact"  # the definition a reader names stays
    assert calls[("caller", "outer.outer_wrapper")] == "inferred"
    assert ("caller", "inner.inner_wrapper") not in calls  # outer's wrapper calls it
    assert calls[("outer.outer_wrapper", "inner.inner_wrapper")] == "inferred"
    assert calls[("inner.inner_wrapper", "job")] == "inferred"
    assert ("outer.outer_wrapper", "job") not in calls  # outer is passed inner's wrapper
    assert {dst for src, dst in calls if src == "caller"} == {
        "job", "outer.outer_wrapper", "plain", "tagged",
    }  # fmt: skip
    module = _module_calls_of("pkg/lam.py", DECORATED)
    assert {"outer", "inner", "registering", "make", "make.decorate"} <= module


def _module_calls_of(path: str, content: bytes) -> set[str]:
    state = build_state(FileStateBuilder(), path, content)
    prefix = f"r::{path}::"
    module = next(s.id for s in state.symbols if s.kind.value == "module")
    return {e.dst.removeprefix(prefix) for e in state.edges
            if e.type.value in ("CALLS", "INSTANTIATES") and e.src == module}  # fmt: skip


ITERATED = b"""
def on_done():
    return 0


def fallback():
    return 1


def pick():
    return on_done


def run(callback=fallback):
    return callback()


class Countdown:
    def __init__(self, start):
        self.left = start

    def __iter__(self):
        return self

    def __next__(self):
        self.left -= 1
        return self.left


class Lines:
    def __iter__(self):
        yield "a"


def loops(n):
    for _ in Countdown(n):
        pass
    lines = Lines()
    for _ in lines:
        pass
    return [x for x in range(n)]


def passes():
    run()
    run(pick())
"""


def test_a_loop_calls_the_iteration_protocol_of_a_class_the_file_types() -> None:
    """``for x in Countdown(n)`` calls ``__iter__`` and (it returns ``self``) ``__next__``;
    a generator ``__iter__`` has no ``__next__`` of the class; ``range`` is not the file's."""
    calls = _calls(ITERATED)
    reached = {dst for src, dst in calls if src == "loops" and not dst.startswith("ref:")}
    assert reached == {"Countdown.__iter__", "Countdown.__next__", "Lines.__iter__"}
    assert calls[("loops", "Countdown.__next__")] == "inferred"


def test_defaults_and_returned_functions_are_what_a_parameter_holds() -> None:
    """``def run(callback=fallback)`` runs ``fallback`` when nothing is passed, and
    ``run(pick())`` passes what ``pick`` returns."""
    calls = _calls(ITERATED)
    reached = {dst for src, dst in calls if src == "run" and not dst.startswith("ref:")}
    assert reached == {"fallback", "on_done"}
    assert calls[("run", "on_done")] == "inferred"


LAMBDAS = b"""
def helper(x):
    return x


def other():
    return 0


by_rank = lambda item: helper(item)


def apply(fn):
    return fn(1)


def shadowed(helper):
    return helper()


class Table:
    key = lambda self: other()


def main():
    by_rank(2)
    apply(by_rank)
    shadowed(other)
"""


def _calls(content: bytes) -> dict[tuple[str, str], str]:
    state = build_state(FileStateBuilder(), "pkg/lam.py", content)
    prefix = "r::pkg/lam.py::"
    return {(e.src.removeprefix(prefix), e.dst.removeprefix(prefix)): e.resolution.value
            for e in state.edges if e.type.value == "CALLS"}  # fmt: skip


def test_a_lambda_bound_to_a_name_is_that_names_function() -> None:
    state = build_state(FileStateBuilder(), "pkg/lam.py", LAMBDAS)
    functions = {s.qualified_name for s in state.symbols if s.kind.value == "function"}
    assert {"by_rank", "Table.key"} <= functions
    edges = _calls(LAMBDAS)
    assert edges[("by_rank", "helper")] == "exact"  # its calls are its own
    assert edges[("Table.key", "other")] == "exact"
    assert edges[("main", "by_rank")] == "exact"  # a call of the name reaches it
    assert edges[("apply", "by_rank")] == "inferred"  # passed, called through the parameter
    assert ("main", "helper") not in edges and ("<module>", "helper") not in edges


def test_a_parameter_named_like_a_function_is_what_callers_pass() -> None:
    edges = _calls(LAMBDAS)
    assert edges[("shadowed", "other")] == "inferred"
    assert ("shadowed", "helper") not in edges  # the module's helper is not what it calls
