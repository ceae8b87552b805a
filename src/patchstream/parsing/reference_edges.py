"""The references phase of extraction: a file's calls, instantiations, inheritance and
attribute reads become edges, to this file's definitions or to references the graph joins.
The base of ``extract._Extractor``, after ``definitions.Definitions``."""

from __future__ import annotations

import re

import tree_sitter as ts

from patchstream.parsing.c_language import macro_calls
from patchstream.parsing.cpp_language import SCOPED_LANGUAGES, call_context
from patchstream.parsing.declared_types import cpp_declared_type
from patchstream.parsing.definitions import _OVERLOADING, Definitions
from patchstream.parsing.kotlin_types import collected_call, it_value, plain_receiver
from patchstream.parsing.node_text import (
    class_like,
    in_other_branches,
    name_parts,
    without_generics,
    written_callee,
)
from patchstream.parsing.receiver_types import _Def, constructed
from patchstream.parsing.ruby_language import KERNEL_WORDS
from patchstream.parsing.rust_language import bounded_path, delegated_call
from patchstream.parsing.source import Source
from patchstream.parsing.swift_library import LITERALS
from patchstream.parsing.type_text import DOTTED
from patchstream.schemas.graph import CallResolution, EdgeType, Reference

_SUPER_DELEGATION = re.compile(
    rb"\bconstructor[ \t]{0,40}\([^{}]{0,2000}?\)\s{0,40}:\s{0,40}super\s{0,40}\("
)
_CPP_ALIASES = frozenset({"alias_declaration", "type_definition"})  # ``using A = B;``
_CLASS_LITERALS = {"class": "KClass", "class.java": "Class"}  # ``T::class``, ``T::class.java``


def _interface_named(target: _Def | Reference) -> bool:
    if isinstance(target, _Def):
        return target.kind == "interface"
    last = target.name.rsplit(".", 1)[-1]
    return len(last) > 1 and last[0] == "I" and last[1].isupper()


def _subscript(call: ts.Node, src: Source) -> bool:
    """Swift's ``a[i]``, which the grammar parses as a call whose arguments are bracketed."""
    suffix = call.named_children[-1] if call.named_child_count else None
    return suffix is not None and suffix.type == "call_suffix" and src.raw(suffix)[:1] == b"["


