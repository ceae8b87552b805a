"""Structure extraction: run a language's tag query over a tree and build symbols and edges.

The query (``queries/<language>.scm``) does the matching; this module turns its captures into
graph contracts. Nesting comes from byte ranges (a sorted sweep, no recursion), names are
resolved against the file's own definitions first, then its imports; whatever points outside
the file becomes a :class:`Reference` for the graph sink to resolve.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field

import tree_sitter as ts

from patchstream.parsing.c_language import (
    attribute_line,
    is_attribute_line,
    macro_calls,
    preprocessor_variants,
)
from patchstream.parsing.cpp_language import (
    SCOPED_LANGUAGES,
    call_context,
    using_aliases,
)
from patchstream.parsing.csharp_language import csharp_namespace_of
from patchstream.parsing.declared_types import cpp_declared_type
from patchstream.parsing.hashing import hash_code
from patchstream.parsing.incremental import ParseTimeout
from patchstream.parsing.kotlin_types import (
    collected_call,
    it_value,
    plain_receiver,
    type_aliases,
)
from patchstream.parsing.languages import C_FAMILY, get_query
from patchstream.parsing.modules import CS_GLOBAL, ImportBinding, import_bindings, module_name
from patchstream.parsing.node_text import (
    body_boundaries,
    class_like,
    first_doc_line,
    in_other_branches,
    name_parts,
    signature_of,
    without_generics,
    written_callee,
)
from patchstream.parsing.receiver_types import _Def, branch_variants, constructed
from patchstream.parsing.receivers import DOTTED
from patchstream.parsing.ruby_language import KERNEL_WORDS, local_names
from patchstream.parsing.source import PhpSource, RubySource, Source
from patchstream.parsing.swift_library import LITERALS
from patchstream.parsing.type_edges import TypeEdges
from patchstream.schemas.graph import (
    CallResolution,
    Edge,
    EdgeType,
    Reference,
    Symbol,
    SymbolKind,
)

# When two patterns name the same identifier (``const f = () => {}`` is a function and a
# variable; a Go interface type_spec also matches the generic type pattern) the higher wins.
_SUPER_DELEGATION = re.compile(
    rb"\bconstructor[ \t]{0,40}\([^{}]{0,2000}?\)\s{0,40}:\s{0,40}super\s{0,40}\("
)
_OVERLOADING = frozenset({"java", "csharp"})
_CPP_ALIASES = frozenset({"alias_declaration", "type_definition"})  # ``using A = B;``
# Whose wildcard imports (``import acme.util.*``, ``import acme.util._``) a name the file does
# not bind is looked for in, after its own package (``resolution``, ``keys.reference_keys``).
_OPENING = frozenset({"kotlin", "scala"})  # overloads told apart by their arity
# Every reference of a C# file carries the namespaces it opens (one candidate key each):
# a file of thousands of ``using`` lines must not make every call thousands of keys.
_MAX_OPENED = 24
_KIND_PRIORITY = {"function": 5, "interface": 4, "class": 3, "module": 2, "impl": 1, "variable": 0}
_SYMBOL_KINDS = {
    "function": SymbolKind.FUNCTION,
    "interface": SymbolKind.INTERFACE,
    "class": SymbolKind.CLASS,
    "module": SymbolKind.MODULE,
    "variable": SymbolKind.VARIABLE,
}
MODULE_MARKER = "<module>"
_SOURCES: dict[str, type[Source]] = {"php": PhpSource, "ruby": RubySource}


@dataclass(frozen=True)
class ExtractedSymbol:
    """A symbol plus what chunking needs: the lines where its body's statements start."""

    symbol: Symbol
    boundaries: tuple[int, ...]


@dataclass
class Extraction:
    module_name: str
    symbols: list[ExtractedSymbol] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    module_boundaries: tuple[int, ...] = ()


def _interface_named(target: _Def | Reference) -> bool:
    if isinstance(target, _Def):
        return target.kind == "interface"
    last = target.name.rsplit(".", 1)[-1]
    return len(last) > 1 and last[0] == "I" and last[1].isupper()


