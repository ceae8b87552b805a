"""What Rust's syntax says that the grammar alone does not, for typing receivers as rustc
does (``bench/_rust_reference.py`` measures it against rustc's MIR):

- **Macros.** tree-sitter keeps a macro's arguments as a token tree, so the calls in
  ``assert_eq!(p.offset(), 0)`` or ``write!(f, "{}", self.name())`` were no calls at all. The
  standard library's formatting, assertion and ``vec!`` macros take expressions; with
  ``name!`` blanked (``source.blank_spans``: offsets kept, every text still read from the
  file as written) the parser reads a tuple or an array whose calls it parses as any other. A
  project's own macros keep their token trees: their arguments need not be expressions.
- **Values passed through**: ``?``, ``unwrap``, ``as_ref``, ``clone`` .. give back the value
  they are made on (``self.pop().unwrap().m()`` is ``m`` of what ``pop`` returns).
- **Patterns**: ``Kind::Bytes(ref x) =>`` and ``if let Some(x) = f()`` type their binding.
- **Generic parameters** by their first trait bound, and the modules a file declares
  (``mod x;``), which its ``use x::..`` paths start from.
"""

from __future__ import annotations

import re

import tree_sitter as ts

from patchstream.parsing.declared_types import declared_type
from patchstream.parsing.source import Source, blank_spans
from patchstream.parsing.type_text import DOTTED, type_parts

_EXPRESSION_MACROS = (
    "assert|assert_eq|assert_ne|debug_assert|debug_assert_eq|debug_assert_ne|"
    "write|writeln|format|format_args|print|println|eprint|eprintln|"
    "panic|unreachable|todo|unimplemented|dbg|vec"
)
# With the standard library's path (``alloc::vec!``) or none; not inside a longer name or
# after another path (``my::format!``: a project's own).
_OPENED = re.compile(rb"(?<![\w:])(?:(?:std|core|alloc)::)?(?:" + _EXPRESSION_MACROS.encode()
                     + rb")!(?=\s*[(\[])")  # fmt: skip


def with_open_macros(source: bytes) -> bytes:
    """``source`` with each standard expression macro's ``name!`` blanked: what the parser
    reads."""
    if b"!" not in source:
        return source
    return blank_spans(source, [found.span() for found in _OPENED.finditer(source)])


# ``x.unwrap()``, ``x?``, ``x.as_ref()``: the value inside (Option's, Result's, a Box's, a
# RefCell's) or the value itself. Declared types are read through the same holders
# (``declared_types``), so ``f().unwrap().m()`` is ``m`` of what ``f`` declares it returns.
PASSED_THROUGH = frozenset({
    "unwrap", "expect", "unwrap_or_default", "unwrap_unchecked", "as_ref", "as_mut", "as_deref",
    "as_deref_mut", "clone", "borrow", "borrow_mut", "to_owned", "deref", "deref_mut",
})  # fmt: skip


def passed_through(node: ts.Node, src: Source) -> ts.Node:
    """The expression a chain of ``?`` and pass-through calls is made on (``self.pop()`` for
    ``self.pop().unwrap()?``); ``node`` itself when it is neither."""
    for _ in range(_MAX_PASSED):  # a chain of them is short; a longer one stays as written
        if node.type == "try_expression" and node.named_child_count:
            node = node.named_children[0]
            continue
        callee = node.child_by_field_name("function") if node.type == "call_expression" else None
        field = callee.child_by_field_name("field") if callee is not None else None
        value = callee.child_by_field_name("value") if callee is not None else None
        if callee is None or callee.type != "field_expression" or field is None or value is None:
            return node
        if src.text(field) not in PASSED_THROUGH:
            return node
        node = value
    return node


def called_text(text: str) -> str:
    """A call's callee with the pass-through calls after it dropped: ``self.pop().unwrap``
    -> ``self.pop``; ``text`` itself when it is not such a chain, or a longer one than real
    code writes (each step scans the text: a hostile chain must not cost its square)."""
    head, dot, last = text.rpartition(".")
    for _ in range(_MAX_PASSED):
        if not (dot and last in PASSED_THROUGH and head.endswith(")")):
            return text
        opened = _opening(head)
        if opened is None:
            return text
        head, dot, last = head[:opened].rpartition(".")
        if not dot:
            return head + "." + last if head else last
        if last not in PASSED_THROUGH:
            return f"{head}.{last}"
    return text


