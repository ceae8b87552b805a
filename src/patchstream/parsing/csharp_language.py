"""C#'s extension methods: ``static int ReadInt(this Stream s)`` in a static class is called
as ``stream.ReadInt()`` wherever its namespace is in scope (enclosing or opened by
``using``), whatever the static class is called.

Such a method is findable under ``<cs>|<namespace>.this.<Extended>.<name>/<n>`` (the type
its ``this`` parameter names, and how many arguments it takes after it) instead of its
class's name (``keys.symbol_key``); a call ``t.M(a, b)`` on a receiver of a known type ``T``
also wants ``<namespace>.this.T.M/2`` in each namespace around it and each it opens
(``keys.reference_keys``): the graph joins the one that exists. Keyed so, ``writer.Write(x)``
(.NET's own ``BinaryWriter.Write``) does not find a project's ``Write(this BinaryWriter w,
Table t, Row r)``. Not found: a call on a subtype of the extended type (an ``IImageStream``
for ``this IBinaryReader``), one that leaves out optional arguments, and one written through
the class (``IOExtensions.ReadInt(s)``) outside the class's own file.
"""

from __future__ import annotations

import re

import tree_sitter as ts

from patchstream.parsing.modules import CS_GLOBAL
from patchstream.parsing.source import Source
from patchstream.schemas.graph import Reference, Symbol, SymbolKind

EXTENSION = "this"  # a keyword: never a namespace's or a class's name
# ``(this Stream s``, ``(this IList<T> list``, ``(this global::N.Stream s``: the type's
# last name.
_RECEIVER_PARAMETER = re.compile(r"\(\s*this\s+(?:[\w:]+[.:])*(\w+)")


def _arguments_after_this(signature: str) -> int | None:
    """How many parameters follow ``this T x`` in an extension method's signature."""
    start = signature.find("(")
    depth, commas = 0, 0
    for char in signature[start:]:
        if char in "(<[":
            depth += 1
        elif char in ")>]":
            depth -= 1
            if depth == 0:
                return commas
        elif char == "," and depth == 1:
            commas += 1
    return None  # a signature cut short


def extended_type(symbol: Symbol) -> str | None:
    """The type an extension method extends (``Stream``), or None for any other symbol."""
    if symbol.language != "csharp" or symbol.kind is not SymbolKind.FUNCTION:
        return None
    found = _RECEIVER_PARAMETER.search(symbol.signature or "")
    return found.group(1) if found else None


def extension_key(scope: str, symbol: Symbol, extended: str) -> str:
    """``dnlib.IO.IOExtensions.ReadInt(this Stream s)`` -> ``<cs>|dnlib.IO.this.Stream.ReadInt``:
    a static class of extensions is a top-level class, so its namespace is its name's head."""
    parts = symbol.qualified_name.split(".")
    namespace = ".".join(parts[:-2])
    arity = _arguments_after_this(symbol.signature or "")
    named = _joined(namespace, EXTENSION, extended, symbol.name)
    return f"{scope}|{CS_GLOBAL}|{named}/{'?' if arity is None else arity}"


def extension_keys(
    scope: str, reference: Reference, namespaces: list[str], arity: int | None
) -> list[str]:
    """The keys of the extension methods ``T.M`` (a call on a receiver of type ``T`` with
    ``arity`` arguments) may run: ``M`` of ``T`` in each of ``namespaces`` (around the call,
    then opened)."""
    parts = reference.name.split(".")
    if arity is None:
        return []
    if len(parts) < 2 or not parts[-1].isidentifier() or not parts[-2].isidentifier():
        return []
    receiver, method = parts[-2], parts[-1]
    if not receiver[:1].isupper():  # a variable of unknown type, not a type
        return []
    return [f"{scope}|{CS_GLOBAL}|{_joined(namespace, EXTENSION, receiver, method)}/{arity}"
            for namespace in namespaces]  # fmt: skip


def member_keys(
    scope: str, reference: Reference, context: list[str], opened: list[str], arity: int | None
) -> list[str]:
    """C#'s keys beyond its scopes (``cpp_language.lookup_keys``): ``Listener.OnEvent()``
    where ``Listener`` is a property of the class (or of its bases, the first opened names),
    joined through the property's RETURNS edge; then the extension methods a member call
    may run."""
    keys = []
    head, _, rest = reference.name.partition(".")
    if rest and head[:1].isupper() and head.isidentifier():
        keys += [f"{scope}|{CS_GLOBAL}|{owner}.{head}().{rest}"
                 for owner in [".".join(context), *opened[:2]] if owner]  # fmt: skip
    enclosing = [".".join(context[:cut]) for cut in range(len(context), -1, -1)]
    return keys + extension_keys(scope, reference, [*enclosing, *opened], arity)


def _joined(*parts: str) -> str:
    return ".".join(part for part in parts if part)


def csharp_namespace_of(node: ts.Node, src: Source) -> str:
    """The dotted namespace ``node`` is written in (``namespace A { namespace B { .. } }``:
    ``A.B``); empty at the top of the file."""
    names: list[str] = []
    parent = node.parent
    while parent is not None:
        if parent.type in ("namespace_declaration", "file_scoped_namespace_declaration"):
            named = parent.child_by_field_name("name")
            if named is not None:
                names.append("".join(src.text(named).split()))
        parent = parent.parent
    return ".".join(reversed(names))
