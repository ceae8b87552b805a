"""Python parameters typed by their call sites, within one file: a mixin of the extractor.

``def fill(jar): jar.add()`` where every call of ``fill`` in the file passes one type
(``fill(Jar())``, or ``fill(jar=j)`` after ``j = Jar()``) makes ``jar`` a ``Jar`` for the
calls on it in ``fill``: ``fill -> Jar.add``, ``inferred``. It runs before the calls are
resolved, and only for parameters that something is called on.

A parameter stays untyped when one of its calls passes something else, or something this file
cannot type (a literal, an expression, ``*args``); an annotation, or a type the body gives it
(``jar = jar or Jar()``), wins. Callers in other files are not seen (each file is extracted
alone): that is why the edges are ``inferred``, never ``exact``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import tree_sitter as ts

from patchstream.parsing.node_text import class_like, name_parts, python_parameters
from patchstream.parsing.receiver_types import SELF_WORDS, _Def, _scope_key, _Typed
from patchstream.parsing.value_flow import ValueFlow

Match = dict[str, list[ts.Node]]
_UNTYPED = ("?",)  # a call passed something this file cannot type


class CallSiteTypes(ValueFlow):
    def _collect_call_site_types(self, matches: list[Match]) -> None:
        if self.language != "python":
            return
        receivers = self._receiver_parameters(matches)
        if not receivers:
            return
        functions = {d.node.id: d for d in self.defs if d.node.id in receivers}
        names = {d.name for d in functions.values()}
        passed: dict[tuple[int, str], set[tuple[str, ...]]] = defaultdict(set)
        for match in matches:
            if "reference.call" not in match:
                continue
            self._check()
            callee_node, call = match["name"][0], match["reference.call"][0]
            text = self.src.text(callee_node)
            if text.rsplit(".", 1)[-1].strip() not in names:  # most calls: cheaply out
                continue
            arguments = call.child_by_field_name("arguments")
            written = name_parts(text)
            if arguments is None or arguments.type != "argument_list" or written[-1] not in names:
                continue
            # ``f(x)`` and ``self.m(x)`` only: typing any other receiver to find the callee
            # cost the extraction half again on scipy (8.5 against 5.7 s for 300 files).
            if len(written) > 2 or (len(written) == 2 and written[0] not in SELF_WORDS):
                continue
            around = self._enclosing_def(call)
            callee = self._value(callee_node, around, call, receiver_ok=True)
            if not isinstance(callee, _Def) or callee.node.id not in functions:
                continue
            parameters = python_parameters(callee.node, self.src.text)
            if parameters[:1] and parameters[0] in SELF_WORDS:
                if callee_node.type != "attribute":
                    continue  # a method called by its bare name: not a call this can map
                parameters = parameters[1:]  # obj.method(x): x is the second parameter
            given = _arguments(arguments, parameters, self.src.text)
            for parameter in receivers[callee.node.id]:
                if given is None:  # *args or **kwargs: any parameter may be in them
                    passed[(callee.node.id, parameter)].add(_UNTYPED)
                elif parameter in given:
                    typed = self._argument_type(given[parameter], around, call)
                    passed[(callee.node.id, parameter)].add(typed or _UNTYPED)
        for (node_id, parameter), types in passed.items():
            if len(types) == 1 and _UNTYPED not in types:
                function = functions[node_id]
                names_in_scope = self._var_types[_scope_key(function)]
                if parameter not in names_in_scope:  # an annotation or the body's own wins
                    names_in_scope[parameter] = _Typed(next(iter(types)), declared=False,
                                                       from_callers=True)  # fmt: skip

    def _receiver_parameters(self, matches: list[Match]) -> dict[int, set[str]]:
        """Function node id -> its parameters that a call in it is made on (``p.m()``)."""
        found: dict[int, set[str]] = defaultdict(set)
        parameters: dict[int, list[str]] = {
            d.node.id: python_parameters(d.node, self.src.text)
            for d in self.defs
            if d.kind in ("function", "method")
        }
        any_parameter = {p for names in parameters.values() for p in names} - SELF_WORDS
        for match in matches:
            if "reference.call" not in match:
                continue
            text = self.src.text(match["name"][0])  # Python's: ``jar.add``
            if "." not in text or text.split(".", 1)[0].strip() not in any_parameter:
                continue
            parts = name_parts(text)
            head = parts[0]
            if len(parts) < 2 or head in SELF_WORDS:
                continue
            scope = self._enclosing_def(match["reference.call"][0])
            while scope is not None and scope.kind in ("function", "method"):
                if head in parameters.get(scope.node.id, ()):
                    found[scope.node.id].add(head)
                    break
                scope = scope.parent
        return found

    def _argument_type(
        self, node: ts.Node, around: _Def | None, at: ts.Node
    ) -> tuple[str, ...] | None:
        """The type an argument has, written so the callee's scope reads it the same: a
        module-level class (or an imported one) constructed there, or a name bound to one."""
        if node.type == "call":
            function = node.child_by_field_name("function")
            if function is None or function.type not in ("identifier", "attribute"):
                return None
            parts = tuple(name_parts(self.src.text(function)))
            target = self._resolve_type(list(parts), around)
            if isinstance(target, _Def):
                return parts if target.kind == "class" and target.parent is None else None
            return parts if target.module is not None and class_like(parts[-1]) else None
        if node.type == "identifier":
            self._at = at.start_byte
            typed = self._variable_type(self.src.text(node), around)
            plain = typed is not None and not (typed.element or typed.through)
            if plain and typed is not None and typed.parts is not None:
                target = self._resolve_type(list(typed.parts), around)
                if isinstance(target, _Def) and target.kind == "class" and target.parent is None:
                    return typed.parts
                if not isinstance(target, _Def) and target.module is not None:
                    return typed.parts
        return None


def _arguments(
    arguments: ts.Node, parameters: list[str], read: Callable[[ts.Node], str]
) -> dict[str, ts.Node] | None:
    """Parameter -> the argument node a call gives it; None when a splat hides which."""
    given: dict[str, ts.Node] = {}
    for position, argument in enumerate(arguments.named_children):
        if argument.type in ("list_splat", "dictionary_splat"):
            return None
        if argument.type == "keyword_argument":
            name, value = (
                argument.child_by_field_name("name"),
                argument.child_by_field_name("value"),
            )
            if name is not None and value is not None:
                given[read(name)] = value
        elif position < len(parameters) and argument.type != "comment":
            given[parameters[position]] = argument
    return given
