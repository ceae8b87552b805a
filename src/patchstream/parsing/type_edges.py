"""Edges that follow types inside one file: what a function or field gives (RETURNS) and
which base method a method overrides (OVERRIDES). A mixin of the extractor."""

from __future__ import annotations

from patchstream.parsing.call_site_types import CallSiteTypes
from patchstream.parsing.cpp_language import SCOPED_LANGUAGES, scoped_lookup
from patchstream.parsing.modules import CS_GLOBAL, RB_GLOBAL, SW_GLOBAL
from patchstream.parsing.node_text import class_like
from patchstream.parsing.receiver_types import _Def
from patchstream.schemas.graph import Edge, EdgeType, Reference

_MARKED = (f"{CS_GLOBAL}.", f"{RB_GLOBAL}.", f"{SW_GLOBAL}.")  # where a written scope starts
_MARKERS = {"ruby": RB_GLOBAL, "swift": SW_GLOBAL}
_PLAIN_TYPES = frozenset({"type_identifier", "qualified_identifier"})  # no template, no int
_BY_VALUE = frozenset({"field_identifier", "array_declarator"})  # not ``*p`` nor ``&r``
_PLAIN_VALUES = frozenset({"identifier", "field_expression", "pointer_expression",
                           "qualified_identifier", "this"})  # fmt: skip


