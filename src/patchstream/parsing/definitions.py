"""The definitions phase of extraction: a file's definitions (chosen among the patterns that
match one name), their nesting and qualified names, scopes by position, and its imports. The
base of ``extract._Extractor``; references and the edges built from them come after."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict

import tree_sitter as ts

from patchstream.parsing.c_language import is_attribute_line, preprocessor_variants
from patchstream.parsing.csharp_language import csharp_namespace_of
from patchstream.parsing.languages import C_FAMILY
from patchstream.parsing.modules import (
    CS_GLOBAL,
    ImportBinding,
    import_bindings,
    required_module,
)
from patchstream.parsing.node_text import name_parts, without_generics
from patchstream.parsing.receiver_types import _Def, branch_variants
from patchstream.parsing.rust_language import child_modules, type_aliases
from patchstream.parsing.type_edges import TypeEdges
from patchstream.schemas.graph import Edge, EdgeType, Reference

# When two patterns name the same identifier (``const f = () => {}`` is a function and a
# variable; a Go interface type_spec also matches the generic type pattern) the higher wins.
_KIND_PRIORITY = {"function": 5, "interface": 4, "class": 3, "module": 2, "impl": 1, "variable": 0}
_OVERLOADING = frozenset({"java", "csharp"})
# Whose wildcard imports (``import acme.util.*``, ``import acme.util._``) a name the file does
# not bind is looked for in, after its own package (``resolution``, ``keys.reference_keys``).
_OPENING = frozenset({"kotlin", "scala"})
# Every reference of a C# file carries the namespaces it opens (one candidate key each):
# a file of thousands of ``using`` lines must not make every call thousands of keys.
_MAX_OPENED = 24


class Definitions(TypeEdges):
    repo: str
    path: str
    _child_modules: frozenset[str] | None = None  # Rust's ``mod x;`` of this file
    _type_aliases: dict[str, str] | None = None  # Rust's ``type A = B<..>;`` of this file
    module_id: str
    _scope_defs: list[_Def]
    _scope_starts: list[int]
    _scope_container: list[int]
    alternatives: dict[str, list[_Def]]

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
                imported = self.language == "javascript" and kind == "variable"
                if imported and required_module(nodes[0], self.src) is not None:
                    continue  # ``const X = require("./x")``: an import
                name_node = match["name"][0]
                receiver = self.src.text(match["receiver"][0]) if "receiver" in match else None
                if receiver is not None and self.language == "kotlin":
                    receiver = without_generics("".join(receiver.split()))  # ``List<T>.second``
                name = self.src.text(name_node)
                if kind == "impl":
                    name = ".".join(p for p in name_parts(name) if p != "?")
                    if self.language == "rust":  # ``impl OwnedDFA``: DFA's methods
                        name = self._rust_aliases().get(name, name)
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
                if self.language == "rust":
                    binding = self._rust_binding(binding, node)
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

    def _rust_aliases(self) -> dict[str, str]:
        if self._type_aliases is None:
            self._type_aliases = type_aliases(self.tree.root_node, self.src)
        return self._type_aliases

    def _rust_binding(self, binding: ImportBinding, node: ts.Node) -> ImportBinding:
        """A ``use`` of a module this file declares (``mod compiler; use compiler::X``) is
        that child's; a type a ``pub use`` re-exports is a definition here (``rust.scm``)
        whose base is the type it names, so its members are found under either name."""
        if self._child_modules is None:
            self._child_modules = child_modules(self.tree.root_node, self.src)
        head = binding.module.split("::", 1)[0]
        if head in self._child_modules:
            binding = ImportBinding(binding.local, f"{self.module}::{binding.module}",
                                    binding.name)  # fmt: skip
        alias = self.by_qualified.get(binding.local or "")
        exported = node.named_child_count and node.named_children[0].type == "visibility_modifier"
        if exported and alias is not None and alias.node.type == "identifier":
            ref = Reference(name=binding.name, module=binding.module)
            self.edges.add(Edge.to_ref(EdgeType.INHERITS_FROM, alias.symbol_id, ref))
        return binding

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
