"""JSDoc types in JavaScript (``@param {T} name``, ``@returns {T}``, ``@type {T}``): what
a checker reading JavaScript takes a value's type from, given in the shape of PHP's
docblock tags (``php_language.doc_tags``) so that ``receivers`` reads both alike."""

from __future__ import annotations

import re

# The tag, the type between braces, then a parameter's name (``[name]``, ``[name=1]``:
# optional); a name with a dot (``options.cwd``) documents a property, not a parameter.
_TAG = re.compile(
    r"@(param|arg|argument|returns?|type)[ \t]*\{([^{}\n]{1,200})\}[ \t]*"
    r"(?:\[?([A-Za-z_$][\w$]*)(?![\w$.]))?"
)
_TAGS = {"param": "param", "arg": "param", "argument": "param", "return": "return",
         "returns": "return", "type": "var"}  # fmt: skip
_NOT_CLASSES = frozenset({"null", "undefined", "void", "*", "any", "unknown"})
_MAX_DOC = 20_000  # a comment longer than this is read this far


def jsdoc_type(written: str) -> str | None:
    """The one type a JSDoc type names (``?ForkContext``, ``ForkContext|null`` ->
    ``ForkContext``; ``Foo[]`` and ``Array<Foo>`` stay as written); None for primitives and
    unions of several types."""
    options = [o.strip().lstrip("?!").rstrip("=") for o in written.split("|")]
    named = [o for o in options if o and o not in _NOT_CLASSES]
    if len(named) != 1 or not named[0][:1].isupper():
        return None
    return named[0]


def jsdoc_tags(comment: str) -> list[tuple[str, str | None, str]]:
    """``(tag, parameter or None, type)`` for each ``@param``, ``@returns`` (as ``return``)
    and ``@type`` (as ``var``) of a ``/** */`` comment that names one type."""
    if not comment.startswith("/**"):
        return []
    found = []
    for match in _TAG.finditer(comment[:_MAX_DOC]):
        tag, typed, name = _TAGS[match.group(1)], jsdoc_type(match.group(2)), match.group(3)
        if typed is not None and (tag != "param" or name):
            found.append((tag, name if tag == "param" else None, typed))
    return found
