"""What a definition's syntax says as text, and where it sits: written names split into
parts, signatures, first doc lines, body boundaries for chunking, and whether two
definitions are in different branches of one ``if``/``try``. Pure functions of nodes."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import tree_sitter as ts

from patchstream.parsing.source import Source

_COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment"})
_WRAPPERS = frozenset({"export_statement", "decorated_definition"})
_MAX_SIGNATURE = 300
# A trailing ``?``, ``!`` or ``=``: Ruby's predicates, mutators and setters (``empty?``);
# digits alone: a Rust tuple struct's field (``self.0``).
_IDENT = re.compile(r"^(?:[A-Za-z_$][A-Za-z0-9_$]*[?!=]?|[0-9]+)$")


def name_parts(text: str) -> list[str]:
    """Split a written callee/type (``a.b``, ``a::b``, ``a->b``, ``Foo<T>``, TypeScript's
    ``a!.b`` and ``a?.b``) into parts.

    A part that is not an identifier (a call result, an index) becomes ``"?"``.
    """
    if len(text) > _CACHED_NAME_CHARS:  # a pathological file's long texts are not kept
        return list(_split_name(text))
    return list(_name_parts(text))


# A file writes the same few names again and again (``self``, ``np.asarray``): extraction
# splits ~500 a file.
_CACHED_NAME_CHARS = 200


@lru_cache(maxsize=16384)
def _name_parts(text: str) -> tuple[str, ...]:
    return _split_name(text)


def _split_name(text: str) -> tuple[str, ...]:
    cleaned = without_generics("".join(text.split()))
    cleaned = cleaned.replace("?.", ".").replace("!!.", ".").replace("!.", ".").replace("::", ".")
    cleaned = cleaned.replace("->", ".").replace("&", "")
    cleaned = cleaned.replace("*", "")
    return tuple(part if _IDENT.match(part) else "?" for part in cleaned.split("."))


def class_like(name: str) -> bool:
    """By convention a class: ``Foo``, ``_OptionParser`` (private), not ``CONSTANT``."""
    bare = name.lstrip("_")
    return bare[:1].isupper() and not bare.isupper()


def without_generics(text: str) -> str:
    """``text`` without balanced ``<...>`` groups, nested ones included, in one pass (an
    unmatched ``<`` or ``>`` stays, as repeated removal of innermost groups would leave it)."""
    if "<" not in text:
        return text
    out: list[str] = []
    opened: list[int] = []
    for char in text:
        if char == "<":
            opened.append(len(out))
            out.append(char)
        elif char == ">" and opened:
            del out[opened.pop() :]
        else:
            out.append(char)
    return "".join(out)


def signature_of(node: ts.Node, src: Source) -> str:
    body = node.child_by_field_name("body")
    if body is None:
        value = node.child_by_field_name("value")
        if value is not None and value.type in ("arrow_function", "function_expression"):
            body = value.child_by_field_name("body")
    raw = src.raw(node)
    if body is not None:
        raw = raw[: body.start_byte - node.start_byte]
    else:
        raw = raw.split(b"\n", 1)[0]
    text = " ".join(raw.decode("utf-8", "replace").split())
    text = text.rstrip("{: ").rstrip() if body is not None or text.endswith("{") else text
    if text.endswith("=>"):
        text = text[:-2].rstrip()
    return text[:_MAX_SIGNATURE]


def _clean_comment(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip().removesuffix("*/").strip()
        stripped = stripped.lstrip("/*!#").strip()
        if stripped:
            return stripped[:_MAX_SIGNATURE]
    return ""


def first_doc_line(node: ts.Node, language: str, src: Source) -> str | None:
    if language == "python":
        body = node.child_by_field_name("body")
        first = body.named_children[0] if body is not None and body.named_children else None
        if first is not None and first.type == "expression_statement":
            string = first.named_children[0] if first.named_children else None
            if string is not None and string.type == "string":
                content = "".join(
                    src.text(part)
                    for part in string.named_children
                    if part.type == "string_content"
                )
                return _clean_comment(content) or None
        return None
    anchor = node
    while anchor.parent is not None and anchor.parent.type in _WRAPPERS:
        anchor = anchor.parent
    comment = anchor.prev_named_sibling
    if comment is None or comment.type not in _COMMENT_TYPES:
        return None
    if comment.end_point.row < anchor.start_point.row - 1:
        return None
    # Walk up to the first line of a run of line comments (/// a \n /// b).
    while True:
        before = comment.prev_named_sibling
        if (
            before is None
            or before.type not in _COMMENT_TYPES
            or before.end_point.row != comment.start_point.row - 1
        ):
            break
        comment = before
    return _clean_comment(src.text(comment)) or None


def body_boundaries(node: ts.Node) -> tuple[int, ...]:
    """1-based lines where the statements of a definition's body start."""
    body = node.child_by_field_name("body")
    if body is None:
        value = node.child_by_field_name("value")
        body = value.child_by_field_name("body") if value is not None else None
    if body is None:
        return ()
    container = body
    # Go wraps statements in a statement_list inside the block.
    if len(body.named_children) == 1 and body.named_children[0].type == "statement_list":
        container = body.named_children[0]
    return tuple(child.start_point.row + 1 for child in container.named_children)


_BRANCHING = frozenset({"if_statement", "try_statement"})


def in_other_branches(first: ts.Node, later: ts.Node) -> bool:
    """Whether the two nodes sit in different branches of one ``if``/``try`` (their lowest
    common ancestor is the statement itself, not a block inside it)."""
    ancestors: dict[tuple[int, int, str], ts.Node] = {}
    node: ts.Node | None = first.parent
    while node is not None:
        ancestors[(node.start_byte, node.end_byte, node.type)] = node
        node = node.parent
    node = later.parent
    while node is not None:
        if (node.start_byte, node.end_byte, node.type) in ancestors:
            return node.type in _BRANCHING
        node = node.parent
    return False


def written_callee(callee: ts.Node, src: Source) -> str:
    """A callee's text. ``a - b!.m()`` is the one exception: tree-sitter-typescript parses it
    as ``(a - b)!.m()`` (its ``!`` binds looser than a binary operator), whose receiver is
    ``b``: the text is then ``b.m``."""
    held = callee.child_by_field_name("object") if callee.type == "member_expression" else None
    member = callee.child_by_field_name("property")
    if held is None or member is None or held.type != "non_null_expression":
        return src.text(callee)
    inner = held.named_children[0] if held.named_child_count == 1 else None
    if inner is None or inner.type != "binary_expression":
        return src.text(callee)
    while inner.type == "binary_expression" and (right := inner.child_by_field_name("right")):
        inner = right
    return f"{src.text(inner)}.{src.text(member)}"


def python_parameters(definition: ts.Node, read: Callable[[ts.Node], str]) -> list[str]:
    """A Python function's parameter names in order (``*args``/``**kwargs`` left out)."""
    listed = definition.child_by_field_name("parameters")
    names: list[str] = []
    for parameter in listed.named_children if listed is not None else []:
        if parameter.type == "identifier":
            names.append(read(parameter))
        elif parameter.type in ("default_parameter", "typed_default_parameter"):
            name = parameter.child_by_field_name("name")
            if name is not None:
                names.append(read(name))
        elif parameter.type == "typed_parameter":
            first = parameter.named_children[0] if parameter.named_child_count else None
            if first is not None and first.type == "identifier":
                names.append(read(first))
    return names