def _subscript(call: ts.Node, src: Source) -> bool:
    """Swift's ``a[i]``, which the grammar parses as a call whose arguments are bracketed."""
    suffix = call.named_children[-1] if call.named_child_count else None
    return suffix is not None and suffix.type == "call_suffix" and src.raw(suffix)[:1] == b"["


def file_id(repo: str, path: str) -> str:
    return f"{repo}::{path}"


def module_id(repo: str, path: str) -> str:
    return f"{repo}::{path}::{MODULE_MARKER}"


_CLASS_LITERALS = {"class": "KClass", "class.java": "Class"}  # ``T::class``, ``T::class.java``


class _Extractor(TypeEdges):
    def __init__(
        self,
        tree: ts.Tree,
        source: bytes,
        language: str,
        repo: str,
        path: str,
        deadline: float | None = None,
    ) -> None:
        self.deadline = deadline
        self._steps = 0
        self.tree = tree
        self.src = _SOURCES.get(language, Source)(source)
        self._locals: dict[str, set[str]] = defaultdict(set)  # Ruby: scope id -> its locals
        self.language = language
        self.repo = repo
        self.path = path
        self.defs: list[_Def] = []
        self.by_qualified: dict[str, _Def] = {}
        # A class sharing its name with a function (Scala's ``def Parser`` beside ``class
        # Parser``): a type's name means the class.
        self.types_by_qualified: dict[str, _Def] = {}
        self.bindings: dict[str, ImportBinding] = {}
        self.scoped_bindings: dict[tuple[str, str], ImportBinding] = {}
        self.edges: set[Edge] = set()
        self._edge_keys: dict[tuple[str, str, str], Edge] = {}
        self.def_by_node: dict[tuple[int, int, str], _Def] = {}
        self.def_by_name_node: dict[tuple[int, int], _Def] = {}
        self._init_resolution()
        self.module = ""
        self.cpp_aliases: dict[str, str] = {}  # ``using ns::Name;`` (C++), ``using U = ns.T;``
        self.opened: tuple[str, ...] = ()  # C#'s ``using ns;``: namespaces a name may be in
        self.file_scope = ""  # C#'s ``namespace ns;``: the scope of the whole file
        self.module_id = module_id(repo, path)

    def run(self) -> Extraction:
        captures = self._matches()
        package = None
        for match in captures:
            if "package" in match:
                written = "".join(self.src.text(match["package"][0]).split())
                # Scala's ``package scala`` then ``package swing``: one package, nested.
                package = (
                    f"{package}.{written}" if package and self.language == "scala" else written
                )
        self.module = module_name(self.language, self.path, package)
        if self.language == "csharp":
            self.file_scope = ".".join(name_parts(package)) if package else ""
        self.cpp_aliases = using_aliases([self.src.text(m["alias"][0]) for m in captures
                                          if "alias" in m and "using" in m])  # fmt: skip
        if self.language == "kotlin":
            self.type_aliases = type_aliases(self.tree.root_node, self.src)
        self._collect_defs(captures)
        self._nest()
        self._mark_alternatives()
        self._index_scopes()
        self._collect_imports(captures)
        if self.language == "ruby":
            for node, name in local_names(self.tree, self.src):
                self._locals[self._enclosing(node)].add(name)
        self._collect_type_facts()
        self._collect_call_site_types(captures)
        self._collect_references(captures)
        self._collect_value_flow(captures)
        self._collect_overrides()
        self._collect_returns()
        if self.language == "cpp":
            self._collect_base_constructors()
        if self.language in C_FAMILY:
            self._collect_macro_calls()
        for owner, target in self._callback_parameter_targets():
            self._add(EdgeType.CALLBACK_PARAM, owner.symbol_id, target)
        return self._result()

    def _matches(self) -> list[dict[str, list[ts.Node]]]:
        # No progress callback here: with one, tree-sitter 0.26's QueryCursor.matches crashed
        # the process (SIGSEGV). The query itself is linear in the tree; the loops after it
        # check the deadline.
        cursor = ts.QueryCursor(get_query(self.language))
        matches = cursor.matches(self.tree.root_node)
        self._check(force=True)
        return [captures for _, captures in matches]

    def _check(self, force: bool = False) -> None:
        """Raise ParseTimeout past the deadline (looked at every 256 steps)."""
        if self.deadline is None:
            return
        self._steps += 1
        if (force or self._steps % 256 == 0) and time.thread_time() > self.deadline:
            raise ParseTimeout("extraction exceeded its budget")

    def _collect_defs(self, matches: list[dict[str, list[ts.Node]]]) -> None:
        chosen: dict[tuple[int, int], _Def] = {}
        for match in matches:
            self._check()
            for capture, nodes in match.items():
                if not capture.startswith("definition."):
                    continue
                kind = capture.removeprefix("definition.")
                if kind == "variable" and self.language in C_FAMILY and is_attribute_line(nodes[0]):
                    continue  # ``FORCE_INLINE_TEMPLATE`` above a function: its signature's
                name_node = match["name"][0]
                receiver = self.src.text(match["receiver"][0]) if "receiver" in match else None
                if receiver is not None and self.language == "kotlin":
                    receiver = without_generics("".join(receiver.split()))  # ``List<T>.second``
                name = self.src.text(name_node)
                if kind == "impl":
                    name = ".".join(p for p in name_parts(name) if p != "?")
                candidate = _Def(kind, nodes[0], name_node, name, receiver)
                key = (name_node.start_byte, name_node.end_byte)
                held = chosen.get(key)
                if (
                    held is None
                    or _KIND_PRIORITY[kind] > _KIND_PRIORITY[held.kind]
                    or (kind == held.kind and held.receiver is None and receiver is not None)
                ):  # the pattern that saw a receiver (Kotlin's extension functions) wins
                    chosen[key] = candidate
        self.defs = sorted(
            chosen.values(), key=lambda d: (d.node.start_byte, -d.node.end_byte, d.kind)
        )
        self.def_by_node = {(d.node.start_byte, d.node.end_byte, d.node.type): d for d in self.defs}
        self.def_by_name_node = {
            (d.name_node.start_byte, d.name_node.end_byte): d for d in self.defs
        }

    def _nest(self) -> None:
        stack: list[_Def] = []
        seen: dict[str, int] = defaultdict(int)
        for definition in self.defs:
            while stack and stack[-1].node.end_byte <= definition.node.start_byte:
                stack.pop()
            # An impl is only a naming scope for what it contains, never a parent of another impl.
            definition.parent = stack[-1] if stack else None
            if self.language == "kotlin" and definition.parent is not None:
                if definition.receiver is not None:  # called as ``x.m()`` inside the class
                    self._member_extensions[definition.name].append(
                        (definition, definition.receiver)
                    )
                definition.receiver = None  # a member extension is its class's member
            if definition.receiver is not None:
                if self.language == "cpp" and definition.parent is not None:
                    # ``Foo::Run`` inside ``namespace leveldb``: leveldb's Foo.
                    definition.receiver = (
                        f"{definition.parent.qualified_name}.{definition.receiver}"
                    )
                prefix = definition.receiver
            elif definition.parent is not None:
                prefix = definition.parent.qualified_name
            else:
                prefix = self.file_scope
            qualified = f"{prefix}.{definition.name}" if prefix else definition.name
            definition.qualified_name = qualified
            if definition.kind == "impl":  # a naming scope, not a symbol: Rust allows many
                stack.append(definition)
                continue
            seen[qualified] += 1
            suffix = "" if seen[qualified] == 1 else f"#{seen[qualified]}"
            definition.symbol_id = f"{self.repo}::{self.path}::{qualified}{suffix}"
            # In Python the last definition of a name is the one that runs (typing
            # overloads first, the implementation last); elsewhere the first one.
            held = self.by_qualified.get(qualified)
            # Java keeps fields and methods apart (a field ``proxy`` and ``proxy()``): a
            # name lookup is for a call, so the method wins.
            method = held is not None and held.kind == "variable" and definition.kind == "function"
            if suffix == "" or self.language == "python" or method:
                self.by_qualified[qualified] = definition
            if definition.kind in ("class", "interface"):
                self.types_by_qualified.setdefault(qualified, definition)
            if definition.kind == "function" and self.language in _OVERLOADING:
                self._overloads[qualified].append(definition)
            stack.append(definition)

    def _mark_alternatives(self) -> None:
        if self.language == "python":
            self.alternatives = branch_variants(d for d in self.defs if d.kind != "impl")
        elif self.language in C_FAMILY:  # two of one name in a file: #if branches, either builds
            self.alternatives = preprocessor_variants(d for d in self.defs if d.kind == "function")
        else:
            self.alternatives = {}

    def _parent_id(self, definition: _Def) -> str:
        owner_name: str | None = None
        if definition.receiver is not None:
            owner_name = definition.receiver
        elif definition.parent is not None and definition.parent.kind == "impl":
            owner_name = definition.parent.name
        if owner_name is not None:
            owner = self.by_qualified.get(owner_name)
            return owner.symbol_id if owner is not None else self.module_id
        if definition.parent is not None:
            return definition.parent.symbol_id
        return self.module_id

    def _collect_imports(self, matches: list[dict[str, list[ts.Node]]]) -> None:
        for match in matches:
            if "reference.import" not in match:
                continue
            node = match["reference.import"][0]
            src = self._enclosing(node)
            around = self._enclosing_def(node)
            # An import inside a function binds its name there only (``from x import f``
            # in two functions: each ``f()`` is its own function's).
            local_to = around.qualified_name if around and around.kind == "function" else None
            for binding in import_bindings(self.language, node, self.path, self.module, self.src):
                if self.language == "csharp":  # lookups, not bindings (``_use_namespace``)
                    self._use_namespace(binding, src, csharp_namespace_of(node, self.src))
                    continue
                wildcard = binding.local is None and binding.name == "*"
                if wildcard and self.language in _OPENING and len(self.opened) < _MAX_OPENED:
                    self.opened = (*self.opened, binding.module)  # ``import acme.util._``
                if binding.local is not None and local_to is not None:
                    self.scoped_bindings[(local_to, binding.local)] = binding
                elif binding.local is not None:
                    if self.language == "kotlin":
                        self.rebound[binding.local].append(binding)
                    self.bindings[binding.local] = binding
                ref = Reference(name=binding.name, module=binding.module)
                self.edges.add(Edge.to_ref(EdgeType.IMPORTS, src, ref))

    def _enclosing(self, node: ts.Node) -> str:
        """Id of the innermost function/class/interface/module definition containing ``node``."""
        found = self._enclosing_def(node)
        return found.symbol_id if found is not None else self.module_id

    def _index_scopes(self) -> None:
        """Scope definitions by position, each with its innermost containing scope.

        Found by byte ranges, never by walking ``node.parent`` (tree-sitter's parent walks down
        from the root, so parent chains over nested calls cost cubic time)."""
        scopes = [d for d in self.defs if d.kind not in ("variable", "impl")]
        self._scope_defs = scopes
        self._scope_starts = [d.node.start_byte for d in scopes]
        self._scope_container: list[int] = []
        stack: list[int] = []
        for index, definition in enumerate(scopes):
            while stack and scopes[stack[-1]].node.end_byte <= definition.node.start_byte:
                stack.pop()
            self._scope_container.append(stack[-1] if stack else -1)
            stack.append(index)

    def _enclosing_def(self, node: ts.Node) -> _Def | None:
        """The innermost scope definition strictly containing ``node``."""
        start, end = node.start_byte, node.end_byte
        index = bisect_right(self._scope_starts, start) - 1
        while index >= 0:
            found = self._scope_defs[index]
            inner = found.node
            same = inner.start_byte == start and inner.end_byte == end and inner.type == node.type
            if inner.start_byte <= start and end <= inner.end_byte and not same:
                return found
            index = self._scope_container[index]
        return None

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

    def _use_namespace(self, binding: ImportBinding, src: str, within: str = "") -> None:
        """C#'s ``using``: a namespace (or a class, ``using static``) opened for lookups, or
        an alias of one type, which the IMPORTS edge names by its full name. .NET's own are
        left out of lookups: never the project's. Written inside ``namespace DBus``,
        ``using Protocol;`` may name ``DBus.Protocol`` (``within``): both are opened."""
        if within and binding.local is None and len(self.opened) < _MAX_OPENED:
            nested = f"{within}.{binding.module}"
            if nested not in self.opened:
                self.opened = (*self.opened, nested)
        if binding.local is not None:
            full = f"{binding.module}.{binding.name}".lstrip(".")
            self.cpp_aliases[binding.local] = full
            self.edges.add(
                Edge.to_ref(EdgeType.IMPORTS, src, Reference(name=full, module=CS_GLOBAL))
            )
            return
        own = binding.module.split(".", 1)[0] not in ("System", "Microsoft")
        if own and len(self.opened) < _MAX_OPENED and binding.module not in self.opened:
            self.opened = (*self.opened, binding.module)
        ref = Reference(name=binding.name, module=binding.module)
        self.edges.add(Edge.to_ref(EdgeType.IMPORTS, src, ref))

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

    def _add(
        self,
        edge_type: EdgeType,
        src: str,
        target: _Def | Reference,
        resolution: CallResolution | None = None,
    ) -> None:
        if isinstance(target, Reference):
            dst = target.as_dst()
        elif target.kind != "impl" and (
            target.symbol_id != src or edge_type in (EdgeType.CALLS, EdgeType.INSTANTIATES)
        ):  # a recursive call is a caller, a singleton's ``new C()`` too; not a class's own base
            dst = target.symbol_id
        else:
            return
        # One edge per (type, src, dst): the strongest resolution of its call sites. Most
        # call sites repeat an edge: the model is built only for a new or a surer one.
        key = (src, edge_type.value, dst)
        known = self._edge_keys.get(key)
        if known is not None:
            if known.resolution is None or resolution is None:
                return
            if known.resolution.rank <= resolution.rank:
                return
            self.edges.discard(known)
        ref = target if isinstance(target, Reference) else None
        edge = Edge(type=edge_type, src=src, dst=dst, ref=ref, resolution=resolution)
        self._edge_keys[key] = edge
        self.edges.add(edge)

    def _signature(self, node: ts.Node) -> str:
        found = signature_of(node, self.src)
        if self.language in C_FAMILY:
            prefix = attribute_line(node, self.src.text)
            found = f"{prefix} {found}" if prefix else found
        return found

    def _result(self) -> Extraction:
        result = Extraction(module_name=self.module)
        root = self.tree.root_node
        result.module_boundaries = tuple(c.start_point.row + 1 for c in root.named_children)
        for definition in self.defs:
            if definition.kind == "impl":
                continue
            parent_id = self._parent_id(definition)
            symbol = Symbol(
                id=definition.symbol_id,
                kind=_SYMBOL_KINDS[definition.kind],
                name=definition.name,
                qualified_name=definition.qualified_name,
                path=self.path,
                language=self.language,
                start_line=definition.node.start_point.row + 1,
                end_line=definition.node.end_point.row + 1,
                signature=self._signature(definition.node),
                alternative=definition.alternative,
                doc=first_doc_line(definition.node, self.language, self.src),
                parent_id=parent_id,
                content_hash=hash_code(self.src.text(definition.node)),
            )
            result.symbols.append(ExtractedSymbol(symbol, body_boundaries(definition.node)))
            self.edges.add(Edge(type=EdgeType.DEFINES, src=parent_id, dst=symbol.id))
        result.edges = sorted(self.edges, key=Edge.sort_key)
        return result


def extract(
    tree: ts.Tree,
    source: bytes,
    language: str,
    repo: str,
    path: str,
    deadline: float | None = None,
) -> Extraction:
    """Symbols (without File/Module nodes) and edges of one file parsed from ``source``.

    ``deadline`` (``time.thread_time()``: this thread's CPU seconds) bounds the work: past it,
    ParseTimeout is raised (the caller keeps the file's last good structure), so no file
    holds a worker for long.
    """
    return _Extractor(tree, source, language, repo, path, deadline).run()
