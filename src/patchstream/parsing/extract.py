"""Structure extraction: run a language's tag query over a tree and build symbols and edges.

The query (``queries/<language>.scm``) does the matching; this module turns its captures into
graph contracts. Nesting comes from byte ranges (a sorted sweep, no recursion), names are
resolved against the file's own definitions first, then its imports; whatever points outside
the file becomes a :class:`Reference` for the graph sink to resolve.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

import tree_sitter as ts

from patchstream.parsing.c_language import attribute_line
from patchstream.parsing.cpp_language import using_aliases
from patchstream.parsing.hashing import hash_code
from patchstream.parsing.incremental import ParseTimeout
from patchstream.parsing.kotlin_types import type_aliases
from patchstream.parsing.languages import C_FAMILY, get_query
from patchstream.parsing.modules import ImportBinding, module_name
from patchstream.parsing.node_text import (
    body_boundaries,
    first_doc_line,
    name_parts,
    signature_of,
)
from patchstream.parsing.receiver_types import _Def
from patchstream.parsing.reference_edges import ReferenceEdges
from patchstream.parsing.ruby_language import local_names
from patchstream.parsing.source import PhpSource, RubySource, Source
from patchstream.schemas.graph import (
    CallResolution,
    Edge,
    EdgeType,
    Reference,
    Symbol,
    SymbolKind,
)

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


def file_id(repo: str, path: str) -> str:
    return f"{repo}::{path}"


def module_id(repo: str, path: str) -> str:
    return f"{repo}::{path}::{MODULE_MARKER}"


class _Extractor(ReferenceEdges):
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
