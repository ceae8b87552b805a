"""PHP's own rules for extraction: the types its docblocks declare.

PHP code states many types only in docblocks (``@param Node $node``, ``@var Lexer``,
``@return Name``), as static analysers read them; they type receivers here as declarations
do. Each docblock is untrusted text: bounded, and read line by line with bounded patterns.
"""

from __future__ import annotations

import re

from patchstream.parsing.source import php_name

_MAX_DOC = 8192  # characters of one docblock read; the rest is prose
_TAG = re.compile(
    r"@(param|var|return)[ \t]{1,40}([\\\w|?\[\]]{1,200})"
    r"(?:[ \t]{1,40}&?(?:\.\.\.)?\$(\w{1,100}))?"
)
# A docblock's scalar and pseudo types: nothing to call a method on.
_NOT_CLASSES = frozenset(
    {"null", "mixed", "string", "int", "integer", "float", "bool", "boolean", "array", "void",
     "callable", "iterable", "object", "false", "true", "resource", "never", "self", "static",
     "$this", "double", "list", "scalar", "numeric"}
)  # fmt: skip


def doc_type(written: str) -> str | None:
    """The one class a docblock type names (``Node|null`` -> ``Node``; ``Node[]`` stays an
    array of Node), in dotted notation; None for scalars and unions of several classes."""
    options = [o.lstrip("?") for o in written.split("|")]
    classes = [o for o in options if o.lower().removesuffix("[]") not in _NOT_CLASSES and o]
    if len(classes) != 1:
        return None
    return php_name(classes[0])


def doc_tags(comment: str) -> list[tuple[str, str | None, str]]:
    """``(tag, variable or None, dotted type)`` for each ``@param``, ``@var`` and
    ``@return`` of a docblock that names one class."""
    if not comment.startswith("/**"):
        return []
    found = []
    for match in _TAG.finditer(comment[:_MAX_DOC]):
        typed = doc_type(match.group(2))
        if typed is not None:
            found.append((match.group(1), match.group(3), typed))
    return found
