"""Name resolution inside one file: scopes, members, bases and receiver types.

The extractor inherits it. A written name (``helper``, ``self.adapter.send``,
``super().send``) becomes a definition of this file when the file can tell, or a
``Reference`` for the graph to join across files by its candidate keys.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import tree_sitter as ts

from patchstream.parsing.modules import ImportBinding
from patchstream.parsing.receivers import DOTTED, TypeFact, type_facts, type_parts
from patchstream.parsing.source import Source
from patchstream.schemas.graph import CallResolution, Reference

_SELF_WORDS = frozenset({"self", "this", "cls", "Self"})
# Where a constructor call's type is a guess (the name may be rebound to anything later);
# in the statically typed languages ``x := T{}`` / ``new Foo()`` fixes the type.
_GUESSED_FROM_CALLS = frozenset({"python", "javascript"})


@dataclass
class _Def:
    kind: str
    node: ts.Node
    name_node: ts.Node
    name: str
    receiver: str | None = None
    parent: _Def | None = None
    qualified_name: str = ""
    symbol_id: str = ""
    alternative: bool = False  # one of a name's definitions in different if/try branches


@dataclass(frozen=True)
class _Typed:
    """A name's type as far as the file tells (None: ambiguous), and whether declared."""

    parts: tuple[str, ...] | None
    declared: bool
    element: bool = False  # ``parts`` is a call whose result's elements the name takes