_MAX_PASSED = 8  # pass-through calls read in a row (``.as_ref().unwrap().clone()``: three)


def _opening(text: str) -> int | None:
    """Where the argument list that ``text`` ends with opens."""
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        if text[index] == ")":
            depth += 1
        elif text[index] == "(":
            depth -= 1
            if depth == 0:
                return index
    return None


def passed_name(text: str) -> str | None:
    """``cls.clone`` (the callee of ``cls.clone()``) -> ``cls``: the name a pass-through call
    is made on, which the result stands for; None for anything else."""
    head, dot, last = text.rpartition(".")
    return head if dot and last in PASSED_THROUGH and DOTTED.match(head) else None


# A binding's type inside a ``match`` arm or an ``if let``/``while let``: (the node it holds
# in, the name, the type's parts or the call's, whether they are a call's).
PatternFact = tuple[ts.Node, str, tuple[str, ...], bool]
_SOME = frozenset({"Some", "Ok"})


def variant_payloads(root: ts.Node, src: Source) -> dict[str, str]:
    """``Enum.Variant`` (and ``Variant`` where one enum of the file has it) -> the declared
    type a one-field tuple variant holds: ``enum Class { Bytes(ClassBytes) }``."""
    found: dict[str, str] = {}
    bare: dict[str, list[str]] = {}
    for enum in root.named_children:
        body = enum.child_by_field_name("body") if enum.type == "enum_item" else None
        name = enum.child_by_field_name("name")
        for variant in body.named_children if body is not None and name else ():
            fields = variant.child_by_field_name("body")
            named = variant.child_by_field_name("name")
            held = fields.named_children if fields is not None else []
            types = [f for f in held if f.type not in ("attribute_item", "visibility_modifier")]
            if variant.type != "enum_variant" or named is None or len(types) != 1:
                continue
            if fields is None or fields.type != "ordered_field_declaration_list":
                continue
            written = declared_type(types[0], src)
            found[f"{src.text(name)}.{src.text(named)}"] = written
            bare.setdefault(src.text(named), []).append(written)
    found.update({variant: held[0] for variant, held in bare.items() if len(held) == 1})
    return found


def pattern_fact(
    holder: ts.Node, pattern: ts.Node, value: ts.Node | None, src: Source,
    payloads: dict[str, str],
) -> PatternFact | None:  # fmt: skip
    """The one name ``Class::Bytes(ref x)`` or ``Some(x)`` binds, typed by the variant's
    payload or by the call matched (``if let Some(x) = self.pop()``: what ``pop`` returns)."""
    variant = pattern.child_by_field_name("type")
    bound = [c for c in pattern.named_children if variant is None or c.id != variant.id]
    if variant is None or len(bound) != 1:
        return None
    name = _bound_name(bound[0], src)
    path = src.text(variant).replace("::", ".").split(".")
    if name is None:
        return None
    if path[-1] in _SOME:
        while value is not None and value.type in ("reference_expression", "unary_expression"):
            value = value.named_children[-1] if value.named_child_count else None
        if value is None or value.type != "call_expression":
            return None
        callee = value.child_by_field_name("function")
        text = called_text("".join(src.text(callee).split())) if callee is not None else ""
        return (holder, name, tuple(text.split(".")), True) if DOTTED.match(text) else None
    written = payloads.get(".".join(path[-2:])) or payloads.get(path[-1])
    parts = type_parts(written) if written else None
    return (holder, name, parts, False) if parts is not None else None


def _bound_name(node: ts.Node, src: Source) -> str | None:
    """``x``, ``ref x``, ``mut x``, ``ref mut x``: the name; None for any other pattern."""
    for _ in range(3):
        if node.type == "identifier":
            return src.text(node)
        if node.type not in ("ref_pattern", "mut_pattern") or not node.named_child_count:
            return None
        node = node.named_children[-1]
    return None


