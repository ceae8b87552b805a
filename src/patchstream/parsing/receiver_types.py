"""Receiver types inside one file: what ``recv`` is in ``recv.m()``.

The typing half of ``Resolution`` (a mixin it inherits): the type facts of ``receivers``
bound per scope and class, then looked up through variables, attributes, chains, factories,
container elements and calls. It asks ``Resolution`` for names (``_resolve``) and members
(``_member``); ``Resolution`` asks it for ``_typed_member``. ``receiver_joins`` and
``receiver_calls`` extend it.
"""

from __future__ import annotations

import abc
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import tree_sitter as ts

from patchstream.parsing.cpp_language import SCOPED_LANGUAGES
from patchstream.parsing.node_text import class_like, in_other_branches
from patchstream.parsing.receivers import type_facts
from patchstream.parsing.source import Source
from patchstream.parsing.type_fact import TypeFact
from patchstream.schemas.graph import Reference

SCOPED = SCOPED_LANGUAGES  # names looked up from where they are written (C++, C#)
_FIELDS_BARE = frozenset({"java", "cpp", "csharp", "kotlin", "scala", "swift"})  # a field, bare
SELF_WORDS = frozenset({"self", "this", "cls", "Self"})
# Languages where ``self`` and ``cls`` are plain names (C#'s ``this ITypeDefFinder self``
# parameter of an extension method, a Java local): only ``this`` is the object. Not
# JavaScript's: ``const self = this;`` is the idiom there (rxjs's callers rely on it).
_PLAIN_SELF = frozenset({"csharp", "java", "kotlin", "scala", "cpp", "c"})


def is_self(word: str, language: str) -> bool:
    """``word`` names the object a method runs on, in ``language``."""
    return word in SELF_WORDS and (word == "this" or language not in _PLAIN_SELF)


_ELEMENT_MARKS = {"iter": "[]", "item": "[:]"}
# Languages where a local read from a same-file property takes the property's declared type.
_TYPED_PROPS = ("kotlin", "swift")
# A container's methods that give one of its items: a mapping's, and an array's.
_GETTERS = frozenset({"get", "pop", "setdefault", "shift", "at", "find", "findLast"})


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


def branch_variants(definitions: Iterable[_Def]) -> dict[str, list[_Def]]:
    """Python definitions of one name in different branches of an ``if``/``try`` (a
    platform's variant, a fallback), marked ``alternative``: either may run, so a later one
    does not shadow them, and a call of the name reaches each. Qualified name -> variants."""
    namesakes: dict[str, list[_Def]] = defaultdict(list)
    for definition in definitions:
        namesakes[definition.qualified_name].append(definition)
    found: dict[str, list[_Def]] = {}
    for qualified, group in namesakes.items():
        variants = [
            d for i, d in enumerate(group)
            if all(in_other_branches(d.node, later.node) for later in group[i + 1 :])
        ]  # fmt: skip
        if len(group) > 1 and len(variants) > 1:
            for variant in variants:
                variant.alternative = True
            found[qualified] = variants
    return found


@dataclass(frozen=True)
class _Typed:
    """A name's type as far as the file tells (None: ambiguous), and whether declared."""

    parts: tuple[str, ...] | None
    declared: bool
    element: bool = False  # ``parts`` is a call whose result's elements the name takes
    through: str | None = None  # "iter"/"item": an element of the container ``parts`` names
    position: int | None = None  # with ``element``: that item of the call's tuple
    from_callers: bool = False  # a parameter typed by what this file's calls pass it


