"""Calls through values in Python, within one file: what static names alone cannot see.

A mixin of the extractor, run after the calls written with a name are resolved. It adds
CALLS (or INSTANTIATES) edges, every one ``inferred``, for:

- a dict, list or tuple literal of functions or classes, called through a subscript:
  ``HANDLERS["get"](request)`` reaches what the literal holds at that key (a key that is not
  a constant reaches every value), and what is stored into it later (``HANDLERS["put"] =
  on_put``, also into a name bound to anything else: ``d = {}``);
- a loop over such a literal (or a name bound to one): ``for hook in (a, b): hook()``;
- a function (or class) passed as an argument, positionally or by keyword, as a parameter's
  default, or returned by a call that is the argument, and called through the parameter:
  ``run(on_done)`` with ``def run(cb): cb()`` makes ``run -> on_done``;
- decorators: the call of ``dec`` where the definition runs, the definition passed to its
  first parameter, and a call of the decorated name reaching what ``dec`` returned;
- the iteration protocol of the file's classes: ``for x in Countdown(3)`` calls
  ``Countdown.__iter__`` (and ``__next__`` when ``__iter__`` returns ``self``).

Flow-insensitive on purpose (a name bound twice reaches both values), so precision rests on
what a value is: only names that resolve to a definition of this file or to an import count,
never literals or calls. Returned and yielded values, unpacking and attributes of ``self``
are :mod:`value_holders`' part. What stays invisible: values added by methods (``d.update``,
``l.append``), ``getattr``, and callables crossing files (each file is extracted alone).
"""

from __future__ import annotations

import abc
from collections import defaultdict
from collections.abc import Callable

import tree_sitter as ts

from patchstream.parsing.node_text import name_parts, python_parameters
from patchstream.parsing.receiver_types import _Def, _scope_key
from patchstream.parsing.value_holders import HeldValues, assigned_values, calls_of
from patchstream.schemas.graph import CallResolution, Edge, EdgeType, Reference

_VALUE_TYPES = frozenset({"identifier", "attribute"})
_ARGUMENT_TYPES = _VALUE_TYPES | {"keyword_argument", "call"}  # a call: what it returns
_CALLABLE_KINDS = frozenset({"function", "method", "class"})
_FUNCTION_KINDS = frozenset({"function", "method"})
_SELF_PARAMETERS = frozenset({"self", "cls"})
Target = _Def | Reference
Reader = Callable[[ts.Node], str]  # Source.text
Tables = dict[tuple[str, str], dict[str, list[ts.Node]]]  # (scope, name) -> key -> values


