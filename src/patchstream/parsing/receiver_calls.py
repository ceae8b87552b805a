"""Receivers that are expressions: ``Foo(x).m()``, ``new Foo().m()``, ``make().m()``,
``items[0].m()``, ``(x as T).m()`` and chains of calls (``new Safelist().addTags(..)
.addAttributes(..)``), each typed by what its callee builds or declares it returns.
"""

from __future__ import annotations

import tree_sitter as ts

from patchstream.parsing.declared_types import cast_type
from patchstream.parsing.kotlin_types import (
    COLLECTED,
    RETURNS_RECEIVER,
    collected_call,
    plain_receiver,
    scope_receivers,
    scoped_value,
)
from patchstream.parsing.node_text import class_like, name_parts, without_generics
from patchstream.parsing.receiver_joins import ReceiverJoins
from patchstream.parsing.receiver_types import SCOPED, _Def, two_returns
from patchstream.parsing.rust_language import passed_through
from patchstream.parsing.type_text import DOTTED, type_parts
from patchstream.schemas.graph import Reference

# A member access's (receiver, member) fields per grammar, and the receivers that build.
_MEMBER_FIELDS = {"attribute": ("object", "attribute"),
                  "member_expression": ("object", "property"),
                  "selector_expression": ("operand", "field"),
                  "field_expression": ("value", "field"),
                  "member_access_expression": ("expression", "name")}  # fmt: skip
_BUILT = frozenset({"call", "call_expression", "new_expression", "parenthesized_expression",
                    "method_invocation", "object_creation_expression",
                    "invocation_expression"})  # fmt: skip
_SUBSCRIPTS = {"subscript": "value", "subscript_expression": "object"}  # Python, TypeScript
# The field of a built receiver that names what builds it (a call's default: "function").
_BUILDER_FIELDS = {"new_expression": "constructor", "method_invocation": "name",
                   "object_creation_expression": "type"}  # fmt: skip
_NAMED_HEADS = frozenset({"identifier", "field_identifier", "this", "field_expression",
                          "qualified_identifier", "member_access_expression",
                          "simple_identifier", "navigation_expression",
                          "self_expression"})  # fmt: skip
_NAMELESS = frozenset({"kotlin", "swift"})  # call expressions without field names
_CHAIN_DEPTH = 32  # calls of a chain followed back from its last; further ones stay unknown