class Resolution:
    """Lookups over the definitions, imports and type facts the extractor collected."""

    language: str
    tree: ts.Tree
    src: Source
    by_qualified: dict[str, _Def]
    bindings: dict[str, ImportBinding]
    scoped_bindings: dict[tuple[str, str], ImportBinding]  # (function, name): its own imports
    def_by_name_node: dict[tuple[int, int], _Def]

    def _init_resolution(self) -> None:
        self._local_bases: dict[str, list[str]] = defaultdict(list)
        # Every base as resolved (local or imported), in declaration order: super() and
        # inherited members walk it.
        self._bases: dict[str, list[_Def | Reference]] = defaultdict(list)
        # Receiver types: scope qualified name ("" for the module) -> name -> type;
        # class qualified name -> attribute -> type; function -> returned type.
        self._var_types: dict[str, dict[str, _Typed]] = defaultdict(dict)
        self._attr_types: dict[str, dict[str, _Typed]] = defaultdict(dict)
        self._returns: dict[str, tuple[str, ...]] = {}
        self._element_returns: dict[str, tuple[str, ...]] = {}  # -> list[T] and the like
        # Qualified name of an alias (``scope.name``) -> what it names (None: ambiguous).
        self._aliases: dict[str, tuple[str, ...] | None] = {}
        self._alias_depth = 0
        self._typing = False
        # Set while resolving one call when a type on its way came from a constructor call.
        self._guessed = False

    def _certainty(self) -> CallResolution:
        """The resolution of the call just resolved (``_guessed`` is reset before each)."""
        guessed = self._guessed and self.language in _GUESSED_FROM_CALLS
        return CallResolution.INFERRED if guessed else CallResolution.EXACT

    def _note(self, typed: _Typed | None) -> None:
        if typed is not None and typed.parts is not None and not typed.declared:
            self._guessed = True

    def _enclosing_def(self, node: ts.Node) -> _Def | None:
        raise NotImplementedError

    def _scopes(self, around: _Def | None) -> list[str]:
        """Qualified-name prefixes to try for a bare name, innermost first, module last."""
        prefixes: list[str] = []
        current = around
        while current is not None:
            is_class = current.kind in ("class", "interface", "impl")
            if not (is_class and self.language == "python"):
                prefixes.append(current.qualified_name)
            current = current.parent
        prefixes.append("")
        return prefixes

    def _enclosing_class(self, around: _Def | None) -> str | None:
        current = around
        while current is not None:
            if current.receiver is not None:
                return current.receiver
            if current.kind in ("class", "interface", "impl"):
                return current.qualified_name
            if self._rebinds_self(current):
                return None  # a nested ``def f(self)``: its own ``self``, of an unknown class
            current = current.parent
        return None

    def _rebinds_self(self, function: _Def) -> bool:
        """A Python function outside a class body whose first parameter is ``self``/``cls``
        (a method built in a closure and attached elsewhere): ``self`` is not the class
        around it."""
        if self.language != "python" or function.kind != "function":
            return False
        if function.parent is None or function.parent.kind != "function":
            return False
        parameters = function.node.child_by_field_name("parameters")
        first = parameters.named_children[0] if parameters and parameters.named_children else None
        return first is not None and self.src.text(first) in ("self", "cls")

    def _resolve(self, parts: list[str], around: _Def | None) -> _Def | Reference:
        """A local definition for the written name, or a reference to resolve elsewhere."""
        if "?" in parts[:-1] or not parts or parts[-1] == "?":
            last = parts[-1] if parts and parts[-1] != "?" else "?"
            return Reference(name=last)
        if parts == ["cls"] and (owner := self._enclosing_class(around)) is not None:
            found = self.by_qualified.get(owner)
            if found is not None:
                return found  # cls(): the class itself
        if parts[0] in _SELF_WORDS and len(parts) == 2:
            owner = self._enclosing_class(around)
            if owner is not None:
                member = self._member(owner, parts[1])
                if member is not None:
                    return member
            return Reference(name=".".join(parts))
        if len(parts) >= 2 and not self._typing:
            guessed = self._guessed
            typed = self._typed_member(parts, around)
            if typed is not None:
                return typed
            self._guessed = guessed  # no type helped: what follows is a name binding
        dotted = ".".join(parts)
        if len(parts) == 1:
            for prefix in self._scopes(around):
                key = f"{prefix}.{dotted}" if prefix else dotted
                named = self._via_alias(key, around)
                if named is not None:
                    return named
                local = self.by_qualified.get(key)
                if local is not None:
                    return local
        else:
            local = self.by_qualified.get(dotted)
            if local is not None:
                return local
            container = self.by_qualified.get(".".join(parts[:-1]))
            if container is not None and container.kind in ("class", "interface"):
                member = self._member(container.qualified_name, parts[-1])  # Base.__init__(self)
                if member is not None:
                    return member
        for cut in range(len(parts), 0, -1):
            binding = self._binding(".".join(parts[:cut]), around)
            if binding is None:
                continue
            rest = ".".join(parts[cut:])
            if binding.name:
                name = f"{binding.name}.{rest}" if rest else binding.name
            else:
                name = rest
            return Reference(name=name, module=binding.module)
        return Reference(name=dotted)

    def _binding(self, name: str, around: _Def | None) -> ImportBinding | None:
        """What an import binds ``name`` to, innermost function first, then the module."""
        scope = around
        while scope is not None and self.scoped_bindings:
            found = self.scoped_bindings.get((scope.qualified_name, name))
            if found is not None:
                return found
            scope = scope.parent
        return self.bindings.get(name)

    def _via_alias(self, key: str, around: _Def | None) -> _Def | Reference | None:
        """What the alias ``key`` names, when that is a function, a class or an import."""
        named = self._aliases.get(key)
        if named is None or self._alias_depth > 3:
            return None
        self._alias_depth += 1
        try:
            target = self._resolve(list(named), around)
        finally:
            self._alias_depth -= 1
        if isinstance(target, _Def):
            return target if target.kind in ("function", "class") else None
        return target if target.module is not None else None

    def _lookup_member(self, owner: str, member: str) -> _Def | None:
        """``owner.member`` in this file, searching local base classes breadth first."""
        queue = [owner]
        visited: set[str] = set()
        while queue:
            current = queue.pop(0)
            if current in visited:
                continue
            visited.add(current)
            found = self.by_qualified.get(f"{current}.{member}")
            if found is not None:
                return found
            queue.extend(self._local_bases.get(current, ()))
        return None

    # -- receivers ---------------------------------------------------------------------------

    def _collect_type_facts(self) -> None:
        for fact in type_facts(self.tree, self.language, self.src):
            around = self._enclosing_def(fact.node)
            if fact.alias and fact.owner is not None:  # self.command = command
                owner = self._enclosing_class(around) if fact.owner in _SELF_WORDS else None
                source = self._var_types.get(around.qualified_name if around else "", {})
                typed = source.get(fact.type_parts[0]) if len(fact.type_parts) == 1 else None
                if owner is not None and typed is not None and typed.parts and not typed.element:
                    copied = TypeFact(fact.node, fact.name, typed.parts,
                                      from_call=not typed.declared)  # fmt: skip
                    _bind(self._attr_types[owner], fact.name, copied)
                continue
            if fact.alias:
                key = f"{around.qualified_name}.{fact.name}" if around else fact.name
                known = self._aliases.get(key, fact.type_parts)
                self._aliases[key] = fact.type_parts if known == fact.type_parts else None
                continue
            if fact.returns:
                function = self.def_by_name_node.get(
                    (fact.node.child_by_field_name("name").start_byte,  # type: ignore[union-attr]
                     fact.node.child_by_field_name("name").end_byte)  # type: ignore[union-attr]
                )  # fmt: skip
                if function is not None:
                    returns = self._element_returns if fact.element else self._returns
                    returns[function.qualified_name] = fact.type_parts
                continue
            if fact.owner is not None:
                owner = self._enclosing_class(around) if fact.owner in _SELF_WORDS else None
                if owner is not None:
                    _bind(self._attr_types[owner], fact.name, fact)
            elif around is not None and around.kind in ("class", "interface"):
                _bind(self._attr_types[around.qualified_name], fact.name, fact)
            else:
                _bind(self._var_types[around.qualified_name if around else ""], fact.name, fact)

    def _resolve_type(self, parts: list[str], around: _Def | None) -> _Def | Reference:
        """A type's name resolved as written: no receiver typing inside (that would recurse)."""
        self._typing = True
        try:
            return self._resolve(parts, around)
        finally:
            self._typing = False

    def _variable_type(self, name: str, around: _Def | None) -> _Typed | None:
        """A name's type in the innermost scope around ``around`` that binds it."""
        scope = around
        while scope is not None:
            typed = self._var_types.get(scope.qualified_name, {}).get(name)
            if typed is not None:
                return typed
            scope = scope.parent
        return self._var_types.get("", {}).get(name)

    def _typed_member(
        self, parts: list[str], around: _Def | None, depth: int = 0
    ) -> _Def | Reference | None:
        """``recv.m`` where ``recv`` has a known type: ``T.m`` as far as this file can tell."""
        receiver, method = parts[:-1], parts[-1]
        known: tuple[str, ...] | None = None
        if receiver[0] in _SELF_WORDS and len(receiver) == 2:
            owner = self._enclosing_class(around)
            known = self._attribute_type(owner, receiver[1]) if owner else None
        elif len(receiver) >= 2:
            # ``l.store.Put()``, ``self.a.b.m()``: the type of the head, then of each field.
            known = self._chain_type(receiver, around)
        elif len(receiver) == 1:
            typed = self._variable_type(receiver[0], around)
            self._note(typed)
            known = typed.parts if typed is not None else None
            if typed is not None and typed.element and known is not None:
                known = self._element_of_call(known, around, depth)
        if known is None:
            return None
        return self._member_of_type(known, method, around, depth)

    def _member_of_type(
        self, known: tuple[str, ...], method: str, around: _Def | None, depth: int = 0
    ) -> _Def | Reference | None:
        owner = self._resolve_type(list(known), around)
        if isinstance(owner, Reference) and owner.module is None and len(known) >= 2:
            # ``x = ctx.make_formatter()``: the method's own return annotation, when the
            # receiver's type is known and the method is defined here.
            via = self._typed_member(list(known), around, depth + 1) if depth < 2 else None
            if isinstance(via, _Def) and via.kind == "function":
                returned = self._returns.get(via.qualified_name)
                if returned is not None:
                    return self._member_of_type(returned, method, via, depth + 1)
            return None
        if isinstance(owner, Reference):
            last = owner.name.rsplit(".", 1)[-1]
            if owner.module is None or not class_like(last):
                return None  # a function of another file: its return type is not known here
            return Reference(name=f"{owner.name}.{method}", module=owner.module)
        if owner.kind == "function":  # a factory: what it says it returns
            returned = self._returns.get(owner.qualified_name)
            if returned is None or depth > 2:
                return None
            return self._member_of_type(returned, method, owner, depth + 1)
        return self._member(owner.qualified_name, method)

    def _chain_type(self, receiver: list[str], around: _Def | None) -> tuple[str, ...] | None:
        """The type of ``a.b.c`` from the type of ``a`` and the declared types of its fields."""
        owner: _Def | Reference | None = None
        if receiver[0] in _SELF_WORDS:
            name = self._enclosing_class(around)
            owner = self.by_qualified.get(name) if name else None
        else:
            typed = self._variable_type(receiver[0], around)
            if typed is None or typed.parts is None or typed.element:
                return None
            self._note(typed)
            owner = self._resolve_type(list(typed.parts), around)
        known: tuple[str, ...] | None = None
        for attribute in receiver[1:]:
            if not isinstance(owner, _Def) or owner.kind not in ("class", "interface"):
                return None
            known = self._attribute_type(owner.qualified_name, attribute)
            if known is None:
                return None
            owner = self._resolve_type(list(known), around)
        return known

    def _element_of_call(
        self, call: tuple[str, ...], around: _Def | None, depth: int
    ) -> tuple[str, ...] | None:
        """The element type of what ``call(...)`` returns (``-> list[T]``), if annotated here."""
        target = self._resolve_type(list(call), around)
        if isinstance(target, Reference) and target.module is None and len(call) >= 2:
            found = self._typed_member(list(call), around, depth + 1) if depth < 2 else None
            target = found if found is not None else target
        if isinstance(target, _Def) and target.kind == "function":
            return self._element_returns.get(target.qualified_name)
        return None

    def _attribute_type(self, owner: str, attribute: str) -> tuple[str, ...] | None:
        queue, seen = [owner], set()
        while queue:
            current = queue.pop(0)
            if current in seen:
                continue
            seen.add(current)
            found = self._attr_types.get(current, {}).get(attribute)
            if found is not None:
                self._note(found)
                return found.parts
            queue.extend(self._local_bases.get(current, ()))
        return None

    def _member(self, owner: str, member: str) -> _Def | Reference | None:
        """``owner.member`` here, or through the first imported base that may define it."""
        local = self._lookup_member(owner, member)
        if local is not None and local.kind == "variable":
            named = self._via_alias(local.qualified_name, local.parent)
            return named if named is not None else local
        if local is not None:
            return local
        queue, seen = [owner], set()
        while queue:
            current = queue.pop(0)
            if current in seen:
                continue
            seen.add(current)
            for base in self._bases.get(current, ()):
                if isinstance(base, _Def):
                    queue.append(base.qualified_name)
                elif base.module is not None:
                    return Reference(name=f"{base.name}.{member}", module=base.module)
        return None

    def _member_of_call(self, callee: ts.Node, around: _Def | None) -> _Def | Reference | None:
        """``Foo(x).m()``, ``new Foo().m()``, ``make().m()``, Go's ``NewT().M()``: ``m`` of what
        the call builds or says it returns (no name is bound, so nothing can rebind it)."""
        receiver = callee.child_by_field_name("object") or callee.child_by_field_name("operand")
        method = (callee.child_by_field_name("attribute") or callee.child_by_field_name("property")
                  or callee.child_by_field_name("field"))  # fmt: skip
        if receiver is None or method is None:
            return None
        inner = receiver.named_children[0] if receiver.type == "parenthesized_expression" else None
        if inner is not None and inner.type == "as_expression" and inner.named_child_count == 2:
            asserted = type_parts(self.src.text(inner.named_children[1]))  # (x as T).m()
            if asserted is None:
                return None
            return self._member_of_type(asserted, self.src.text(method), around)
        field = {"call": "function", "call_expression": "function",
                 "new_expression": "constructor"}.get(receiver.type)  # fmt: skip
        built = receiver.child_by_field_name(field) if field else None
        if built is None:
            return None
        text = "".join(self.src.text(built).split())
        if not DOTTED.match(text):
            return None
        return self._member_of_type(tuple(text.split(".")), self.src.text(method), around)

    def _super_member(self, method: str, around: _Def | None) -> _Def | Reference:
        """``super().m()``: ``m`` in the bases of the enclosing class, in order."""
        owner = self._enclosing_class(around)
        for base in self._bases.get(owner or "", ()):
            if isinstance(base, _Def):
                found = self._member(base.qualified_name, method)
                if found is not None:
                    return found
            elif base.module is not None:
                return Reference(name=f"{base.name}.{method}", module=base.module)
        return Reference(name=method)


def class_like(name: str) -> bool:
    """By convention a class: ``Foo``, ``_OptionParser`` (private), not ``CONSTANT``."""
    bare = name.lstrip("_")
    return bare[:1].isupper() and not bare.isupper()


def _bind(names: dict[str, _Typed], name: str, fact: TypeFact) -> None:
    """Record a name's type. A declaration wins over constructor calls; two different
    declarations, or two different calls, leave the name without a type."""
    declared = not fact.from_call
    known = names.get(name)
    if known is None or (declared and not known.declared):
        names[name] = _Typed(fact.type_parts, declared, fact.element)
    elif known.declared == declared and (known.parts, known.element) != (
        fact.type_parts,
        fact.element,
    ):
        names[name] = _Typed(None, declared)
