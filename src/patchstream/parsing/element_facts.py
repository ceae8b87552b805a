"""Names typed by where they are bound rather than declared: a loop's target and an
element-taking callback's parameter (an element of the container iterated: ``for x in items``,
``items.map(x => ..)``, Kotlin's ``items.forEach { it.m() }``, Swift's ``$0``, Rust's
``items.iter().all(|x| ..)``), and a function passed as an argument, whose parameters take
the callee's declared callback types (``operate((source, subscriber) => ..)``)."""

from __future__ import annotations

import tree_sitter as ts

from patchstream.parsing.source import Source
from patchstream.parsing.swift_library import ELEMENT_CLOSURES, closure_parameters, element_closure
from patchstream.parsing.type_fact import TypeFact
from patchstream.parsing.type_text import DOTTED, type_parts

# Array methods whose callback's parameter at this position is an element of the array.
_ARRAY_CALLBACKS = {"forEach": 0, "map": 0, "filter": 0, "find": 0, "findIndex": 0,
                    "findLast": 0, "some": 0, "every": 0, "flatMap": 0, "reduce": 1,
                    "reduceRight": 1, "sort": 0,
                    # Rust's iterator adapters (on ``items.iter()``)
                    "for_each": 0, "any": 0, "all": 0, "position": 0, "filter_map": 0,
                    "flat_map": 0, "take_while": 0, "skip_while": 0, "max_by_key": 0,
                    "min_by_key": 0, "inspect": 0,
                    # and ``Option``'s (``fact_queries``: on an option's value only)
                    "and_then": 0, "is_some_and": 0, "is_ok_and": 0, "map_or": 0}  # fmt: skip
# Kotlin's collection functions whose lambda's parameter (``it`` unless named) at this
# position is an element of the collection.
_KOTLIN_ELEMENT_LAMBDAS = {
    **{name: 0 for name in ("forEach", "map", "mapNotNull", "flatMap", "filter", "filterNot",
                            "any", "all", "none", "find", "first", "firstOrNull", "last",
                            "lastOrNull", "single", "singleOrNull", "count", "sumBy",
                            "sumByDouble", "sortedBy", "sortedByDescending", "groupBy",
                            "associateBy", "associateWith", "partition", "takeWhile",
                            "dropWhile", "maxBy", "minBy", "onEach", "distinctBy",
                            "mapTo", "filterTo", "joinToString")},
    "forEachIndexed": 1, "mapIndexed": 1, "filterIndexed": 1, "fold": 1, "reduce": 1,
}  # fmt: skip


def passed_callback(match: dict[str, list[ts.Node]], src: Source) -> list[TypeFact]:
    """``operate((source, subscriber) => ...)``, ``new Observable((subscriber) => ...)``:
    each undeclared parameter of a function passed as an argument takes a callback
    parameter's type from the callee's signature, which is usually in another file (the
    graph joins it through the callee's CALLBACK_PARAM edges). Array methods are left to
    ``iteration``: their callback's parameter is an element of the array."""
    callee = "".join(src.text(match["callee"][0]).split())
    if not DOTTED.match(callee) or callee.rsplit(".", 1)[-1] in _ARRAY_CALLBACKS:
        return []
    parts, callback = tuple(callee.split(".")), match["passed"][0]
    if callback.type == "lambda_literal":  # Swift's ``performEvent { $0.urlSession(..) }``
        if parts[-1] in ELEMENT_CLOSURES:
            return []  # ``items.map { $0.m() }``: an element (``iteration``)
        named = closure_parameters(callback, src)
        return [TypeFact(callback, name, parts, through="callback") for name in named]
    names = _undeclared_parameters(callback, src)
    if callback.type == "function_expression" and not _declares_this(callback, src):
        names.append("this")  # a ``function`` (not an arrow) gets ``this`` from its caller
    return [TypeFact(callback, name, parts, through="callback") for name in names]


def _declares_this(function: ts.Node, src: Source) -> bool:
    return any(
        (pattern := p.child_by_field_name("pattern")) is not None and src.text(pattern) == "this"
        for p in _parameter_nodes(function)
    )


