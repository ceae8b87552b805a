"""Rust's standard expression macros read as the expressions they take.

tree-sitter keeps a macro's arguments as a token tree, so the calls in ``assert_eq!(p.offset(),
0)`` or ``write!(f, "{}", self.name())`` were no calls at all. The standard library's
formatting, assertion and ``vec!`` macros take expressions; with ``name!`` blanked to spaces of
its length the parser reads ``(p.offset(), 0)`` (a tuple) or ``[a(), b()]`` (an array), whose
calls it parses as any other. Offsets are unchanged, so every node's text is still read from
the file as written (``cpp_language.without_export_macros`` does the same for C++). A
project's own macros keep their token trees: their arguments need not be expressions."""

from __future__ import annotations

import re

_EXPRESSION_MACROS = (
    "assert|assert_eq|assert_ne|debug_assert|debug_assert_eq|debug_assert_ne|"
    "write|writeln|format|format_args|print|println|eprint|eprintln|"
    "panic|unreachable|todo|unimplemented|dbg|vec"
)
# Not after ``::`` (``std::format!``: a path the blank would break) or inside a name.
_OPENED = re.compile(rb"(?<![\w:])(?:" + _EXPRESSION_MACROS.encode() + rb")!(?=\s*[(\[])")


def with_open_macros(source: bytes) -> bytes:
    """``source`` with each standard expression macro's ``name!`` blanked: what the parser
    reads."""
    if b"!" not in source:
        return source
    spans = [found.span() for found in _OPENED.finditer(source)]
    if not spans:
        return source
    opened = bytearray(source)
    for start, end in spans:
        opened[start:end] = b" " * (end - start)
    return bytes(opened)
