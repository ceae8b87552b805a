"""Calls through values in Python, within one file: what static names alone cannot see.

A mixin of the extractor, run after the calls written with a name are resolved. It adds
CALLS (or INSTANTIATES) edges, every one ``inferred``, for:

- a dict, list or tuple literal of functions or classes, called through a subscript:
  ``HANDLERS["get"](request)`` reaches what the literal holds at that key (a key that is not
  a constant reaches every value), and what is stored into it later (``HANDLERS["put"] =
  on_put``, also into a name bound to anything else: ``d = {}``);
- a loop over such a literal (or a name bound to one): ``for hook in (a, b): hook()``;
- a function (or class) passed as an argument, positionally or by keyword, and called through
  the parameter: ``run(on_done)`` with ``def run(cb): cb()`` makes ``run -> on_done``.

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
from patchstream.parsing.resolution import Resolution
from patchstream.parsing.value_holders import HeldValues, assigned_values, calls_of
from patchstream.schemas.graph import CallResolution, EdgeType, Reference

_VALUE_TYPES = frozenset({"identifier", "attribute"})
_CALLABLE_KINDS = frozenset({"function", "method", "class"})
_SELF_PARAMETERS = frozenset({"self", "cls"})
Target = _Def | Reference
Reader = Callable[[ts.Node], str]  # Source.text
Tables = dict[tuple[str, str], dict[str, list[ts.Node]]]  # (scope, name) -> key -> values


class ValueFlow(HeldValues, Resolution):
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
        for match in matches:
            self._check()
            if "flow.subscript_call" in match:
                self._through_subscript(match, tables)
            elif "flow.loop" in match:
                self._through_loop(match, tables)
        self._collect_held(matches)
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
        defined function or class as its first argument: the edge to ``dec``, and (function's
        symbol id, first parameter) -> what it is passed, for calls through the parameter."""
        passed: dict[tuple[str, str], list[Target]] = defaultdict(list)
        for match in decorations:
            self._check()
            node, definition = match["flow.decoration"][0], match["flow.decorated"][0]
            around = self._enclosing_def(node)
            decorator = self._value(match["flow.decorator"][0], around, node)
            if decorator is None:
                continue
            self._edge(around, decorator)
            wrapped = self.def_by_node.get(
                (definition.start_byte, definition.end_byte, definition.type)
            )
            if wrapped is None or not isinstance(decorator, _Def):
                continue
            parameters = self._parameter_names.get(decorator.node.id, [])
            if parameters:
                passed[(decorator.symbol_id, parameters[0])].append(wrapped)
        return passed

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
            if not any(a.type in _VALUE_TYPES or a.type == "keyword_argument"
                       for a in arguments.named_children):  # fmt: skip
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
                if parameter is None or value_node.type not in _VALUE_TYPES:
                    continue
                value = self._value(value_node, around, call)
                if value is not None:
                    passed[(callee.symbol_id, parameter)].append(value)
        return passed

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