class ReceiverTypes(abc.ABC):
    language: str
    module: str
    defs: list[_Def]
    _inferred: bool  # set while resolving one call: a join that cannot tell the exact target
    tree: ts.Tree
    src: Source
    def_by_name_node: dict[tuple[int, int], _Def]
    def_by_node: dict[tuple[int, int, str], _Def]
    _member_call = False  # the call being resolved is ``x.m()``, not ``X::m()`` (C++)
    _path_written = False  # the name being resolved is a Rust path (``a::b``), no receiver
    by_qualified: dict[str, _Def]
    _var_types: dict[str, dict[str, _Typed]]
    _attr_types: dict[str, dict[str, _Typed]]
    _returns: dict[str, tuple[str, ...]]
    _element_returns: dict[str, tuple[str, ...]]
    _aliases: dict[str, tuple[str, ...] | None]
    _local_bases: dict[str, list[str]]
    _bases: dict[str, list[_Def | Reference]]
    types_by_qualified: dict[str, _Def]
    _typing: bool
    _guessed: bool
    _block_types: list[tuple[int, int, str, _Typed]]  # (start, end, name, type): except blocks
    _at: int  # the byte where the call being resolved starts

    @abc.abstractmethod
    def _enclosing_def(self, node: ts.Node) -> _Def | None: ...

    @abc.abstractmethod
    def _enclosing_class(self, around: _Def | None) -> str | None: ...

    @abc.abstractmethod
    def _resolve(self, parts: list[str], around: _Def | None) -> _Def | Reference: ...

    @abc.abstractmethod
    def _member(self, owner: str, member: str) -> _Def | Reference | None: ...

    @abc.abstractmethod
    def _lookup_member(self, owner: str, member: str) -> _Def | None: ...

    @abc.abstractmethod
    def _scoped(
        self, target: _Def | Reference, context: str, arity: int | None = None
    ) -> _Def | Reference: ...

    @abc.abstractmethod
    def _callback_member(
        self, callee: tuple[str, ...], method: str, around: _Def | None, depth: int = 0
    ) -> Reference | None: ...

    @abc.abstractmethod
    def _field_reference(
        self, receiver: list[str], method: str, around: _Def | None
    ) -> Reference | None: ...

    def _note(self, typed: _Typed | None) -> None:
        if typed is not None and typed.parts is not None and not typed.declared:
            self._guessed = True

    def _collect_type_facts(self) -> None:
        for fact in type_facts(self.tree, self.language, self.src):
            around = self._enclosing_def(fact.node)
            if fact.alias and fact.owner is not None:  # self.command = command
                owner = self._enclosing_class(around) if fact.owner in SELF_WORDS else None
                source = self._var_types.get(_scope_key(around), {})
                typed = source.get(fact.type_parts[0]) if len(fact.type_parts) == 1 else None
                plain = typed is not None and not typed.element and not typed.through
                if owner is not None and typed is not None and typed.parts and plain:
                    copied = TypeFact(fact.node, fact.name, typed.parts,
                                      from_call=not typed.declared)  # fmt: skip
                    _bind(self._attr_types[owner], fact.name, copied)
                continue
            if fact.alias and self.language == "rust":  # ``let c = cls.clone()``: cls's type
                source = self._var_types.get(_scope_key(around), {})
                typed = source.get(fact.type_parts[0]) if len(fact.type_parts) == 1 else None
                if typed is not None and typed.parts and not typed.element and not typed.through:
                    copied = TypeFact(fact.node, fact.name, typed.parts,
                                      from_call=not typed.declared)  # fmt: skip
                    _bind(source, fact.name, copied)
                continue
            if fact.alias:
                key = f"{around.qualified_name}.{fact.name}" if around else fact.name
                known = self._aliases.get(key, fact.type_parts)
                self._aliases[key] = fact.type_parts if known == fact.type_parts else None
                continue
            if fact.returns:
                named = fact.node.child_by_field_name("name")
                function = (  # C++ names a function deep in its declarator: the node itself
                    self.def_by_node.get((fact.node.start_byte, fact.node.end_byte,
                                          fact.node.type)) if named is None
                    else self.def_by_name_node.get((named.start_byte, named.end_byte))
                )  # fmt: skip
                if function is not None:
                    returns = self._element_returns if fact.element else self._returns
                    key = function.qualified_name
                    returns[key if fact.position is None else f"{key}#{fact.position}"] = (
                        fact.type_parts
                    )
                continue
            if fact.block or fact.node.type == "except_clause":  # bound in its block only
                typed = _Typed(fact.type_parts, declared=not fact.from_call)
                self._block_types.append((fact.node.start_byte, fact.node.end_byte, fact.name,
                                          typed))  # fmt: skip
                continue
            if fact.node.type == "lambda_literal" and fact.through:
                # Kotlin's ``it`` is each lambda's own: two lambdas of one function over
                # lists of different types left ``it`` without a type.
                typed = _Typed(fact.type_parts, True, fact.element, fact.through, fact.position)
                self._block_types.append((fact.node.start_byte, fact.node.end_byte, fact.name,
                                          typed))  # fmt: skip
                continue
            # A container's element types are kept as the name plus a mark: ``items[]``.
            name = fact.name + _ELEMENT_MARKS[fact.container] if fact.container else fact.name
            if fact.owner is not None:
                owner = self._enclosing_class(around) if fact.owner in SELF_WORDS else None
                if owner is not None:
                    _bind(self._attr_types[owner], name, fact)
            elif around is not None and around.kind in ("class", "interface"):
                _bind(self._attr_types[around.qualified_name], name, fact)
            elif around is None and (extended := self._extension_around(fact.node)) is not None:
                _bind(self._attr_types[extended], name, fact)  # Swift: ``extension C { var x: T``
            else:
                _bind(self._var_types[_scope_key(around)], name, fact)

    def _extension_around(self, node: ts.Node) -> str | None:
        """Swift: the type whose extension declares the property ``node`` (extensions are no
        scope of their own: their members are the type's)."""
        if self.language != "swift" or node.type != "property_declaration":
            return None
        start, end = node.start_byte, node.end_byte
        extensions = (d for d in self.defs if d.kind == "impl")
        around = [d for d in extensions if d.node.start_byte <= start and end <= d.node.end_byte]
        return max(around, key=lambda d: d.node.start_byte).qualified_name if around else None

    def _resolve_type(self, parts: list[str], around: _Def | None) -> _Def | Reference:
        """A type's name resolved as written: no receiver typing inside (that would recurse)."""
        self._typing = True
        try:
            found = constructed(self._resolve(parts, around))
            if isinstance(found, _Def) and found.kind == "function":
                return self.types_by_qualified.get(found.qualified_name, found)
            return found
        finally:
            self._typing = False

    def _variable_type(self, name: str, around: _Def | None) -> _Typed | None:
        """A name's type in the innermost scope around ``around`` that binds it; inside an
        ``except E as name`` block, that block's (``_at``: the call being resolved)."""
        inner: tuple[int, _Typed] | None = None  # the innermost block that binds it
        for start, end, bound, in_block in self._block_types:
            inside = bound == name and start <= self._at < end
            if inside and (inner is None or end - start < inner[0]):
                inner = (end - start, in_block)
        if inner is not None:
            return inner[1]
        scope = around
        while scope is not None:
            typed = self._var_types.get(_scope_key(scope), {}).get(name)
            if typed is not None:
                return typed
            scope = scope.parent
        found = self._var_types.get("", {}).get(name)
        if found is None and self.language in _FIELDS_BARE:  # a field, without ``this.``
            owner = self._enclosing_class(around)
            found = self._attribute_typed(owner, name) if owner is not None else None
        return found

    def _typed_member(
        self, parts: list[str], around: _Def | None, depth: int = 0
    ) -> _Def | Reference | None:
        """``recv.m`` where ``recv`` has a known type: ``T.m`` as far as this file can tell."""
        receiver, method = parts[:-1], parts[-1]
        known: tuple[str, ...] | None = None
        called = False
        if is_self(receiver[0], self.language) and len(receiver) == 2:
            owner = self._enclosing_class(around)
            known = self._attribute_type(owner, receiver[1]) if owner else None
            if known is None and self.language == "cpp" and owner:  # as for a bare field
                return Reference(name=f"{receiver[1]}().{method}")
            if known is None:  # ``self.ctx.m()`` with ``ctx`` declared by another file's base
                return self._field_reference(receiver, method, around)
        elif len(receiver) >= 2:
            # ``l.store.Put()``, ``self.a.b.m()``: the type of the head, then of each field.
            known = self._chain_type(receiver, around)
            if known is None:
                return self._field_reference(receiver, method, around)
        elif len(receiver) == 1:
            typed = self._variable_type(receiver[0], around)
            base_field = self.language in ("java", "kotlin", "scala", "swift") or (
                self.language == "csharp" and not class_like(receiver[0])  # else: a type's
            )
            if typed is None and base_field:  # a field another file's base declares
                return self._field_reference(["this", receiver[0]], method, around)
            cpp_field = self.language == "cpp" and self._member_call
            if typed is None and cpp_field and self._enclosing_class(around):
                # ``versions_->current()`` in a method whose class (and its fields) another
                # file declares: ``versions_().current`` from the class's scope, which the
                # graph joins through the field's RETURNS edge.
                return Reference(name=f"{receiver[0]}().{method}")
            self._note(typed)
            if typed is not None and typed.from_callers:
                self._inferred = True  # callers in other files may pass something else
            known = typed.parts if typed is not None else None
            called = typed is not None and not typed.declared
            if typed is not None and typed.through == "callback" and known is not None:
                return self._callback_member(known, method, around, depth)
            if typed is not None and typed.through == "attribute" and known is not None:
                known = self._chain_type(list(known), around)
                return None if known is None else self._member_of_type(known, method, around, depth)
            if typed is not None and typed.element and known is not None:
                known = self._element_of_call(known, around, depth, typed.position)
            elif typed is not None and typed.through and known is not None:
                known = self._element_type(known, typed.through, around)
        if known is None:
            return None
        return self._member_of_type(known, method, around, depth, called)

    def _member_of_type(
        self,
        known: tuple[str, ...],
        method: str,
        around: _Def | None,
        depth: int = 0,
        called: bool = False,
    ) -> _Def | Reference | None:
        """``m`` of the type ``known`` names; ``called``: ``known`` is a callee whose result
        is the receiver (``x = f()``), not a declared type."""
        if len(known) >= 2 and known[-1] in _GETTERS:  # by_key.get(k): an item of by_key
            item = self._element_type(known[:-1], "item", around)
            if item is not None:
                return self._member_of_type(item, method, around, depth + 1)
        if known == ("Self",):  # Rust's (and typing's) ``Self``: the class around
            enclosing = self._enclosing_class(around)
            return self._member(enclosing, method) if enclosing is not None else None
        if self.language == "kotlin" and called and len(known) == 1 and not class_like(known[0]):
            # ``with(toBuilder()) { build() }`` in ``fun CodeBlock.f()``: the bare call is the
            # receiver's member (``CodeBlock.toBuilder``), joined through what it returns.
            function = self._resolve([known[0]], around)
            if isinstance(function, Reference) and function.module and "." in function.name:
                return Reference(name=f"{function.name}().{method}", module=function.module)
        owner = self._resolve_type(list(known), around)
        if isinstance(owner, Reference) and owner.module is None and self.language in SCOPED:
            # A declared type of another file: looked up from the call's scope outward
            # (``cpp_language.scoped_lookup``), as C++ looks the type's name up; a callee's
            # (``var x = Make();``) joined through what it returns.
            return Reference(name=f"{owner.name}{'()' if called else ''}.{method}")
        if isinstance(owner, Reference) and owner.module is None and len(known) >= 2:
            # ``x = ctx.make_formatter()``: the method's own return annotation, when the
            # receiver's type is known and the method is defined here.
            via = self._typed_member(list(known), around, depth + 1) if depth < 2 else None
            return self._member_of_returned(via, method, depth + 1)
        if isinstance(owner, Reference):
            if owner.module is None:
                return None
            # In Go a call never builds a type (``T{}`` does): ``store.NewMemory()`` is a
            # function even though exported names are capitalized.
            go_function = called and self.language == "go"
            # A Rust type as declared is a type, however it is spelled (``DFA``, ``NFA``).
            rust_type = not called and self.language == "rust"
            if go_function or not (rust_type or class_like(owner.name.rsplit(".", 1)[-1])):
                # A function of another file: its return type is known there. The graph
                # joins ``f().m`` through f's RETURNS edge (statements.CALLERS_THROUGH_RETURNS).
                return Reference(name=f"{owner.name}().{method}", module=owner.module)
            return Reference(name=f"{owner.name}.{method}", module=owner.module)
        if owner.kind == "function":  # a factory: what it says it returns
            returned = self._returns.get(owner.qualified_name)
            if returned is None or depth > 2:
                return None
            return self._member_of_type(returned, method, owner, depth + 1)
        if owner.kind == "variable" and called and self.language == "swift" and depth < 2:
            # ``var current = commandTree``: the property's declared type.
            return self._member_of_returned(owner, method, depth + 1)
        if (
            self.language == "swift"
            and owner.kind in ("class", "interface")
            and self._lookup_member(owner.qualified_name, method) is None
        ):  # another file's extension of the type (``ParsableArguments._validate``), whose
            # key the graph also joins through the type's bases: not the first base's guess
            return Reference(name=f"{owner.qualified_name}.{method}")
        member = self._member(owner.qualified_name, method)
        if member is None and self.language == "csharp" and owner.kind in ("class", "interface"):
            # Not this file's member: a base's of another file, or an extension method
            # (``a.RemoveModifiers()`` on ``this TypeSig a``), both found by the type's keys.
            return Reference(name=f"{owner.qualified_name}.{method}")
        return member

    def _member_of_returned(
        self, callee: _Def | Reference | None, method: str, depth: int = 0
    ) -> _Def | Reference | None:
        """``m`` of what ``callee`` returns: its return annotation when it is defined here; a
        method of another file's class becomes ``T.f().m``, which the graph joins through f's
        RETURNS edge as for a function (statements.CALLERS_THROUGH_RETURNS)."""
        if isinstance(callee, _Def) and callee.kind == "function":
            returned = self._returns.get(callee.qualified_name)
            return self._member_of_type(returned, method, callee, depth) if returned else None
        if isinstance(callee, _Def) and callee.kind == "variable" and self.language in _TYPED_PROPS:
            # ``val c = context.cmd`` with ``Context`` here: the property's declared type.
            parent = callee.parent
            held = self._attribute_type(parent.qualified_name, callee.name) if parent else None
            return self._member_of_type(held, method, parent, depth) if held else None
        return joined(callee, f"().{method}")

    def _chain_type(self, receiver: list[str], around: _Def | None) -> tuple[str, ...] | None:
        """The type of ``a.b.c`` from the type of ``a`` and the declared types of its fields."""
        owner: _Def | Reference | None = None
        itself = is_self(receiver[0], self.language)
        typed = None if itself else self._variable_type(receiver[0], around)
        if itself:
            name = self._enclosing_class(around)
            owner = self.by_qualified.get(name) if name else None
        elif typed is None and self.language == "swift" and class_like(receiver[0]):
            owner = self._resolve_type([receiver[0]], around)  # ``Config.defaults.m()``
        else:
            parts = self._held_type(typed, around, True) if typed is not None else None
            if parts is None:
                return None
            self._note(typed)
            owner = self._resolve_type(list(parts), around)
        known: tuple[str, ...] | None = None
        for attribute in receiver[1:]:
            if not isinstance(owner, _Def) or owner.kind not in ("class", "interface"):
                return None
            known = self._attribute_type(owner.qualified_name, attribute)
            if known is None:
                return None
            owner = self._resolve_type(list(known), around)
        return known

    def _held_type(
        self, typed: _Typed, around: _Def | None, any_through: bool = False
    ) -> tuple[str, ...] | None:
        """The type a typed name holds: its own, or in Kotlin an element of the container it
        was taken from (``val option = byName[name] ?: throw ..``: ``option.parser.m()``);
        ``any_through``: a name typed any other way keeps what its fact names."""
        if typed.parts is None or typed.element:
            return None
        if typed.through in ("iter", "item") and self.language == "kotlin":
            return self._element_type(typed.parts, typed.through, around)
        return typed.parts if any_through or not typed.through else None

    def _element_of_call(
        self, call: tuple[str, ...], around: _Def | None, depth: int, position: int | None = None
    ) -> tuple[str, ...] | None:
        """The element type of what ``call(...)`` returns (``-> list[T]``), or with
        ``position`` that item of its tuple (``-> tuple[str, T]``), if annotated here."""
        target = self._resolve_type(list(call), around)
        if isinstance(target, Reference) and target.module is None and len(call) >= 2:
            found = self._typed_member(list(call), around, depth + 1) if depth < 2 else None
            target = found if found is not None else target
        if isinstance(target, _Def) and target.kind == "function":
            key = target.qualified_name
            return self._element_returns.get(key if position is None else f"{key}#{position}")
        return None

    def _element_type(
        self, container: tuple[str, ...], kind: str, around: _Def | None
    ) -> tuple[str, ...] | None:
        """What iterating or indexing ``items`` / ``self.items`` gives, as annotated here."""
        mark = _ELEMENT_MARKS[kind]
        if len(container) == 2 and container[0] in SELF_WORDS:
            owner = self._enclosing_class(around)
            return self._attribute_type(owner, container[1] + mark) if owner else None
        if len(container) == 1:
            typed = self._variable_type(container[0] + mark, around)
            if typed is not None:
                return typed.parts if not typed.through else None
            # ``const items = this.items``: the attribute's elements.
            local = self._variable_type(container[0], around)
            if local is None or local.through != "attribute" or local.parts is None:
                return None
            return self._element_type(local.parts, kind, around)
        return None

    def _local_lineage(self, owner: str) -> Iterator[str]:
        """``owner``, then its bases defined in this file, breadth first, each once."""
        queue, seen = [owner], set()
        while queue:
            current = queue.pop(0)
            if current not in seen:
                seen.add(current)
                yield current
                queue.extend(self._local_bases.get(current, ()))

    def _attribute_type(self, owner: str, attribute: str) -> tuple[str, ...] | None:
        found = self._attribute_typed(owner, attribute)
        self._note(found)
        return found.parts if found is not None else None

    def _attribute_typed(self, owner: str, attribute: str) -> _Typed | None:
        """``attribute`` of ``owner`` or of its bases in this file, nearest first."""
        for current in self._local_lineage(owner):
            found = self._attr_types.get(current, {}).get(attribute)
            if found is not None:
                return found
        return None