class ValueFlow(HeldValues):
    @abc.abstractmethod
    def _check(self, force: bool = False) -> None: ...

    @abc.abstractmethod
    def _call_type(self, edge_type: EdgeType, target: Target) -> EdgeType: ...

    @abc.abstractmethod
    def _add(self, edge_type: EdgeType, src: str, target: Target,
             resolution: CallResolution | None = None) -> None: ...  # fmt: skip

    module_id: str
    defs: list[_Def]
    _parameter_names: dict[int, list[str]]  # a function's node id -> its parameter names
    def_by_node: dict[tuple[int, int, str], _Def]
    _edge_keys: dict[tuple[str, str, str], Edge]  # (src, edge type, dst) -> the edge

    def _collect_value_flow(self, matches: list[dict[str, list[ts.Node]]]) -> None:
        """``matches``: the extraction query's (``queries/python.scm``: its ``flow.*``
        patterns and the calls), so the tree is walked once."""
        if self.language != "python":
            return
        tables: Tables = defaultdict(dict)
        for match in matches:
            if "flow.bind" in match:
                scope = _scope_key(self._enclosing_def(match["flow.bind"][0]))
                entries = _entries(match["flow.table"][0], self.src.text)
                held = tables[(scope, self.src.text(match["flow.name"][0]))]
                for key, values in entries.items():
                    held.setdefault(key, []).extend(values)
            elif "flow.unpack" in match or "flow.chain" in match:
                assignment = (match.get("flow.unpack") or match["flow.chain"])[0]
                scope = _scope_key(self._enclosing_def(assignment))
                for starred, items in assigned_values(assignment)[1]:  # a, *rest = f, g, h
                    held = tables[(scope, self.src.text(starred))]
                    for index, item in enumerate(items):
                        held.setdefault(str(index), []).append(item)
        for match in matches:  # stores after the literals: they add to the table they name
            if "flow.store" in match:
                self._store(match, tables)
        self._collect_held(matches)  # first: decorators and loops read what functions return
        for match in matches:
            self._check()
            if "flow.subscript_call" in match:
                self._through_subscript(match, tables)
            elif "flow.loop" in match:
                self._through_loop(match, tables)
            elif "flow.iteration" in match:
                self._through_iteration(match["flow.iterable"][0])
        # Calls of a parameter first: only the functions they are in need their call sites'
        # arguments resolved (resolving every call's arguments would double a file's cost).
        through: list[tuple[ts.Node, _Def | None, _Def, str]] = []
        calls = [m for m in matches if "reference.call" in m]
        self._parameter_names = {
            d.node.id: python_parameters(d.node, self.src.text)
            for d in self.defs
            if d.kind in ("function", "method")
        }
        decorated = self._decorations([m for m in matches if "flow.decoration" in m])
        any_parameter = {p for names in self._parameter_names.values() for p in names}
        for match in calls:
            callee = match["name"][0]
            if callee.type == "identifier" and self.src.text(callee) in any_parameter:
                call, name = match["reference.call"][0], self.src.text(callee)
                around = self._enclosing_def(call)
                holder = self._parameter_holder(around, name)
                if holder is not None:
                    through.append((call, around, holder, name))
        if not through:
            return
        passed = self._passed_values(calls, {holder.name for _, _, holder, _ in through})
        self._defaults([holder for _, _, holder, _ in through], passed)
        for parameter, wrapped in decorated.items():
            passed[parameter].extend(wrapped)
        for _, around, holder, name in through:
            for target in passed.get((holder.symbol_id, name), []):
                self._edge(around, target)

    # -- decorators ---------------------------------------------------------------------

    def _decorations(
        self, decorations: list[dict[str, list[ts.Node]]]
    ) -> dict[tuple[str, str], list[Target]]:
        """``@dec`` over a definition calls ``dec`` where the definition runs, with the
        defined function or class as its first argument, and binds the name to what ``dec``
        returns. Decorators apply innermost first, so ``@a @b def f`` passes ``a`` what ``b``
        returned. Gives the edges to each decorator (``@make()``: to what ``make`` returns),
        (decorator's symbol id, first parameter) -> what it is passed, for calls through the
        parameter, and makes a call of the name reach the wrapper too (``calls_of_wrappers``).
        """
        passed: dict[tuple[str, str], list[Target]] = defaultdict(list)
        groups: dict[int, tuple[ts.Node, ts.Node, list[ts.Node]]] = {}
        for match in decorations:
            node = match["flow.decoration"][0]
            group = groups.setdefault(node.id, (node, match["flow.decorated"][0], []))
            group[2].append(match["flow.decorator"][0])
        wrappers: dict[str, list[Target]] = {}
        for node, definition, expressions in groups.values():
            self._check()
            around = self._enclosing_def(node)
            wrapped = self.def_by_node.get(
                (definition.start_byte, definition.end_byte, definition.type)
            )
            held: list[Target] = [wrapped] if wrapped is not None else []
            for expression in sorted(expressions, key=lambda n: n.start_byte, reverse=True):
                applied = self._decorators_of(expression, around, node)
                for decorator in applied:
                    self._edge(around, decorator)
                held = self._applied(applied, held, passed)
            others = [target for target in held if target is not wrapped]
            if wrapped is not None and others:
                wrappers[wrapped.symbol_id] = others
        if wrappers:
            self._calls_of_wrappers(wrappers)
        return passed

    def _decorators_of(self, expression: ts.Node, around: _Def | None, at: ts.Node) -> list[Target]:
        """``@dec``: ``dec``; ``@make(...)``: what ``make`` (a function of the file) returns."""
        if expression.type != "call":
            found = self._value(expression, around, at)
            return [found] if found is not None else []
        callee = expression.child_by_field_name("function")
        factory = self._value(callee, around, at) if callee is not None else None
        if not isinstance(factory, _Def) or factory.kind not in _FUNCTION_KINDS:
            return []
        returned = [self._value(v, self._enclosing_def(v), v)
                    for v in self._returned.get(factory.node.id, [])]  # fmt: skip
        return [target for target in returned if isinstance(target, _Def)]

    def _applied(
        self, applied: list[Target], held: list[Target], passed: dict[tuple[str, str], list[Target]]
    ) -> list[Target]:
        """What the name holds after ``applied`` decorators (alternatives) take ``held``: a
        decorator the file cannot see into (imported, a class, no return) keeps it."""
        if not applied:
            return held
        result: list[Target] = []
        for decorator in applied:
            if not isinstance(decorator, _Def) or decorator.kind not in _FUNCTION_KINDS:
                result.extend(held)
                continue
            parameters = self._parameter_names.get(decorator.node.id, [])
            if parameters:
                passed[(decorator.symbol_id, parameters[0])].extend(held)
            returns = self._returned.get(decorator.node.id, [])
            if not returns:
                result.extend(held)
            for value in returns:
                if parameters and self.src.text(value) == parameters[0]:
                    result.extend(held)  # ``return f``: the function itself
                    continue
                target = self._value(value, self._enclosing_def(value), value)
                if target is not None:
                    result.append(target)
        unique: dict[int, Target] = {id(target): target for target in result}
        return list(unique.values())

    def _calls_of_wrappers(self, wrappers: dict[str, list[Target]]) -> None:
        """A call of a decorated name runs what the decorator returned in its place: the
        callers of the definition reach that wrapper too (inferred; the edge to the
        definition stays, as a reader of the code names it)."""
        calls = EdgeType.CALLS.value
        callers = [(src, dst) for src, kind, dst in list(self._edge_keys)
                   if kind == calls and dst in wrappers]  # fmt: skip
        for src, dst in callers:
            for target in wrappers[dst]:
                self._add(self._call_type(EdgeType.CALLS, target), src, target,
                          CallResolution.INFERRED)  # fmt: skip

    # -- containers ---------------------------------------------------------------------

    def _table(
        self, name: str, around: _Def | None, tables: Tables
    ) -> dict[str, list[ts.Node]] | None:
        """The literal ``name`` is bound to in the innermost scope around ``around``."""
        scope = around
        while scope is not None:
            found = tables.get((_scope_key(scope), name))
            if found is not None:
                return found
            scope = scope.parent
        return tables.get(("", name))

    def _store(self, match: dict[str, list[ts.Node]], tables: Tables) -> None:
        """``HANDLERS["get"] = on_get``: into the table of that name the store sees (one
        bound in an enclosing scope, else a new one in the store's own scope)."""
        around = self._enclosing_def(match["flow.store"][0])
        name = self.src.text(match["flow.held"][0])
        table = self._table(name, around, tables)
        if table is None:
            table = tables[(_scope_key(around), name)]
        key = _constant(match["flow.key"][0], self.src.text)
        table.setdefault(key if key is not None else "?", []).append(match["flow.stored"][0])

    def _through_subscript(self, match: dict[str, list[ts.Node]], tables: Tables) -> None:
        call = match["flow.subscript_call"][0]
        around = self._enclosing_def(call)
        table = self._table(self.src.text(match["flow.held"][0]), around, tables)
        if table is None:
            return
        key_node = match["flow.through"][0].child_by_field_name("subscript")
        key = _constant(key_node, self.src.text) if key_node is not None else None
        values = table.get(key, []) if key is not None else [v for vs in table.values() for v in vs]
        self._reach(call, around, values)

    def _through_loop(self, match: dict[str, list[ts.Node]], tables: Tables) -> None:
        iterated = match["flow.iter"][0]
        around = self._enclosing_def(match["flow.loop"][0])
        if iterated.type == "identifier":
            table = self._table(self.src.text(iterated), around, tables)
            values = [v for vs in (table or {}).values() for v in vs]
        else:
            values = [v for vs in _entries(iterated, self.src.text).values() for v in vs]
        if not values:
            return
        name = self.src.text(match["flow.name"][0])
        for call in calls_of(match["flow.body"][0], name):
            self._reach(call, self._enclosing_def(call), values)

    # -- parameters ---------------------------------------------------------------------

    def _through_iteration(self, iterable: ts.Node) -> None:
        """``for x in c`` calls ``c.__iter__()``, and ``__next__`` of its class when
        ``__iter__`` returns ``self``: when the file types ``c`` as a class of its own that
        defines them (``c = Counter()``, ``for x in Counter(3)``)."""
        around = self._enclosing_def(iterable)
        self._guessed, self._inferred, self._at = False, False, iterable.start_byte
        if iterable.type == "call":
            found = self._member_of_built(iterable, "__iter__", around)
        else:
            parts = name_parts(self.src.text(iterable))
            found = None if "?" in parts else self._typed_member([*parts, "__iter__"], around)
        if not isinstance(found, _Def) or found.parent is None or found.name != "__iter__":
            return
        self._edge(around, found)
        if any(self.src.text(value) == "self" for value in self._returned.get(found.node.id, [])):
            following = self._member(found.parent.qualified_name, "__next__")
            if isinstance(following, _Def):
                self._edge(around, following)

    def _passed_values(
        self, calls: list[dict[str, list[ts.Node]]], names: set[str]
    ) -> dict[tuple[str, str], list[Target]]:
        """(function's symbol id, parameter) -> the callables this file passes it, for the
        functions named ``names``."""
        passed: dict[tuple[str, str], list[Target]] = defaultdict(list)
        for match in calls:
            self._check()
            callee_node, call = match["name"][0], match["reference.call"][0]
            arguments = call.child_by_field_name("arguments")
            if arguments is None or name_parts(self.src.text(callee_node))[-1] not in names:
                continue
            if not any(a.type in _ARGUMENT_TYPES for a in arguments.named_children):
                continue
            around = self._enclosing_def(call)
            callee = self._value(callee_node, around, call, receiver_ok=True)
            if not isinstance(callee, _Def) or callee.kind not in ("function", "method"):
                continue
            parameters = self._parameter_names.get(callee.node.id, [])
            through_object = callee_node.type == "attribute" and parameters[:1]
            if through_object and parameters[0] in _SELF_PARAMETERS:
                parameters = parameters[1:]  # obj.method(x): x is the second parameter
            for position, argument in enumerate(arguments.named_children):
                if argument.type == "keyword_argument":
                    name_node = argument.child_by_field_name("name")
                    value_node = argument.child_by_field_name("value")
                    if name_node is None or value_node is None:
                        continue
                    parameter: str | None = self.src.text(name_node)
                elif argument.type in ("list_splat", "dictionary_splat"):
                    break  # positions after *args are unknown
                else:
                    value_node = argument
                    parameter = parameters[position] if position < len(parameters) else None
                if parameter is None:
                    continue
                if value_node.type == "call":  # run(make()): what make returns
                    for returned in self._returns_of(value_node, self._returned):
                        value = self._value(returned, self._enclosing_def(returned), returned)
                        if value is not None:
                            passed[(callee.symbol_id, parameter)].append(value)
                    continue
                value = (
                    self._value(value_node, around, call)
                    if value_node.type in _VALUE_TYPES
                    else None
                )
                if value is not None:
                    passed[(callee.symbol_id, parameter)].append(value)
        return passed

    def _defaults(self, holders: list[_Def], passed: dict[tuple[str, str], list[Target]]) -> None:
        """``def run(cb=on_done): cb()``: a call that passes nothing runs the default."""
        for holder in {id(h): h for h in holders}.values():
            listed = holder.node.child_by_field_name("parameters")
            for parameter in listed.named_children if listed is not None else []:
                if parameter.type not in ("default_parameter", "typed_default_parameter"):
                    continue
                name, value = (parameter.child_by_field_name(f) for f in ("name", "value"))
                if name is None or value is None or value.type not in _VALUE_TYPES:
                    continue
                target = self._value(value, holder.parent, value)
                if target is not None:
                    passed[(holder.symbol_id, self.src.text(name))].append(target)

    def _parameter_holder(self, around: _Def | None, name: str) -> _Def | None:
        """The innermost function around a call of ``name`` that has it as a parameter
        (a closure calls its enclosing function's)."""
        scope = around
        while scope is not None:
            if name in self._parameter_names.get(scope.node.id, ()):
                return scope
            scope = scope.parent
        return None

    # -- shared -------------------------------------------------------------------------

    def _value(
        self, node: ts.Node, around: _Def | None, at: ts.Node, receiver_ok: bool = False
    ) -> Target | None:
        """What a name written as a value stands for, when it is a callable: a definition of
        this file or an imported name (``self.m`` only as a callee: a bound method passed on
        is not followed)."""
        if node.type not in _VALUE_TYPES:
            return None
        parts = name_parts(self.src.text(node))
        if "?" in parts or (parts[0] in _SELF_PARAMETERS and not receiver_ok):
            return None
        self._guessed, self._inferred, self._at = False, False, at.start_byte
        found = self._resolve(parts, around)
        if isinstance(found, _Def):
            return found if found.kind in _CALLABLE_KINDS else None
        return found if found.module is not None else None

    def _reach(self, call: ts.Node, around: _Def | None, values: list[ts.Node]) -> None:
        for node in values:
            target = self._value(node, around, call)
            if target is not None:
                self._edge(around, target)

    def _edge(self, around: _Def | None, target: Target) -> None:
        src = around.symbol_id if around is not None else self.module_id
        self._add(self._call_type(EdgeType.CALLS, target), src, target, CallResolution.INFERRED)


def _entries(table: ts.Node, read: Reader) -> dict[str, list[ts.Node]]:
    """Constant key (or index) -> the value nodes a dict, list or tuple literal holds."""
    entries: dict[str, list[ts.Node]] = {}
    if table.type == "dictionary":
        for pair in table.named_children:
            key, value = pair.child_by_field_name("key"), pair.child_by_field_name("value")
            if pair.type != "pair" or key is None or value is None:
                continue
            constant = _constant(key, read)
            entries.setdefault(constant if constant is not None else "?", []).append(value)
        return entries
    for index, item in enumerate(table.named_children):
        entries.setdefault(str(index), []).append(item)
    return entries


def _constant(node: ts.Node, read: Reader) -> str | None:
    """A subscript key as a constant: a plain string's content or an integer; else None."""
    written = read(node)
    if node.type == "integer":
        return written
    if node.type == "string" and not any(c.type == "interpolation" for c in node.named_children):
        stripped = written.lstrip("rRbBuU")
        quote = stripped[:3] if stripped[:3] in ('"""', "'''") else stripped[:1]
        return stripped[len(quote) : len(stripped) - len(quote)]
    return None