class TypeEdges(CallSiteTypes):
    edges: set[Edge]
    cpp_aliases: dict[str, str]
    opened: tuple[str, ...]

    def _scoped(
        self, target: _Def | Reference, context: str, arity: int | None = None
    ) -> _Def | Reference:
        """A reference no definition of the file binds, looked up from ``context`` outward
        (``cpp_language.scoped_lookup``): C++'s namespaces, C#'s and its opened ones
        (``arity``: a C# member call's argument count, for its extension methods)."""
        if self.language == "csharp":
            context = context or self.file_scope
            opened = (*self._bases_named(context), *self.opened)
            found = scoped_lookup(target, context, self.cpp_aliases, CS_GLOBAL, opened, arity)
        elif self.language in _MARKERS:  # a class's bases and mixins are looked in too
            opened = tuple(self._bases_named(context))
            found = scoped_lookup(target, context, None, _MARKERS[self.language], opened)
        else:
            found = scoped_lookup(target, context, self.cpp_aliases)
        assert isinstance(found, (_Def, Reference))
        return found

    def _bases_named(self, context: str) -> list[str]:
        """The full names of the bases of the class ``context`` names (C#: their nested
        types and members are in scope): a base of another file as if it were in the scope
        its name is written in, where projects mostly keep it."""
        owner, names = context, []
        while owner and owner not in self._bases:
            owner = owner.rpartition(".")[0]  # a method's class, a nested class's outer
        for base in self._bases.get(owner, ()):
            if isinstance(base, _Def):
                names.append(base.qualified_name)
            elif base.module is not None and base.module.startswith(_MARKED):
                written = base.module.split("+", 1)[0].split("#", 1)[0]
                marker = written.split(".", 1)[0]
                names.append(f"{written[len(marker) + 1 :]}.{base.name}".lstrip("."))
            elif base.module is not None and base.module in (CS_GLOBAL, RB_GLOBAL, SW_GLOBAL):
                names.append(base.name)
        return names[: 8 if self.language in _MARKERS else 2]

    def _collect_returns(self) -> None:
        """RETURNS edges from functions to the class their return annotation names, and from
        fields to the class they are declared as (reading a field returns its value), so a
        call on what another file's function or field gives can find its method."""
        functions = ((self.by_qualified.get(q), written) for q, written in self._returns.items())
        for function, written in [*functions, *self._declared_fields()]:
            if function is None or function.kind not in ("function", "variable"):
                continue
            if written == ("Self",):  # Rust's ``-> Self``: the type the impl is for
                enclosing = self._enclosing_class(function)
                written = tuple(enclosing.split(".")) if enclosing else written
            target = self._resolve_type(list(written), function)
            if self.language in SCOPED_LANGUAGES:  # a declared type: looked up where written
                target = self._scoped(target, function.qualified_name.rpartition(".")[0])
            if isinstance(target, _Def):
                names_a_class = target.kind in ("class", "interface")
            elif self.language == "cpp":  # C++ names types in any case (``node_data``)
                names_a_class = target.module is not None
            else:
                names_a_class = target.module is not None and class_like(
                    target.name.rsplit(".", 1)[-1]
                )
            if names_a_class:
                self._add(EdgeType.RETURNS, function.symbol_id, target)

    def _collect_overrides(self) -> None:
        for definition in self.defs:
            if definition.kind != "function":
                continue
            owner = definition.receiver
            parent = definition.parent
            if (
                owner is None
                and parent is not None
                and parent.kind in ("class", "interface", "impl")
            ):
                owner = parent.qualified_name
            if owner is None:
                continue
            for base in self._local_bases.get(owner, ()):
                target = self._lookup_member(base, definition.name)
                if target is not None and target is not definition:
                    self.edges.add(
                        Edge(
                            type=EdgeType.OVERRIDES, src=definition.symbol_id, dst=target.symbol_id
                        )
                    )
                    break

    def _collect_base_constructors(self) -> None:
        """C++: a constructor runs its class's bases' constructors, written in its
        initializer list or not (``EmptyIterator() {}`` runs ``Iterator()``), and those of
        the fields its class holds by value (``port::Mutex mutex_;``, ``Status status;``)."""
        built = [(d, owner) for d in self.defs if (owner := _constructed_class(d)) is not None]
        classes = {owner for _, owner in built}
        held = self._fields_held_by_value(classes) if self.language == "cpp" else {}
        for definition, owner in built:
            for base in self._bases.get(owner, ()):
                self._add(EdgeType.INSTANTIATES, definition.symbol_id, base)
            fields = held.get(owner, ())
            copied = _copied_fields(definition) if fields else frozenset()
            for name, field in fields:
                if name not in copied:
                    self._add(EdgeType.INSTANTIATES, definition.symbol_id, field)

    def _fields_held_by_value(
        self, with_constructor: set[str]
    ) -> dict[str, list[tuple[str, _Def | Reference]]]:
        """Per class of this file, the classes of the fields it holds by value: a plain or
        qualified class name (no pointer, reference, template or ``static``), resolved
        where the field is written. A class of this file counts only when it is in
        ``with_constructor`` (one without a constructor written builds nothing a call
        graph shows)."""
        held: dict[str, list[tuple[str, _Def | Reference]]] = {}
        for field, written in self._declared_fields():
            node, owner = field.node, field.parent
            type_node = node.child_by_field_name("type")
            declarator = node.child_by_field_name("declarator")
            plain = type_node is not None and type_node.type in _PLAIN_TYPES
            by_value = declarator is not None and declarator.type in _BY_VALUE
            static = any(c.type == "storage_class_specifier" for c in node.children)
            if owner is None or not plain or not by_value or static:
                continue
            target = self._resolve_type(list(written), field)
            target = self._scoped(target, field.qualified_name.rpartition(".")[0])
            if isinstance(target, _Def):
                built = target.kind == "class" and target.qualified_name in with_constructor
            else:
                built = target.module is not None
            if built:
                held.setdefault(owner.qualified_name, []).append((field.name, target))
        return held


def _constructed_class(definition: _Def) -> str | None:
    """The class ``definition`` constructs (a function named as its class, written in it
    or out of it as ``Foo::Foo``); None for any other definition."""
    if definition.kind != "function":
        return None
    owner = definition.receiver
    parent = definition.parent
    if owner is None and parent is not None and parent.kind == "class":
        owner = parent.qualified_name
    return owner if owner is not None and owner.rsplit(".", 1)[-1] == definition.name else None


def _copied_fields(constructor: _Def) -> frozenset[str]:
    """Fields the constructor's initializer list gives one plain value (``status_(s)``,
    ``comparator_(*c)``): a copy, which no call graph shows as a constructor call."""
    listed = next((c for c in constructor.node.named_children
                   if c.type == "field_initializer_list"), None)  # fmt: skip
    copied = set()
    for initializer in listed.named_children if listed is not None else ():
        named = [c for c in initializer.named_children if c.type == "field_identifier"]
        arguments = next((c for c in initializer.named_children
                          if c.type in ("argument_list", "initializer_list")), None)  # fmt: skip
        values = arguments.named_children if arguments is not None else []
        if named and len(values) == 1 and values[0].type in _PLAIN_VALUES:
            copied.add((named[0].text or b"").decode())
    return frozenset(copied)
