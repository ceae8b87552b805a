"""Kotlin's types as a call's receiver needs them: what the standard library says about the
types a project's extension functions extend, and a file's ``typealias`` declarations.

A project extends library types (``fun Collection<T>.toImmutableList()``); a call reaches such
an extension through its receiver's type or any of that type's supertypes, and the library's
factory functions (``mutableListOf()``) say which type they build. These tables are the
library's own, fixed by the language, not guessed per project.
"""

from __future__ import annotations

import re

import tree_sitter as ts

from patchstream.parsing.node_text import without_generics
from patchstream.parsing.source import Source

_ITERABLE = ("Iterable", "Any")
_COLLECTION = ("Collection", *_ITERABLE)
_MUTABLE_COLLECTION = ("MutableCollection", "MutableIterable", *_COLLECTION)
_LIST = ("List", *_COLLECTION)
_MUTABLE_LIST = ("MutableList", *_MUTABLE_COLLECTION[:2], *_LIST)
_SET = ("Set", *_COLLECTION)
_MUTABLE_SET = ("MutableSet", *_MUTABLE_COLLECTION[:2], *_SET)
_MAP = ("Map", "Any")
_MUTABLE_MAP = ("MutableMap", *_MAP)
_CHARS = ("CharSequence", "Comparable", "Any")

# A library type -> itself and its supertypes, nearest first.
SUPERTYPES: dict[str, tuple[str, ...]] = {
    "Any": ("Any",),
    "Iterable": _ITERABLE,
    "MutableIterable": ("MutableIterable", *_ITERABLE),
    "Collection": _COLLECTION,
    "MutableCollection": _MUTABLE_COLLECTION,
    "List": _LIST,
    "MutableList": _MUTABLE_LIST,
    "ArrayList": ("ArrayList", *_MUTABLE_LIST),
    "Set": _SET,
    "MutableSet": _MUTABLE_SET,
    "HashSet": ("HashSet", *_MUTABLE_SET),
    "LinkedHashSet": ("LinkedHashSet", *_MUTABLE_SET),
    "Map": _MAP,
    "MutableMap": _MUTABLE_MAP,
    "HashMap": ("HashMap", *_MUTABLE_MAP),
    "LinkedHashMap": ("LinkedHashMap", *_MUTABLE_MAP),
    "Sequence": ("Sequence", "Any"),
    "Array": ("Array", "Any"),
    "String": ("String", *_CHARS),
    "CharSequence": _CHARS[::2],
    "StringBuilder": ("StringBuilder", "CharSequence", "Appendable", "Any"),
    "Int": ("Int", "Number", "Comparable", "Any"),
    "Long": ("Long", "Number", "Comparable", "Any"),
    "Double": ("Double", "Number", "Comparable", "Any"),
    "Boolean": ("Boolean", "Comparable", "Any"),
    "Char": ("Char", "Comparable", "Any"),
}

# A library factory function -> the type it builds (as declared by the library).
FACTORIES: dict[str, str] = {
    "listOf": "List", "emptyList": "List", "listOfNotNull": "List",
    "mutableListOf": "MutableList", "arrayListOf": "ArrayList",
    "setOf": "Set", "emptySet": "Set", "mutableSetOf": "MutableSet",
    "hashSetOf": "HashSet", "linkedSetOf": "LinkedHashSet",
    "mapOf": "Map", "emptyMap": "Map", "mutableMapOf": "MutableMap",
    "hashMapOf": "HashMap", "linkedMapOf": "LinkedHashMap",
    "sequenceOf": "Sequence", "emptySequence": "Sequence",
    "arrayOf": "Array", "emptyArray": "Array", "buildString": "String",
}  # fmt: skip


_ONE_ARGUMENT = re.compile(r"^\s*\w+\s*<\s*([A-Za-z_][\w.]*)\s*\??\s*>\s*\(")