def _kotlin_element_lambda(
    callback: ts.Node, method: str, container: tuple[str, ...], src: Source
) -> list[TypeFact]:
    position = _KOTLIN_ELEMENT_LAMBDAS.get(method)
    if position is None:
        return []
    listed = next((c for c in callback.named_children if c.type == "lambda_parameters"), None)
    if listed is None:  # ``{ it.area() }``: one parameter, ``it``
        return [TypeFact(callback, "it", container, through="iter")] if position == 0 else []
    declared = listed.named_children
    if position >= len(declared) or declared[position].type != "variable_declaration":
        return []
    named = declared[position].named_children
    if len(named) != 1 or named[0].type != "identifier":  # typed: its own fact
        return []
    return [TypeFact(callback, src.text(named[0]), container, through="iter")]


def _parameter_nodes(function: ts.Node) -> list[ts.Node]:
    """A function expression's parameters: ``x => ...`` has one, bare; ``(a, b) => ...`` a list."""
    single = function.child_by_field_name("parameter")
    if single is not None:
        return [single]
    listed = function.child_by_field_name("parameters")
    return listed.named_children if listed is not None else []


def _undeclared_parameters(function: ts.Node, src: Source) -> list[str]:
    names = []
    for parameter in _parameter_nodes(function):
        if parameter.type == "identifier":  # ``x => ...``
            names.append(src.text(parameter))
            continue
        pattern = parameter.child_by_field_name("pattern")
        undeclared = parameter.child_by_field_name("type") is None
        if undeclared and pattern is not None and pattern.type == "identifier":
            names.append(src.text(pattern))
    return names


def callback_parameter_types(parameter: ts.Node, src: Source) -> list[tuple[str, ...]]:
    """The declared types of the parameters of a function-typed parameter
    (``init: (source: Observable<T>, subscriber: Subscriber<R>) => void`` -> Observable,
    Subscriber), ``this:`` too (what ``this`` is in a ``function`` passed there)."""
    annotation = parameter.child_by_field_name("type")
    written = annotation.named_children[0] if annotation and annotation.named_children else None
    if written is None or written.type != "function_type":
        return []
    inner = written.child_by_field_name("parameters")
    found = []
    for item in inner.named_children if inner is not None else []:
        pattern, declared = item.child_by_field_name("pattern"), item.child_by_field_name("type")
        if pattern is None or declared is None:
            continue
        parts = type_parts(src.text(declared).lstrip(":"))
        if parts is not None:
            found.append(parts)
    return found


def iteration(match: dict[str, list[ts.Node]], src: Source, language: str) -> list[TypeFact]:
    """Names bound to an element of a container: a loop's target (``for x in items``,
    ``for i, x in enumerate(items)``, TypeScript's ``for (const x of items)``) or an array
    method's callback parameter (``items.reduce((acc, x) => ..., 0)``)."""
    text = "".join(src.text(match["iter"][0]).split())
    if not DOTTED.match(text):
        return []
    container, node = tuple(text.split(".")), match["loop"][0]
    if "enumerate" in match and src.text(match["enumerate"][0]) != "enumerate":
        return []
    if "callback" not in match:
        if node.type == "for_in_statement" and not any(c.type == "of" for c in node.children):
            return []  # ``for (k in obj)``: keys, not elements
        return [TypeFact(node, src.text(match["name"][0]), container, through="iter")]
    callback = match["callback"][0]
    if callback.type == "lambda_literal" and language == "swift":  # ``args.map { $0.m() }``
        named = element_closure(callback, src.text(match["method"][0]), src)
        return [] if named is None else [TypeFact(callback, named, container, through="iter")]
    if callback.type == "lambda_literal":  # Kotlin: ``items.forEach { it.m() }``
        return _kotlin_element_lambda(callback, src.text(match["method"][0]), container, src)
    position = _ARRAY_CALLBACKS.get(src.text(match["method"][0]))
    parameters = _parameter_nodes(callback)
    if position is None or position >= len(parameters):
        return []
    parameter = parameters[position]
    if parameter.type == "required_parameter":
        if parameter.child_by_field_name("type") is not None:
            return []  # declared: the parameter facts have it
        parameter = parameter.child_by_field_name("pattern") or parameter
    if parameter.type != "identifier":
        return []
    return [TypeFact(callback, src.text(parameter), container, through="iter")]