class ReferenceEdges(Definitions):
    _locals: dict[str, set[str]]  # Ruby: scope id -> its locals

    def _collect_references(self, matches: list[dict[str, list[ts.Node]]]) -> None:
        inherits = [m for m in matches if "reference.inherit" in m]
        # Bases first: self.method() lookups walk them.
        for match in inherits:
            deriving = self._deriving(match)
            if deriving is None:
                continue
            written = self.src.text(match["name"][0])
            if self.language == "cpp" and deriving.node.type in _CPP_ALIASES:
                written = cpp_declared_type(match["name"][0], self.src)  # what a pointer holds
                if "<" in written and not written.startswith("std."):
                    written = without_generics(written)  # ``AnchorDict<void*>``: AnchorDict's
                if not DOTTED.match(written):
                    continue  # a container's or a function's alias: no class's members
            target = self._resolve_type(name_parts(written), deriving)
            if self.language in SCOPED_LANGUAGES:
                target = self._scoped(target, call_context(deriving.parent))
            if target is deriving:
                continue  # ``type Result<T> = Result<T, Error>``: no base of its own
            if isinstance(target, _Def):
                self._local_bases[deriving.qualified_name].append(target.qualified_name)
            if self.language == "kotlin":
                # ``class Q : Base(1), Shape``: only a class (built in the header, or the
                # first base of a class whose constructors delegate to ``super(..)``) gives
                # members to a bare call; its constructor runs with Q's.
                built = match["name"][0].parent.type == "constructor_invocation"  # type: ignore[union-attr]
                self._supertypes[deriving.qualified_name].append(target)
                first = not self._bases[deriving.qualified_name]
                if built or (first and _SUPER_DELEGATION.search(self.src.raw(deriving.node))):
                    self._bases[deriving.qualified_name].append(target)
            elif self.language != "csharp":
                self._bases[deriving.qualified_name].append(target)
            elif not _interface_named(target):
                # C#'s bases do not say which is the class; an interface (``IDisposable``,
                # named so by convention) gives no inherited member to a bare call. Every
                # constructor of a class runs its base class's, written (``: base(..)``)
                # or not.
                self._bases[deriving.qualified_name].append(target)
                first = len(self._bases[deriving.qualified_name]) == 1
                if first and deriving.node.type == "class_declaration":
                    self._add(EdgeType.INSTANTIATES, deriving.symbol_id, target)
            self._add(EdgeType.INHERITS_FROM, deriving.symbol_id, target)
        for match in matches:
            self._check()
            for capture, edge_type in (
                ("reference.call", EdgeType.CALLS),
                ("reference.instantiate", EdgeType.INSTANTIATES),
            ):
                if capture not in match:
                    continue
                node = match[capture][0]
                if (
                    self.language == "ruby"
                    and node.type == "identifier"
                    and self.src.text(node) in self._locals[self._enclosing(node)]
                ):
                    continue  # a local variable, not a call of a method of its name
                if self.language == "swift" and _subscript(node, self.src):
                    continue  # ``items[0]``: tree-sitter-swift reads it as a call
                written = written_callee(match["name"][0], self.src)
                parts = name_parts(written)
                around = self._enclosing_def(node)
                receiver = self.src.text(match["receiver"][0]) if "receiver" in match else None
                if receiver is not None and self.language == "kotlin":
                    receiver = plain_receiver(receiver)
                if receiver is not None:
                    written = f"{receiver}.{written}"
                    parts = [*name_parts(receiver), *parts]
                if parts == ["super"] and self.language == "python":
                    continue  # the builtin itself; its method call resolves below
                if self.language == "rust" and receiver is None:
                    rewritten = self._rust_path(node, written, parts)
                    if rewritten is not None:
                        parts, written = rewritten, "::".join(rewritten)
                if self.language == "php" and parts in (["self"], ["static"], ["parent"]):
                    parts = ["super" if parts == ["parent"] else "this"]  # ``new static(..)``
                if self.language == "ruby":
                    if receiver is None and written == "new" and around is not None:
                        edge_type, parts = EdgeType.INSTANTIATES, ["this"]  # in ``def self.x``
                    elif receiver is None and written in KERNEL_WORDS:
                        continue
                    if parts == ["super"] and around is not None:  # the base's of the name
                        if not self._bases.get(self._enclosing_class(around) or ""):
                            continue  # Object's, or a library's: never the project's
                        building = around.name == "initialize"
                        edge_type = EdgeType.INSTANTIATES if building else edge_type
                        parts = ["super"] if building else ["super", around.name]
                self._guessed, self._inferred, self._at = False, False, node.start_byte
                # Scala's ``this(in)`` in a method is the class's own ``apply`` (in an
                # auxiliary constructor, ``def this``, it is another constructor).
                if (
                    self.language == "scala"
                    and receiver is None
                    and parts == ["this"]
                    and (around is not None and around.name != "this")
                ):
                    receiver, parts = "this", ["this", "apply"]
                elif self.language == "scala" and receiver is None and len(parts) == 1:
                    applied = self._applied_value(parts[0], around)
                    if applied is not None:  # ``p(in)`` with ``p: Parser[T]``: ``p.apply(in)``
                        receiver, parts = parts[0], applied
                self._member_call = receiver is not None  # ``x.m()``, not ``X::m()``
                # Rust's ``ast::Concat`` is a path even where a variable ``ast`` is in scope.
                self._path_written = self.language == "rust" and "::" in written
                self._building = edge_type is EdgeType.INSTANTIATES
                listed = (
                    node.child_by_field_name("arguments") if self.language in _OVERLOADING else None
                )
                self._arity = listed.named_child_count if listed is not None else None
                found: _Def | Reference | None = None
                if "".join(written.split()).startswith("super().") or (
                    parts[0] in ("super", "base") and len(parts) == 2 and self.language != "python"
                ):  # Python's super().m(), TypeScript's and Java's super.m(), C#'s base.M()
                    found = self._super_member(parts[-1], around)
                elif receiver is None and (")" in written or "]" in written):
                    # ``Foo(x).m()``, ``items[0].m()``: a written receiver with a call (or an
                    # index) in it.
                    found = self._member_of_call(match["name"][0], around)
                elif (
                    self.language == "swift"
                    and receiver is not None
                    and (literal := LITERALS.get(match["receiver"][0].type))
                ):  # ``"..".indentingEachLine()``: String's (and its protocols')
                    found = Reference(name=f"{literal}.{parts[-1]}")
                elif receiver is not None and (
                    ")" in receiver
                    or "]" in receiver
                    or (self.language == "kotlin" and receiver.endswith("}"))
                ):  # fmt: skip
                    # Java's ``make().m()``, C++'s ``shard_[i].Insert()``
                    found = self._member_of_built(match["receiver"][0], parts[-1], around)
                elif edge_type is EdgeType.INSTANTIATES and parts in (
                    ["this"],
                    ["super"],
                    ["base"],
                ):
                    found = self._delegated_constructor(parts[0], around)  # Java's this(...)
                if found is None and self.language == "kotlin" and receiver is None:
                    found = self._scope_member(node, parts[0], around) if len(parts) == 1 else None
                elif found is None and self.language == "kotlin" and receiver is not None:
                    found = self._class_literal_member(receiver, parts[-1])
                    if found is None and parts[0] == "it" and len(parts) == 2:
                        value = it_value(node, self.src)  # ``b.let { it.add(x) }``
                        found = None if value is None else self._member_of_value(
                            value, parts[-1], around)  # fmt: skip
                target = found if found is not None else self._resolve(parts, around)
                if (
                    self.language in SCOPED_LANGUAGES
                    and receiver is not None
                    and found is None
                    and (
                        "[" in receiver
                        or (
                            "(" in receiver
                            and isinstance(target, Reference)
                            and "." not in target.name
                        )
                    )
                ):  # an element, or what a call returns: of unknown type, never guessed
                    target = Reference(name=f"?.{parts[-1]}")
                if self.language == "kotlin" and receiver is not None:
                    target = self._imported_extension(target, parts[-1], around)
                    if isinstance(target, Reference) and (
                        collected := collected_call(target.name)
                    ):  # ``items.map { }.joinToCode()``: a List's
                        target = Reference(name=collected, module=target.module)
                if (
                    self.language in ("ruby", "swift")
                    and receiver is not None
                    and isinstance(target, Reference)
                    and target.module is None
                    and target.name == ".".join(parts)  # as written: no type found
                    and not class_like(parts[0])
                    and (parts[0] != "self" or len(parts) > 2)
                ):  # a local's, an attribute's or a call's value of no known type
                    target = (
                        self._named_like_class(parts, around)
                        if self.language == "ruby"
                        else Reference(name=f"?.{parts[-1]}")
                    )
                if self.language in SCOPED_LANGUAGES:
                    member = edge_type is EdgeType.CALLS and receiver is not None
                    arity = self._arity if member and self.language == "csharp" else None
                    target = self._scoped(target, call_context(around), arity)
                if edge_type is EdgeType.INSTANTIATES:
                    target = constructed(target)
                    if self.language == "cpp":
                        target = self._class_of_constructor(target, around)
                elif self.language == "cpp" and constructed(target) is not target:
                    # ``return Status(kNotFound, msg);``: a call of a constructor builds one
                    edge_type, target = EdgeType.INSTANTIATES, constructed(target)
                src = around.symbol_id if around is not None else self.module_id
                certainty = self._certainty()
                if isinstance(target, _Def) and target.alternative:
                    variants = self._variants(target, node)
                    # An overload calling its own name (``Load(const std::string&)`` runs
                    # ``Load(stream)``) delegates to another of the set, not to itself.
                    others = [each for each in variants if each.symbol_id != src]
                    for each in others if len(variants) > 1 and others else variants:
                        self._add(self._call_type(edge_type, each), src, each, certainty)
                else:
                    self._add(self._call_type(edge_type, target), src, target, certainty)
                    if self.language == "scala" and edge_type is EdgeType.INSTANTIATES:
                        self._inherited_type_too(target, parts, around, src, certainty)

    def _inherited_type_too(
        self, target: _Def | Reference, parts: list[str], around: _Def | None, src: str,
        certainty: CallResolution,
    ) -> None:  # fmt: skip
        """Scala's ``new JButton with SuperMixin`` in ``class Button extends Component``: a
        bare type no import or definition here names may be a base's nested one
        (``Component.SuperMixin``); also ``Button.SuperMixin``, which the graph joins through
        the class's bases (the package's own ``SuperMixin`` stays the first edge)."""
        owner = self._enclosing_class(around)
        bases = self._bases.get(owner, []) if owner is not None else []
        written = {base.name.rsplit(".", 1)[-1] for base in bases}  # its own header's
        if (
            owner is None
            or len(parts) != 1
            or not isinstance(target, Reference)
            or target.name != parts[0]
            or not bases
            or parts[0] in written
        ):
            return
        inherited = Reference(name=f"{owner.rsplit('.', 1)[-1]}.{parts[0]}", module=target.module)
        self._add(EdgeType.INSTANTIATES, src, inherited, certainty)

    def _class_of_constructor(
        self, target: _Def | Reference, around: _Def | None
    ) -> _Def | Reference:
        """C++'s ``Parser::Parser(std::istream& in) : Parser() {..}`` beside a class declared
        in a header: the delegated constructor (this file's other ``Parser::Parser``) builds
        the class."""
        if not isinstance(target, _Def) or target.kind != "function":
            return target
        head, _, last = target.qualified_name.rpartition(".")
        if not head or head.rsplit(".", 1)[-1] != last:
            return target
        return self._scoped(self._resolve_type(head.split("."), around), call_context(around))

    def _applied_value(self, name: str, around: _Def | None) -> list[str] | None:
        """Scala: a value called as a function is its type's ``apply`` (a parameter, a local
        or a field of a class's type; a function type's call is no method of the project's)."""
        typed = self._variable_type(name, around)
        if typed is None or not typed.parts or not class_like(typed.parts[-1]):
            return None
        return [name, "apply"]

    def _named_like_class(self, parts: list[str], around: _Def | None) -> Reference:
        """Ruby: a receiver of no known type named as a class of the project is one of it
        (``context.evaluate(x)``: ``Context#evaluate``; ``@parse_context.parse(x)``), a
        guess; else a call of the method on something unknown."""
        held = parts[1:-1] if parts[0] == "self" else parts[:-1]
        if len(held) != 1 or "?" in held[0] or not held[0][:1].islower():
            return Reference(name=f"?.{parts[-1]}")
        self._guessed = True
        named = "".join(word.capitalize() for word in held[0].split("_"))
        found = self._scoped(Reference(name=f"{named}.{parts[-1]}"), call_context(around))
        assert isinstance(found, Reference)
        return found

    def _class_literal_member(self, receiver: str, method: str) -> Reference | None:
        """Kotlin's ``Any::class.asTypeName()`` (a ``KClass``) and ``T::class.java.f()`` (a
        ``Class``): an extension of this package's (``_imported_extension`` adds imports)."""
        literal = _CLASS_LITERALS.get(receiver.rpartition("::")[2]) if "::" in receiver else None
        if literal is None:
            return None
        return Reference(name=f"{literal}.{method}", module=self._package_modules())

    def _imported_extension(
        self, target: _Def | Reference, method: str, around: _Def | None
    ) -> _Def | Reference:
        """Kotlin's ``x.convert()`` where ``convert`` is imported by name: an extension
        function (members are never imported), ``T.convert`` of the import's package
        (``T``: the receiver's type, when known; the graph also tries plain ``convert``)."""
        imported = self._binding(method, around)
        if isinstance(target, _Def):
            return target
        if (extension := self._member_extension(target, method, around)) is not None:
            return extension
        if imported is None or imported.name in ("", "*"):
            if (
                target.module
                and "+" not in target.module
                and target.module != self.module
                and (target.name.count(".") == 1 and "(" not in target.name)
            ):  # ``type.asTypeName()`` on an imported ``KClass``: an extension of this
                # package's too (the graph tries the type's own package first)
                return Reference(name=target.name,
                                 module=f"{target.module}+{self._package_modules()}")  # fmt: skip
            return target
        owner = target.name.rpartition(".")[0].rsplit(".", 1)[-1]
        typed = owner and "?" not in target.name and class_like(owner)
        name = f"{owner}.{imported.name}" if typed else imported.name
        return Reference(name=name, module=imported.module)

    def _member_extension(self, target: Reference, method: str, around: _Def | None) -> _Def | None:
        """Kotlin's ``s.withBrace()`` inside a class that declares ``fun String.withBrace()``
        (a member extension) with the type ``target`` found for ``s`` as its receiver."""
        typed = target.name.rpartition(".")[0].rsplit(".", 1)[-1]
        for extension, written in self._member_extensions.get(method, ()):
            owner = extension.parent
            receiver = without_generics(written).rstrip("?")
            if (
                typed
                and receiver.rsplit(".", 1)[-1] == typed
                and owner is not None
                and around is not None
                and owner.node.start_byte <= around.node.start_byte < owner.node.end_byte
            ):
                return extension
        return None

    def _collect_macro_calls(self) -> None:
        """A function-like macro calls what its body text calls (``c_language``)."""
        for definition in self.defs:
            if definition.node.type != "preproc_function_def":
                continue
            body = definition.node.child_by_field_name("value")
            params = definition.node.child_by_field_name("parameters")
            names = {self.src.text(p) for p in params.named_children} if params else set()
            for name in macro_calls(names, self.src.text(body) if body is not None else ""):
                self._check()
                target = self._resolve([name], definition)
                self._add(EdgeType.CALLS, definition.symbol_id, target, CallResolution.EXACT)

    def _variants(self, target: _Def, call: ts.Node) -> list[_Def]:
        """Every variant of an ``alternative`` definition a call may reach: a call inside one
        branch reaches that branch's, a call outside the ``if``/``try`` any of them."""
        variants = self.alternatives.get(target.qualified_name, [target])
        return [v for v in variants if not in_other_branches(v.node, call)] or [target]

    def _rust_path(self, node: ts.Node, written: str, parts: list[str]) -> list[str] | None:
        """A callee rustc reads through a trait: ``(**self).m()`` in a trait's impl for a
        reference, and ``E::m()`` with ``E`` a bounded type parameter (not a type of the
        file or an import: those are looked up as written)."""
        if written.startswith("("):
            return delegated_call(node, written, self.src)
        if "::" in written and parts[0] not in self.by_qualified and parts[0] not in self.bindings:
            return bounded_path(node, parts, self.src)
        return None

    def _deriving(self, match: dict[str, list[ts.Node]]) -> _Def | None:
        type_node = match["type"][0]
        found = self.def_by_name_node.get((type_node.start_byte, type_node.end_byte))
        if found is not None and found.kind != "impl":
            return found
        name = ".".join(p for p in name_parts(self.src.text(type_node)) if p != "?")
        return self.by_qualified.get(name)

    def _call_type(self, edge_type: EdgeType, target: _Def | Reference) -> EdgeType:
        if edge_type is not EdgeType.CALLS:
            return edge_type
        if isinstance(target, _Def):
            return EdgeType.INSTANTIATES if target.kind == "class" else EdgeType.CALLS
        # Python has no `new`: by convention a capitalized callee is a class.
        last = target.name.rsplit(".", 1)[-1]
        if self.language in ("python", "kotlin", "scala", "swift") and class_like(last):
            return EdgeType.INSTANTIATES  # Kotlin has no ``new``; Scala's ``Foo(x)`` applies
        return EdgeType.CALLS