def factory_element(call: str) -> tuple[str, ...] | None:
    """``mutableListOf<KModifier>()``: the element type its one type argument names
    (``for (it in modifiers) it.checkTarget()`` is a KModifier's); None otherwise."""
    found = _ONE_ARGUMENT.match(call)
    return tuple(found.group(1).split(".")) if found else None


# What the library's collection operations give, on any Iterable (``items.map { }`` is a List).
_LISTED = (
    "map",
    "mapNotNull",
    "mapIndexed",
    "filter",
    "filterNot",
    "filterNotNull",
    "filterIsInstance",
    "flatMap",
    "sorted",
    "sortedBy",
    "sortedWith",
    "sortedDescending",
    "sortedByDescending",
    "distinct",
    "distinctBy",
    "reversed",
    "take",
    "takeWhile",
    "drop",
    "dropWhile",
    "toList",
    "plus",
    "minus",
    "zip",
    "withIndex",
    "chunked",
    "windowed",
    "shuffled",
    "asReversed",
)
COLLECTED: dict[str, str] = {
    **dict.fromkeys(_LISTED, "List"), "toMutableList": "MutableList", "toSet": "Set",
    "toMutableSet": "MutableSet", "toHashSet": "HashSet", "toSortedSet": "Set",
    "associate": "Map", "associateBy": "Map", "associateWith": "Map", "groupBy": "Map",
    "toMap": "Map", "asSequence": "Sequence",
}  # fmt: skip


def collected_call(name: str) -> str | None:
    """``List.map().joinToCode`` (a call on what a collection operation of a library
    collection gives) as ``List.joinToCode``; also through calls before it
    (``MutableList.toImmutableList().map().m``: the last operation says); None for any other
    name."""
    head, dot, rest = name.partition(".")
    *calls, method = rest.split("().")
    if not dot or not calls or "(" in method or "Iterable" not in SUPERTYPES.get(head, ()):
        return None
    result = COLLECTED.get(calls[-1])
    return f"{result}.{method}" if result is not None else None


def plain_receiver(text: str) -> str:
    """A receiver as written, less what does not change its type: ``x!!`` is ``x``, and
    the grammar reads ``!x.isEmpty()``'s receiver as ``!x`` (see ``kotlin.scm``)."""
    return text.replace("!!", "").lstrip("!-+")


def supertypes(name: str) -> tuple[str, ...]:
    """The library supertypes of the library type ``name`` (itself excluded); () for any
    other name."""
    return SUPERTYPES.get(name, ("",))[1:]


_MAX_ALIAS_HOPS = 4  # ``RawOption`` -> ``NullableOption`` -> ``OptionWithValues``


def type_aliases(root: ts.Node, src: Source) -> dict[str, str]:
    """A file's top-level ``typealias A<..> = B<..>``: A -> B (generics dropped)."""
    found: dict[str, str] = {}
    for node in root.named_children:
        if node.type != "type_alias" or node.named_child_count < 2:
            continue
        # ``internal typealias``: the modifiers come first.
        named = next((c for c in node.named_children if c.type != "modifiers"), None)
        aliased = node.named_children[-1]
        if named is not None and named.type == "identifier" and aliased.type == "user_type":
            found[src.text(named)] = without_generics("".join(src.text(aliased).split()))
    return found


def aliased_types(name: str, aliases: dict[str, str]) -> list[str]:
    """What ``name`` stands for through the file's aliases, nearest first (none: [])."""
    chain: list[str] = []
    while (name := aliases.get(name, "")) and name not in chain and len(chain) < _MAX_ALIAS_HOPS:
        chain.append(name)
    return chain


# Scope functions whose lambda runs with the value as ``this`` (``with(b) { add(x) }``,
# ``b.apply { add(x) }``, ``b.run { build() }``), and those that give back the value itself.
_RECEIVER_SCOPES = frozenset({"apply", "run"})
RETURNS_RECEIVER = frozenset({"apply", "also"})
_BOUNDARIES = frozenset({"function_declaration", "class_body", "source_file", "object_literal"})


