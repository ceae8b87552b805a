"""More places a callable travels through in Python, within one file (issue #34): what a
function returns or yields, names bound by unpacking or to a call's result, and attributes of
``self``. A helper of :mod:`value_flow`; every edge it adds is ``inferred``.

- ``get()()`` and ``fn = get(); fn()`` reach what ``get`` returns (``return handler``);
- ``for hook in hooks(): hook()`` reaches what ``hooks`` yields (``yield on_start``);
- ``a, b = first, second; a()`` reaches ``first``, through nested tuples (``a, (b, c) = ...``),
  chains (``a = b = first``) and a starred name (``a, *rest = f, g, h``: ``rest[0]()``
  reaches ``g``, by :mod:`value_flow`'s tables);
- ``self.cb = on_done`` in any method of a class, then ``self.cb()`` in any method of it,
  reaches ``on_done``.

Flow-insensitive like the rest: a name or attribute bound twice reaches both values. Values
are resolved where they are written (a function's ``return other`` in that function's scope).
"""

from __future__ import annotations

import abc
from collections import defaultdict

import tree_sitter as ts

from patchstream.parsing.node_text import name_parts
from patchstream.parsing.receiver_types import _Def, _scope_key
from patchstream.parsing.resolution import Resolution
from patchstream.parsing.source import Source
from patchstream.schemas.graph import Reference

Match = dict[str, list[ts.Node]]
Target = _Def | Reference
Tables = tuple[
    dict[int, list[ts.Node]],
    dict[tuple[str, str], list[ts.Node]],
    dict[tuple[str, str], list[ts.Node]],
    dict[tuple[str, str], list[ts.Node]],
]
_FUNCTION_KINDS = ("function", "method")
_SELF = frozenset({"self", "cls"})


class HeldValues(Resolution):
    """Tables of held values, filled from the extraction query's ``flow.*`` matches.

    Above :class:`Resolution` in one line of bases, not beside it: the parsing package is
    compiled with mypyc, whose native classes have single inheritance.
    """

    src: Source
    _returned: dict[int, list[ts.Node]]  # function node id -> the values it returns

    @abc.abstractmethod
    def _enclosing_def(self, node: ts.Node) -> _Def | None: ...

    @abc.abstractmethod
    def _value(
        self, node: ts.Node, around: _Def | None, at: ts.Node, receiver_ok: bool = False
    ) -> Target | None: ...

    @abc.abstractmethod
    def _edge(self, around: _Def | None, target: Target) -> None: ...

    @abc.abstractmethod
    def _check(self, force: bool = False) -> None: ...

    def _collect_held(self, matches: list[Match]) -> None:
        returned: dict[int, list[ts.Node]] = defaultdict(list)  # function node id -> values
        yielded: dict[int, list[ts.Node]] = defaultdict(list)
        bound: dict[tuple[str, str], list[ts.Node]] = defaultdict(list)  # (scope, name)
        made: dict[tuple[str, str], list[ts.Node]] = defaultdict(list)  # name = call(...)
        attributes: dict[tuple[str, str], list[ts.Node]] = defaultdict(list)  # (class, attr)
        self._returned = returned  # decorators read what they return (value_flow)
        read = self.src.text
        for match in matches:
            if "flow.return" in match or "flow.yield" in match:
                value = (match.get("flow.returned") or match["flow.yielded"])[0]
                function = self._enclosing_def(value)
                if function is not None and function.kind in _FUNCTION_KINDS:
                    held = returned if "flow.return" in match else yielded
                    held[function.node.id].append(value)
            elif "flow.unpack" in match or "flow.chain" in match:
                assignment = (match.get("flow.unpack") or match["flow.chain"])[0]
                scope = _scope_key(self._enclosing_def(assignment))
                for target, source in assigned_values(assignment)[0]:
                    bound[(scope, read(target))].append(source)
            elif "flow.made_bind" in match:
                scope = _scope_key(self._enclosing_def(match["flow.made_bind"][0]))
                made[(scope, read(match["flow.name"][0]))].append(match["flow.made"][0])
            elif "flow.attr_bind" in match and read(match["flow.owner"][0]) in _SELF:
                owner = _class_of(self._enclosing_def(match["flow.attr_bind"][0]))
                if owner is not None:
                    key = (_scope_key(owner), read(match["flow.attr"][0]))
                    attributes[key].append(match["flow.value"][0])
        if not (returned or yielded or bound or made or attributes):
            return
        tables = (returned, bound, made, attributes)
        for match in matches:
            self._check()
            if "flow.call_of_call" in match:
                call = match["flow.call_of_call"][0]
                inner = match["flow.inner"][0]
                self._reach_held(self._enclosing_def(call), self._returns_of(inner, returned))
            elif "flow.loop_call" in match:
                self._through_generator(match, yielded)
            elif "reference.call" in match:
                self._through_names(match, tables)

    def _reach_held(self, around: _Def | None, values: list[ts.Node]) -> None:
        """Edges from ``around`` to each value, resolved where the value is written."""
        for value in values:
            target = self._value(value, self._enclosing_def(value), value)
            if target is not None:
                self._edge(around, target)

    def _returns_of(self, call: ts.Node, returned: dict[int, list[ts.Node]]) -> list[ts.Node]:
        """What the function ``call`` calls returns, when it is a function of this file."""
        callee = call.child_by_field_name("function")
        if callee is None:
            return []
        target = self._value(callee, self._enclosing_def(call), call, receiver_ok=True)
        if not isinstance(target, _Def) or target.kind not in _FUNCTION_KINDS:
            return []
        return returned.get(target.node.id, [])

    def _through_generator(self, match: Match, yielded: dict[int, list[ts.Node]]) -> None:
        values = self._returns_of(match["flow.iter_call"][0], yielded)
        if not values:
            return
        name = self.src.text(match["flow.name"][0])
        for call in calls_of(match["flow.body"][0], name):
            self._reach_held(self._enclosing_def(call), values)

    def _through_names(self, match: Match, tables: Tables) -> None:
        returned, bound, made, attributes = tables
        callee, call = match["name"][0], match["reference.call"][0]
        around = self._enclosing_def(call)
        parts = name_parts(self.src.text(callee))
        if callee.type == "identifier":
            for scope in _scopes_out(around):
                key = (scope, parts[0])
                if key in bound or key in made:
                    self._reach_held(around, bound.get(key, []))
                    for source in made.get(key, []):
                        self._reach_held(around, self._returns_of(source, returned))
                    return
        elif len(parts) == 2 and parts[0] in _SELF:
            owner = _class_of(around)
            if owner is not None:
                self._reach_held(around, attributes.get((_scope_key(owner), parts[1]), []))


