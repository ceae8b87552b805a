"""Receivers another file types: the references the graph joins at read time.

A mixin between ``ReceiverTypes`` (which asks for these) and ``Resolution``: a callback's
parameter typed by the callee's signature (``<callee>(*).m``, CALLBACK_PARAM edges) and a
field of another file's class (``T.field().m``, the field's RETURNS edge), with the facts
behind the edges those joins read.
"""

from __future__ import annotations

from collections.abc import Iterator

from patchstream.parsing.element_facts import callback_parameter_types
from patchstream.parsing.modules import SW_GLOBAL
from patchstream.parsing.node_text import class_like
from patchstream.parsing.receiver_types import (
    SCOPED,
    ReceiverTypes,
    _Def,
    is_self,
    joined,
)
from patchstream.parsing.swift_library import function_typed_parameters
from patchstream.parsing.type_text import type_parts
from patchstream.schemas.graph import Reference

_MAX_CALLBACK_DEPTH = 4


class ReceiverJoins(ReceiverTypes):
    def _callback_parameter_targets(self) -> list[tuple[_Def, _Def | Reference]]:
        """(function, a class that a callback parameter of one of its parameters declares):
        the facts behind CALLBACK_PARAM edges. A constructor's belong to its class, which is
        what ``new C(cb)`` names."""
        if self.language == "swift":
            return self._swift_callback_targets()
        if self.language not in ("typescript", "tsx"):
            return []
        found: list[tuple[_Def, _Def | Reference]] = []
        for definition in self.defs:
            listed = definition.node.child_by_field_name("parameters")
            if definition.kind != "function" or listed is None:
                continue
            owner, parent = definition, definition.parent
            if definition.name == "constructor" and parent is not None and parent.kind == "class":
                owner = parent
            for parameter in listed.named_children:
                for parts in callback_parameter_types(parameter, self.src):
                    target = self._resolve_type(list(parts), definition)
                    if isinstance(target, _Def):
                        if target.kind in ("class", "interface"):
                            found.append((owner, target))
                    elif target.module is not None and class_like(parts[-1]):
                        found.append((owner, target))
        return found

    def _swift_callback_targets(self) -> list[tuple[_Def, _Def | Reference]]:
        """As for TypeScript: a Swift function's closure-typed parameters' parameter types."""
        found: list[tuple[_Def, _Def | Reference]] = []
        for definition in (d for d in self.defs if d.kind == "function"):
            for written in function_typed_parameters(definition.node, self.src):
                parts = type_parts(written)
                target = self._resolve_type(list(parts), definition) if parts else None
                target = self._scoped(target, definition.qualified_name) if target else None
                typed = isinstance(target, _Def) and target.kind in ("class", "interface")
                named = isinstance(target, Reference) and class_like(written.rsplit(".", 1)[-1])
                if target is not None and (typed or named):
                    found.append((definition, target))
        return found

    def _callback_member(
        self, callee: tuple[str, ...], method: str, around: _Def | None, depth: int = 0
    ) -> Reference | None:
        """``m`` of a parameter of a function passed to ``callee``: the reference
        ``<callee>(*).m`` in the callee's module, which the graph joins through the callee's
        CALLBACK_PARAM edges (statements.CALLERS_THROUGH_CALLBACKS). The join does not know
        which of the callee's callback parameters this is, so the call is ``inferred``."""
        owner = self._resolve_type(list(callee), around)
        if isinstance(owner, Reference) and owner.module is None and len(callee) >= 2:
            # ``scheduler.schedule(function () { this.schedule() })``: a method of the
            # receiver's type, when the file knows it. A callback's parameter named as the
            # receiver it is passed to (``runner.on(E, function (runner) { runner.on() })``)
            # would lead here again: a few steps, then unknown.
            if depth >= _MAX_CALLBACK_DEPTH:
                return None
            owner = self._typed_member(list(callee), around, depth + 1) or owner
        if isinstance(owner, Reference):
            # Unknown, or itself a join (``source.subscribe(x => ...)``): None.
            found = joined(owner, f"(*).{method}")
            if found is None:
                return None
        elif owner.kind in ("function", "class"):
            module = SW_GLOBAL if self.language == "swift" else self.module  # Swift's keys
            found = Reference(name=f"{owner.qualified_name}(*).{method}", module=module)
        else:
            return None
        self._inferred = True
        return found

    def _declared_fields(self) -> Iterator[tuple[_Def, tuple[str, ...]]]:
        """(a field's definition, its declared type): class-level declarations only, as a
        constructor call's guess is no declaration."""
        fields = {d.qualified_name: d for d in self.defs if d.kind == "variable"}
        for owner, attributes in self._attr_types.items():
            for name, typed in attributes.items():
                field = fields.get(f"{owner}.{name}")
                if field is not None and typed.parts and typed.declared and not typed.through:
                    yield field, typed.parts

    def _field_reference(
        self, receiver: list[str], method: str, around: _Def | None
    ) -> Reference | None:
        """``t.pending.m()`` where ``t``'s class is another file's, or ``Other.FIELD.m()``: the
        reference ``T.pending().m`` in T's module, which the graph joins through the field's
        RETURNS edge (its declared type) as for a function's."""
        if len(receiver) != 2 or (class_like(receiver[1]) and self.language != "csharp"):
            return None  # (C# names its properties like classes)
        if is_self(receiver[0], self.language):
            return self._base_field_reference(receiver[1], method, around)
        typed = self._variable_type(receiver[0], around)
        if typed is not None:
            parts = self._held_type(typed, around)
            if parts is None:
                return None
            owner = self._resolve_type(list(parts), around)
        elif class_like(receiver[0]):  # a static field of a class
            owner = self._resolve_type([receiver[0]], around)
        else:
            return None
        if self.language in SCOPED and isinstance(owner, Reference) and owner.module is None:
            # Another file's class: ``T.field().m`` looked up from the call's scope.
            return Reference(name=f"{owner.name}.{receiver[1]}().{method}")
        found = joined(owner, f".{receiver[1]}().{method}")
        if found is not None:
            self._note(typed)
        return found

    def _base_field_reference(
        self, field: str, method: str, around: _Def | None
    ) -> Reference | None:
        """Java's ``tokeniser.m()`` in a class whose base (another file's) declares the field
        ``tokeniser``: ``Base.tokeniser().m``, joined like any field's."""
        owner = self._enclosing_class(around)
        if owner is None or self._attribute_type(owner, field) is not None:
            return None
        imported = (b for b in self._bases.get(owner, ()) if isinstance(b, Reference) and b.module)
        return joined(next(imported, None), f".{field}().{method}")
