"""C's own rules for extraction.

What a function-like macro calls: its body is preprocessor text, not a tree, so the calls it
expands to are read from that text (``name(`` outside strings and character literals).
``#define deflateInit(s, l) deflateInit_((s), (l), ...)`` calls ``deflateInit_``; a walk of
callers steps through the macro to the functions that use it.

A function's parameters: ``in(desc, &buf)`` where ``in`` is a parameter (a function pointer)
calls whatever the caller passed, not the program's function of that name.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

import tree_sitter as ts

_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_LITERALS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
# Words followed by ``(`` that call nothing.
_NOT_CALLS = frozenset({
    "if", "while", "for", "switch", "return", "sizeof", "defined", "do", "else", "case",
    "_Alignof", "alignof", "__typeof__", "typeof", "__attribute__", "_Generic",
    "__builtin_expect", "offsetof", "va_arg", "va_start", "va_end", "_Static_assert",
})  # fmt: skip
MAX_MACRO_CALLS = 32  # a macro that expands to a whole program says less than its first calls


def macro_calls(parameters: set[str], body_text: str) -> list[str]:
    """Names a function-like macro's body calls, in order, each once (its parameters left
    out: ``f(x)`` where ``f`` is a parameter calls whatever the user passes)."""
    found: list[str] = []
    for match in _CALLED.finditer(_LITERALS.sub('""', body_text)):
        name = match.group(1)
        if name not in _NOT_CALLS and name not in parameters and name not in found:
            found.append(name)
            if len(found) == MAX_MACRO_CALLS:
                break
    return found


def is_macro(language: str | None, signature: str | None) -> bool:
    """A C function-like macro's symbol (its signature is its ``#define`` line)."""
    return language == "c" and re.match(r"#\s*define\b", signature or "") is not None


_DECLARATOR_WRAPPERS = ("pointer_declarator", "parenthesized_declarator", "array_declarator",
                        "function_declarator", "attributed_declarator")  # fmt: skip


def c_parameters(definition: ts.Node, read: Callable[[ts.Node], str]) -> list[str]:
    """A C function definition's parameter names (``int (*in)(void *)`` is ``in``)."""
    declarator = definition.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    listed = declarator.child_by_field_name("parameters") if declarator is not None else None
    names = []
    for parameter in listed.named_children if listed is not None else []:
        inner = parameter.child_by_field_name("declarator")
        while inner is not None and inner.type in _DECLARATOR_WRAPPERS:
            inner = inner.child_by_field_name("declarator") or (
                inner.named_children[0] if inner.named_children else None
            )
        if inner is not None and inner.type == "identifier":
            names.append(read(inner))
    return names


_ATTRIBUTE_WORDS = ("type_identifier", "identifier", "storage_class_specifier",
                    "type_qualifier", "primitive_type", "ERROR")  # fmt: skip


def _attributes_of(definition: ts.Node) -> ts.Node | None:
    """The declaration that is ``definition``'s attribute line, if it has one."""
    before = definition.prev_named_sibling
    if (
        definition.type != "function_definition" or before is None
        or before.type != "declaration" or before.end_point.row + 1 < definition.start_point.row
        or not before.children or not before.children[-1].is_missing
        or any(c.type not in _ATTRIBUTE_WORDS for c in before.named_children)
    ):  # fmt: skip
        return None
    return before


def attribute_line(definition: ts.Node, read: Callable[[ts.Node], str]) -> str:
    """The attribute macros on the lines above a C function (``FORCE_INLINE_TEMPLATE``,
    ``LZ4_FORCE_O2``): the grammar cannot know they are macros and reads them as a separate
    declaration missing its ``;``. They say what the function is (inline, static, hot), so
    they belong to its signature; '' when the previous node is anything else."""
    before = _attributes_of(definition)
    return "" if before is None else " ".join(read(before).split())


def is_attribute_line(declaration: ts.Node) -> bool:
    """Whether a top-level declaration is the attribute line of the function after it."""
    after = declaration.next_named_sibling
    return after is not None and _attributes_of(after) is not None


class _Named(Protocol):
    qualified_name: str
    alternative: bool


D = TypeVar("D", bound=_Named)


def preprocessor_variants(definitions: Iterable[D]) -> dict[str, list[D]]:
    """Functions (and function-like macros) one file defines twice: one per ``#if`` branch,
    as C allows no other way. Each is marked ``alternative``; a call reaches every one, and
    whichever the build compiles is among them. Qualified name -> variants."""
    namesakes: dict[str, list[D]] = defaultdict(list)
    for definition in definitions:
        namesakes[definition.qualified_name].append(definition)
    found = {name: group for name, group in namesakes.items() if len(group) > 1}
    for group in found.values():
        for definition in group:
            definition.alternative = True
    return found