def assigned_values(
    assignment: ts.Node,
) -> tuple[list[tuple[ts.Node, ts.Node]], list[tuple[ts.Node, list[ts.Node]]]]:
    """What an assignment binds: (name, value) pairs through nested tuples and every target
    of a chain, and (starred name, its values) for ``a, *rest = f, g, h``. Only the
    outermost assignment of a chain answers (the inner ones are part of it)."""
    names: list[tuple[ts.Node, ts.Node]] = []
    starred: list[tuple[ts.Node, list[ts.Node]]] = []
    parent = assignment.parent
    if parent is not None and parent.type == "assignment":
        return names, starred
    targets: list[ts.Node] = []
    value: ts.Node | None = assignment
    while value is not None and value.type == "assignment":
        left = value.child_by_field_name("left")
        if left is not None:
            targets.append(left)
        value = value.child_by_field_name("right")
    if value is None:
        return names, starred

    def pair(target: ts.Node, value: ts.Node) -> None:
        while value.type == "parenthesized_expression" and len(_items(value)) == 1:
            value = _items(value)[0]
        if target.type == "identifier":
            names.append((target, value))
            return
        if target.type not in _PATTERNS or value.type not in _SEQUENCES:
            return
        items, values = _items(target), _items(value)
        stars = [i for i, item in enumerate(items) if item.type == "list_splat_pattern"]
        if not stars:
            if len(items) == len(values):
                for item, held in zip(items, values, strict=True):
                    pair(item, held)
            return
        star, after = stars[0], len(items) - stars[0] - 1
        if len(stars) > 1 or len(values) < len(items) - 1:
            return
        for item, held in zip(items[:star], values[:star], strict=True):
            pair(item, held)
        for item, held in zip(items[star + 1 :], values[len(values) - after :], strict=True):
            pair(item, held)
        name = _items(items[star])
        if name and name[0].type == "identifier":
            starred.append((name[0], values[star : len(values) - after]))

    for target in targets:
        pair(target, value)
    return names, starred


_PATTERNS = frozenset({"pattern_list", "tuple_pattern", "list_pattern"})
_SEQUENCES = frozenset({"expression_list", "tuple", "list"})


def _items(node: ts.Node) -> list[ts.Node]:
    return [child for child in node.named_children if child.type != "comment"]


def _class_of(around: _Def | None) -> _Def | None:
    """The class whose method (or a function nested in it) ``around`` is."""
    scope = around
    while scope is not None and scope.kind != "class":
        scope = scope.parent
    return scope


def _scopes_out(around: _Def | None) -> list[str]:
    keys, scope = [], around
    while scope is not None:
        keys.append(_scope_key(scope))
        scope = scope.parent
    return [*keys, ""]


def calls_of(body: ts.Node, name: str) -> list[ts.Node]:
    """Calls of the plain name ``name`` inside ``body`` (not inside nested definitions)."""
    found: list[ts.Node] = []
    wanted = name.encode()
    stack = [body]
    while stack:
        node = stack.pop()
        if node.type in ("function_definition", "class_definition", "lambda"):
            continue
        if node.type == "call":
            function = node.child_by_field_name("function")
            if function is not None and function.type == "identifier" and function.text == wanted:
                found.append(node)
        stack.extend(node.named_children)
    return found