_GENERIC_OWNERS = frozenset({"function_item", "function_signature_item", "impl_item",
                             "trait_item", "struct_item", "enum_item"})  # fmt: skip


def generic_bound(node: ts.Node, written: str, src: Source) -> str | None:
    """The first trait bound of the type parameter ``written`` names, where the items around
    ``node`` declare one (``fn f<A: Automaton>(dfa: &A)``, ``where A: Automaton``): a call
    on an ``A`` is that trait's method. None when ``written`` is no bounded parameter."""
    if not written.isidentifier():
        return None
    current: ts.Node | None = node
    for _ in range(64):  # items nest shallowly; a pathological tree is not walked to the top
        current = current.parent if current is not None else None
        if current is None:
            return None
        if current.type not in _GENERIC_OWNERS:
            continue
        for holder in current.named_children:
            if holder.type not in ("type_parameters", "where_clause"):
                continue
            for declared in holder.named_children:
                named = declared.child_by_field_name(
                    "name" if declared.type == "type_parameter" else "left"
                )
                bounds = declared.child_by_field_name("bounds")
                if named is None or bounds is None or src.text(named) != written:
                    continue
                first = next((b for b in bounds.named_children if b.type in _BOUNDS), None)
                if first is not None:
                    return declared_type(first, src)
    return None


_BOUNDS = frozenset({"type_identifier", "scoped_type_identifier", "generic_type"})


def child_modules(root: ts.Node, src: Source) -> frozenset[str]:
    """The modules a file declares (``mod compiler;``, ``mod tests { .. }``): a ``use`` path
    that starts with one of them is relative to the file's module."""
    return frozenset(
        src.text(name)
        for item in root.named_children
        if item.type == "mod_item" and (name := item.child_by_field_name("name")) is not None
    )


def type_aliases(root: ts.Node, src: Source) -> dict[str, str]:
    """``type OwnedDFA = DFA<Vec<u32>>;`` -> ``{"OwnedDFA": "DFA"}``: the file's aliases of a
    named type (its items and its inline modules'), whose ``impl`` blocks are the type's."""
    found: dict[str, str] = {}
    items = list(root.named_children)
    for item in root.named_children:
        body = item.child_by_field_name("body") if item.type == "mod_item" else None
        items += body.named_children if body is not None else []
    for item in items:
        name, written = item.child_by_field_name("name"), item.child_by_field_name("type")
        if item.type != "type_item" or name is None or written is None:
            continue
        if written.type == "generic_type":
            written = written.child_by_field_name("type")
        if written is not None and written.type == "type_identifier":
            alias, target = src.text(name), src.text(written)
            if alias != target:  # ``type Result<T> = Result<T, Error>`` names no new type
                found[alias] = target
    return found


_DEREF_SELF = re.compile(r"\(\s*&?\s*\*+\s*self\s*\)\s*\.\s*([A-Za-z_]\w*)")


def delegated_call(node: ts.Node, written: str, src: Source) -> list[str] | None:
    """``(**self).m`` inside ``impl<A: T> T for &A`` (or ``Box<A>``, ``Arc<A>``): a reference
    handing the call to what it points at, which rustc resolves to ``T``'s ``m``. The path's
    parts (``T``, ``m``); None for any other callee, or outside a trait's impl."""
    found = _DEREF_SELF.fullmatch(written)
    if found is None:
        return None
    current: ts.Node | None = node
    for _ in range(64):  # items nest shallowly; a pathological tree is not walked to the top
        current = current.parent if current is not None else None
        if current is None or current.type == "source_file":
            return None
        if current.type == "impl_item":
            trait = current.child_by_field_name("trait")
            named = type_parts(declared_type(trait, src)) if trait is not None else None
            return [*named, found.group(1)] if named else None
    return None


def bounded_path(node: ts.Node, parts: list[str], src: Source) -> list[str] | None:
    """``E::write_u32`` in ``fn f<E: Endian>``: the bound's ``Endian::write_u32``; None when
    the path's head is no bounded type parameter of the items around ``node``."""
    bound = generic_bound(node, parts[0], src) if len(parts) == 2 else None
    named = type_parts(bound) if bound else None
    return [*named, parts[1]] if named else None