def scope_receivers(node: ts.Node, src: Source) -> list[ts.Node]:
    """The values whose members a bare call at ``node`` reaches through the scope functions'
    lambdas around it, innermost first (the function around them ends the search)."""
    found: list[ts.Node] = []
    current = node.parent
    while current is not None and current.type not in _BOUNDARIES:
        callee = _called_with(current) if current.type == "lambda_literal" else None
        if callee is not None and callee.type == "call_expression" and callee.named_child_count:
            head = callee.named_children[0]
            listed = callee.named_children[-1]
            if (
                src.text(head) == "with"
                and listed.type == "value_arguments"
                and (listed.named_child_count and listed.named_children[0].named_child_count)
            ):
                found.append(listed.named_children[0].named_children[0])
        elif (value := scoped_value(callee, _RECEIVER_SCOPES, src)) is not None:
            found.append(value)
        current = current.parent
    return found


_IT_SCOPES = frozenset({"let", "also", "takeIf", "takeUnless"})  # ``x.let { it.m() }``


def it_value(node: ts.Node, src: Source) -> ts.Node | None:
    """The value ``it`` names at ``node``: the receiver of the innermost lambda around it
    when that lambda is a scope function's (``b.let { it.add(x) }``) with no parameters of
    its own; None where ``it`` is anything else (``items.forEach { it.m() }``)."""
    current = node.parent
    while current is not None and current.type not in _BOUNDARIES:
        if current.type == "lambda_literal":
            if any(c.type == "lambda_parameters" for c in current.named_children):
                return None
            return scoped_value(_called_with(current), _IT_SCOPES, src)
        current = current.parent
    return None


def scoped_value(callee: ts.Node | None, names: frozenset[str], src: Source) -> ts.Node | None:
    """``b`` when ``callee`` is ``b.f`` with ``f`` one of ``names`` (``b.apply``)."""
    if callee is None or callee.type != "navigation_expression":
        return None
    return callee.named_children[0] if src.text(callee.named_children[-1]) in names else None


def _called_with(lambda_literal: ts.Node) -> ts.Node | None:
    """What is called with ``lambda_literal`` as its trailing lambda (``with(b)``,
    ``b.apply``); None for a lambda passed any other way."""
    holder = lambda_literal.parent
    call = holder.parent if holder is not None and holder.type == "annotated_lambda" else None
    return call.named_children[0] if call is not None and call.named_child_count else None


def shadowed_parameters(bound: list[tuple[ts.Node, str]]) -> set[int]:
    """Which of ``bound`` (each fact's node and name) are a class's plain constructor
    parameters (no ``val``/``var``) that a property of the same class renames: in
    ``class W(out: Appendable) { private var out = LineWrapper(out) }`` the members'
    ``out`` is the property (the parameter is seen by initializers only)."""
    properties = {
        (owner.id, name)
        for node, name in bound
        if node.type == "property_declaration"
        and node.parent is not None
        and node.parent.type == "class_body"  # a member, not a function's local ``val``
        and (owner := _class_of(node)) is not None
    }
    return {
        at
        for at, (node, name) in enumerate(bound)
        if node.type == "class_parameter"
        and not any(child.type in ("val", "var") for child in node.children)
        and (owner := _class_of(node)) is not None
        and (owner.id, name) in properties
    }


def initializers_of(parameter: ts.Node) -> list[ts.Node]:
    """The property declarations and ``init`` blocks of the class whose constructor declares
    ``parameter``: where a parameter a property renames is still the parameter
    (``private val names = names.toImmutableList()`` reads the ``List`` it was given)."""
    owner = _class_of(parameter)
    body = next((c for c in owner.children if c.type == "class_body"), None) if owner else None
    if body is None:
        return []
    return [child for child in body.named_children
            if child.type in ("property_declaration", "anonymous_initializer")]  # fmt: skip


def _class_of(node: ts.Node) -> ts.Node | None:
    """The class or object ``node`` is declared in (its nearest)."""
    parent = node.parent
    while parent is not None and parent.type not in ("class_declaration", "object_declaration"):
        parent = parent.parent
    return parent
