"""Text of syntax nodes, sliced from the bytes that were parsed.

Trees parsed through a read callback do not keep the source, so ``Node.text`` would go back
to the callback; slicing our own bytes is exact and much cheaper.
"""

from __future__ import annotations

import re

import tree_sitter as ts


class Source:
    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def raw(self, node: ts.Node | None) -> bytes:
        return b"" if node is None else self.data[node.start_byte : node.end_byte]

    def text(self, node: ts.Node | None) -> str:
        return self.raw(node).decode("utf-8", "replace")


# PHP's names as the rest of extraction reads names: ``$this->lexer`` is ``this.lexer``,
# ``Lexer\Emulative`` is ``Lexer.Emulative``, a fully qualified ``\PhpParser\foo`` is
# ``global.PhpParser.foo`` (``global`` is reserved in PHP: no namespace has that name),
# ``self::``/``static::`` are ``this.`` and ``parent::`` is ``super.``.
_PHP_NAMES = frozenset(
    {
        "name",
        "qualified_name",
        "namespace_name",
        "variable_name",
        "member_access_expression",
        "nullsafe_member_access_expression",
        "scoped_property_access_expression",
        "class_constant_access_expression",
        "relative_scope",
        "named_type",
        "optional_type",
    }
)
_PHP_SCOPES = {"self": "this", "static": "this", "parent": "super"}
_PHP_SEPARATORS = re.compile(r"\?->|->|::|\\")


def php_name(text: str, relative_scope: bool = False) -> str:
    """A PHP name or access chain in dotted notation (see ``_PHP_NAMES``);
    ``relative_scope``: the text is ``self``, ``static`` or ``parent`` before ``::``, never
    a method of that name (``$node->parent()``)."""
    cleaned = "".join(text.split()).replace("$", "").lstrip("?")
    rooted = cleaned.startswith("\\")
    dotted = _PHP_SEPARATORS.sub(".", cleaned.lstrip("\\"))
    if relative_scope:
        dotted = _PHP_SCOPES.get(dotted, dotted)
    return f"global.{dotted}" if rooted else dotted


class PhpSource(Source):
    """PHP's source: names and access chains read in dotted notation (``php_name``);
    everything else (signatures, bodies) as written."""

    __slots__ = ()

    def text(self, node: ts.Node | None) -> str:
        written = super().text(node)
        if node is not None and node.type in _PHP_NAMES:
            return php_name(written, node.type == "relative_scope")
        return written


class RubySource(Source):
    """Ruby's source: an instance or class variable (``@body``, ``@@count``) read as the
    object's attribute (``self.body``); everything else as written."""

    __slots__ = ()

    def text(self, node: ts.Node | None) -> str:
        written = super().text(node)
        if node is not None and node.type in ("instance_variable", "class_variable"):
            return "self." + written.lstrip("@")
        return written


def blank_spans(source: bytes, spans: list[tuple[int, int]]) -> bytes:
    """``source`` with each span replaced by spaces of its length: what a parser reads where
    a macro would mislead it (C++'s export macros, Rust's ``format!``). Offsets are unchanged,
    so every node's text is still read from the file as written."""
    if not spans:
        return source
    blanked = bytearray(source)
    for start, end in spans:
        blanked[start:end] = b" " * (end - start)
    return bytes(blanked)