class BuiltReceivers(ReceiverJoins):
    _arity: int | None
    # Memo of a chain's links, with whether each was a guess: long chains stay linear.
    _built: dict[tuple[int, int, str], tuple[_Def | Reference | None, bool, bool]]
    _chain_depth: int

    def _member_of_call(self, callee: ts.Node, around: _Def | None) -> _Def | Reference | None:
        """``Foo(x).m()``, ``new Foo().m()``, ``make().m()``, Go's ``NewT().M()``: ``m`` of what
        the call builds or says it returns (no name is bound, so nothing can rebind it)."""
        fields = _MEMBER_FIELDS.get(callee.type)
        if fields is None:  # a plain name: nothing was built
            return None
        receiver = callee.child_by_field_name(fields[0])
        method = callee.child_by_field_name(fields[1])
        if receiver is None or method is None:
            return None
        return self._member_of_built(receiver, self.src.text(method), around)

    def _member_of_built(
        self, receiver: ts.Node, method: str, around: _Def | None
    ) -> _Def | Reference | None:
        """``m`` of what the expression ``receiver`` builds, when it is a call or ``new``
        (Java's ``make().m()`` and ``new Foo().m()`` come here with their receiver)."""
        while receiver.type == "non_null_expression" and receiver.named_child_count:
            receiver = receiver.named_children[0]  # TypeScript's ``make()!.m()``
        if self.language == "rust":  # ``self.pop().unwrap().m()``, ``self.opt.as_ref()?.m()``
            unwrapped = passed_through(receiver, self.src)
            if unwrapped is not receiver and unwrapped.type not in _BUILT:
                return self._member_of_value(unwrapped, method, around)
            receiver = unwrapped
        if receiver.type in _SUBSCRIPTS:  # ``items[0].m()``: an item of ``items``
            held = receiver.child_by_field_name(_SUBSCRIPTS[receiver.type])
            held = held or receiver.child_by_field_name("argument")  # C++'s ``shard_[i]``
            text = "".join(self.src.text(held).split()) if held is not None else ""
            item = self._element_type(tuple(text.split(".")), "item", around)
            return self._member_of_type(item, method, around) if item else None
        if receiver.type not in _BUILT:
            return None
        if self.language == "kotlin" and receiver.type == "call_expression":
            callee = receiver.named_children[0] if receiver.named_child_count else None
            value = scoped_value(callee, RETURNS_RECEIVER, self.src)
            if value is not None:  # ``b.apply { .. }.build()``: ``apply`` gives back ``b``
                return self._member_of_value(value, method, around)
            text = without_generics("".join(self.src.text(callee).split())) if callee else ""
            if DOTTED.match(text) and text.rsplit(".", 1)[-1] in COLLECTED:
                operation = self._resolve(text.split("."), around)  # ``items.filter``
                if isinstance(operation, Reference) and (
                    collected := collected_call(f"{operation.name}().{method}")
                ):  # ``items.filter { }.joined()``: a List's
                    return Reference(name=collected, module=operation.module)
        if self.language == "cpp" and receiver.type == "call_expression":
            named = cast_type(receiver, self.src)  # ``static_cast<const T&>(*p).m()``: T's
            asserted = type_parts(named) if named is not None else None
            if asserted is not None:
                return self._member_of_type(asserted, method, around)
        inner = receiver.named_children[0] if receiver.type == "parenthesized_expression" else None
        if inner is not None and inner.type == "as_expression" and inner.named_child_count == 2:
            asserted = type_parts(self.src.text(inner.named_children[1]))  # (x as T).m()
            if asserted is None:
                return None
            return self._member_of_type(asserted, method, around)
        cast = (
            inner.child_by_field_name("type") if inner and inner.type == "cast_expression" else None
        )
        if cast is not None:  # Java's ((T) x).m()
            asserted = type_parts(without_generics(self.src.text(cast)))
            return self._member_of_type(asserted, method, around) if asserted else None
        built = receiver.child_by_field_name(_BUILDER_FIELDS.get(receiver.type, "function"))
        if built is None and receiver.type == "new_expression":  # C++'s ``(new T(..))->m()``
            built = receiver.child_by_field_name("type")
        if built is None and self.language in _NAMELESS and receiver.type == "call_expression":
            built = receiver.named_children[0] if receiver.named_child_count else None
        if built is None:
            return None
        text = without_generics("".join(self.src.text(built).split())).replace("::", ".")
        if self.language == "kotlin":
            text = plain_receiver(text)  # ``!b.build().f()``, ``b!!.build().f()``
        if self.language == "swift" and built.type == "simple_identifier" and class_like(text):
            return self._member_of_type((text,), method, around, called=False)  # ``T(..).m()``
        if receiver.type == "method_invocation" and (on := receiver.child_by_field_name("object")):
            text = f"{''.join(self.src.text(on).split())}.{text}"  # Java's ``a.b().m()``
        if not DOTTED.match(text) or (
            self.language in SCOPED
            and receiver.type in ("call_expression", "invocation_expression")
        ):
            return self._member_of_chain(receiver, method, around)  # C++: ``s.data()`` too
        called = receiver.type not in ("new_expression", "object_creation_expression")
        return self._member_of_type(tuple(text.split(".")), method, around, called=called)

    def _member_of_chain(
        self, call: ts.Node, method: str, around: _Def | None
    ) -> _Def | Reference | None:
        """``a.f(..).m()`` where ``a`` is itself built (``new Safelist().addTags(..)``): ``m``
        of what the method ``f`` found on ``a`` returns, as far as it is declared. Each link
        is resolved once (``_built``) and at most ``_CHAIN_DEPTH`` links back."""
        if call.type == "method_invocation":
            on, named = call.child_by_field_name("object"), call.child_by_field_name("name")
        elif self.language in _NAMELESS:  # ``Builder().add(x).build()``: no field names
            callee = call.named_children[0] if call.named_child_count else None
            if callee is None or callee.type != "navigation_expression":
                return None
            on, named = callee.named_children[0], callee.named_children[-1]
            if named.type == "navigation_suffix":  # Swift's ``.add``: its name inside
                named = named.child_by_field_name("suffix") or named
        else:
            callee = call.child_by_field_name("function")
            fields = _MEMBER_FIELDS.get(callee.type) if callee is not None else None
            if self.language == "cpp" and fields is not None and callee is not None:
                fields = ("argument", "field")  # C++'s field_expression (Rust's: value)
            if callee is None or fields is None:
                return None
            on, named = callee.child_by_field_name(fields[0]), callee.child_by_field_name(fields[1])
        if on is None or named is None or self._chain_depth >= _CHAIN_DEPTH:
            return None
        key = (on.start_byte, on.end_byte, self.src.text(named))
        if key not in self._built:
            self._chain_depth += 1
            guessed, inferred, arity = self._guessed, self._inferred, self._arity
            listed = call.child_by_field_name("arguments")
            self._guessed = self._inferred = False
            self._arity = (
                listed.named_child_count if listed is not None and arity is not None else None
            )
            try:
                found = self._member_of_built(on, key[2], around)
                if found is None and self.language in SCOPED and on.type in _NAMED_HEADS:
                    # ``versions_->current()->Ref()``: the head is a name, typed as any
                    # receiver is; what its method returns is the next receiver.
                    parts = [*name_parts(self.src.text(on)), key[2]]
                    found = None if "?" in parts else self._resolve(parts, around)
                self._built[key] = (found, self._guessed, self._inferred)
            finally:
                self._chain_depth -= 1
                self._guessed, self._inferred, self._arity = guessed, inferred, arity
        link, guessed, inferred = self._built[key]
        self._guessed, self._inferred = self._guessed or guessed, self._inferred or inferred
        if self.language in SCOPED and isinstance(link, Reference) and link.module is None:
            # Another file's ``T.f``: ``T.f().m``, looked up from the call's scope and
            # joined through f's RETURNS edge.
            chained = "(" not in link.name or two_returns(link.name)
            return Reference(name=f"{link.name}().{method}") if chained else None
        return self._member_of_returned(link, method)

    def _member_of_value(
        self, value: ts.Node, method: str, around: _Def | None
    ) -> _Def | Reference | None:
        """``method`` of what the expression ``value`` holds: a name typed as any receiver,
        or what a call builds or returns; None where its type is unknown."""
        if value.type in _BUILT:
            return self._member_of_built(value, method, around)
        text = "".join(self.src.text(value).split())
        if not DOTTED.match(text):
            return None
        found = self._resolve([*text.split("."), method], around)
        return None if isinstance(found, Reference) and found.module is None else found

    def _scope_member(
        self, node: ts.Node, name: str, around: _Def | None
    ) -> _Def | Reference | None:
        """Kotlin: a bare call inside a scope function's lambda (``with(b) { add(x) }``) is a
        member of that lambda's receiver when its type says so. Where the receiver is
        another file's class, a definition of this file the name reaches still wins (the
        other class's members are not known here)."""
        for value in scope_receivers(node, self.src):
            found = self._member_of_value(value, name, around)
            if isinstance(found, _Def):
                return found
            if found is not None:
                plain = self._resolve([name], around)
                return plain if isinstance(plain, _Def) else found
        return None