def constructed(target: _Def | Reference) -> _Def | Reference:
    """What ``new C()`` builds: inside C, Java's name lookup finds C's constructor (a function
    named as its class) before the class; the class is what is instantiated."""
    if isinstance(target, _Def) and target.kind == "function" and target.parent is not None:
        owner = target.parent
        if owner.kind == "class" and owner.name == target.name:
            return owner
    return target


def joined(target: _Def | Reference | None, tail: str) -> Reference | None:
    """``target`` (another file's name) followed by ``tail`` (``().m``, ``.field().m``,
    ``(*).m``): a key the graph joins at read time. None when the target is this file's,
    unknown, or already such a join, except that a call on a call's result may follow one
    (``A.f().g().m``: two RETURNS joins, ``statements.CALLERS_THROUGH_TWO_RETURNS``)."""
    if not isinstance(target, Reference) or target.module is None:
        return None
    if "(" not in target.name or (two_returns(target.name) and tail.startswith("().")):
        return Reference(name=f"{target.name}{tail}", module=target.module)
    return None


def two_returns(name: str) -> bool:
    """``A.f().g``: one call on a function's result, which one more call may follow."""
    head, marker, method = name.partition("().")
    return bool(marker) and "(" not in head and method.isidentifier()


def _scope_key(scope: _Def | None) -> str:
    """A scope's own key for its names: two methods of one qualified name (Java overloads,
    methods of enum constants' bodies) each keep their parameters' types."""
    if scope is None:
        return ""
    return scope.symbol_id or scope.qualified_name


def _bind(names: dict[str, _Typed], name: str, fact: TypeFact) -> None:
    """Record a name's type. A declaration wins over constructor calls, and both over an
    element of a container; two different facts of one rank leave the name without a type."""
    declared = not fact.from_call
    known = names.get(name)
    if known is not None and fact.through and not known.through:
        return  # an element of a container is the weakest fact: anything else wins
    if known is None or (declared and not known.declared) or (known.through and not fact.through):
        names[name] = _Typed(fact.type_parts, declared, fact.element, fact.through, fact.position)
    elif known.declared == declared and (
        known.parts,
        known.element,
        known.through,
        known.position,
    ) != (fact.type_parts, fact.element, fact.through, fact.position):
        names[name] = _Typed(None, declared)
