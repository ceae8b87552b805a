"""Caller-edge correctness against a precise reference: jedi's references on real packages.

At every call site of a package, jedi's ``goto`` (following imports) names the function or
class called; when it is one the package defines, that is a caller edge, attributed to the
innermost function or class around the call (the module otherwise).
patchstream's side: the CALLS and INSTANTIATES edges extraction gives, with cross-file
references resolved by their keys exactly as the graph joins them. Recall is the share of
jedi's caller edges patchstream has; precision the share of patchstream's edges (to the same
definitions) that jedi confirms; both per minimum resolution (exact; inferred, the default;
name-only). Correctness, never a timed figure.

    python bench/correctness.py [--packages requests,click,attr] [--c lua,zlib] [--update-results]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _c_reference import C_CORPORA, c_tree, gcc_edges, gcc_version
from _common import NPM_CORPUS, machine, npm_tree, package_tree, print_rows, update_results_row
from _cpp_reference import CPP_CORPORA, cpp_tree, gpp_edges, gpp_version
from _csharp_reference import (
    CSHARP_CORPORA,
    compared_edges,
    compiled_text,
    csharp_tree,
    mcs_calls,
    mcs_version,
)
from _dynamic_reference import (
    PHP_CORPORA,
    RUBY_CORPORA,
    TracedCorpus,
    remember_tree,
    source_states,
    traced,
    traced_tree,
)
from _dynamic_reference import compared_edges as traced_compared
from _go_reference import GO_CORPORA, go_edges, go_tree, go_version
from _java_reference import JAVA_CORPORA, java_tree, javac_edges, javac_version
from _kotlin_reference import (
    KOTLIN_CORPORA,
    SCALA_CORPORA,
    kotlin_tree,
    kotlinc_calls,
    kotlinc_version,
    remember_sources,
    scalac_calls,
)
from _kotlin_reference import compared_edges as kotlin_compared
from _rust_reference import (
    RUST_CORPORA,
    pin_rust_reference,
    rust_edges,
    rust_tree,
    rustc_version,
)
from _swift_reference import SWIFT_CORPORA, sampled_edges, swift_states, swift_tree
from _ts_reference import (
    JS_CORPORA,
    TYPESCRIPT,
    checker_edges,
    first_of_name,
    pin_checker_reference,
)
from patchstream.parsing.c_language import is_macro
from patchstream.parsing.delta import diff_states
from patchstream.parsing.extract import module_id
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.query.through_macros import MAX_MACRO_HOPS
from patchstream.schemas.graph import CallResolution, EdgeType, SymbolKind
from patchstream.schemas.state import FileState
from patchstream.stores.graph.keys import owner_key, reference_keys, shadowed, symbol_key
from patchstream.stores.graph.planner import module_of, name_only_tail

SCOPE = "t|r|main"
CACHE = Path(__file__).resolve().parent / ".cache"
CALL_EDGES = (EdgeType.CALLS, EdgeType.INSTANTIATES)
CALLABLE = (SymbolKind.FUNCTION, SymbolKind.CLASS)
Edge = tuple[str, str]


def build_states(
    root: Path, repo: str, pattern: str = "*.py", read: Callable[[bytes], bytes] = bytes
) -> dict[str, FileState]:
    """Every file under ``root`` matching ``pattern``; ``read`` gives the text each file is
    measured by (C#: its compiled branches only)."""
    builder = FileStateBuilder()
    states = {}
    for path in sorted(root.rglob(pattern)):
        if path.name.endswith(".d.ts"):
            continue
        rel = str(path.relative_to(root.parent))
        target = FileRef(tenant="t", repo=repo, ref="main", path=rel, version=1)
        states[rel] = builder.build(target, read(path.read_bytes()))
    return states


def our_edges(states: dict[str, FileState]) -> dict[Edge, int]:
    """Caller edges as the graph would answer them, each with its resolution's rank
    (``CallResolution.rank``): local ones, references joined to every symbol whose key is
    among the reference's candidate keys, and (name-only) a method call no type resolved,
    to the one function of that name in the package when it is a method."""
    by_key: dict[str, list[str]] = defaultdict(list)
    # A Scala trait runs its initializer in each class that mixes it in: callable there.
    callable_ids = {s.id for state in states.values() for s in state.symbols
                    if s.kind in CALLABLE or (s.kind is SymbolKind.INTERFACE
                                              and state.language == "scala")}  # fmt: skip
    functions: dict[str, list[str]] = defaultdict(list)
    methods: set[str] = set()
    for state in states.values():
        module = module_of(diff_states(None, state), None)
        hidden = shadowed(state.symbols, state.language)
        kinds = {s.id: s.kind for s in state.symbols}
        for symbol in state.symbols:
            key = None if symbol.id in hidden else symbol_key(SCOPE, module, symbol)
            if key is not None:
                by_key[key].append(symbol.id)
            if symbol.kind is SymbolKind.FUNCTION:
                functions[symbol.name].append(symbol.id)
                if kinds.get(symbol.parent_id or "") in (SymbolKind.CLASS, SymbolKind.INTERFACE):
                    methods.add(symbol.id)
    by_key.update(_returned_methods(states, by_key))
    edges: dict[Edge, int] = {}

    def add(edge: Edge, rank: int) -> None:
        edges[edge] = min(rank, edges.get(edge, rank))

    for state in states.values():
        for edge in state.edges:
            if edge.type not in CALL_EDGES:
                continue
            rank = edge.resolution.rank if edge.resolution is not None else 0
            if edge.ref is None:
                add((edge.src, edge.dst), rank)
                continue
            for key in reference_keys(SCOPE, edge.ref, state.language):
                for target in by_key.get(key, ()):
                    add((edge.src, target), rank)
            tail = name_only_tail(SCOPE, edge)
            if tail is not None:
                named = functions.get(tail.rsplit("|", 1)[-1], [])
                if len(named) == 1 and named[0] in methods:
                    add((edge.src, named[0]), CallResolution.NAME_ONLY.rank)
    _through_macros(states, edges)
    # Functions and classes only, as on jedi's side (a call of a variable holding a class
    # counts as a miss there: patchstream does not follow that binding yet).
    return {edge: rank for edge, rank in edges.items() if edge[1] in callable_ids}


def _through_macros(states: dict[str, FileState], edges: dict[Edge, int]) -> None:
    """``A -> M -> F`` with ``M`` a C macro is also ``A -> F``: the query service's walks step
    through macros (``query.through_macros``)."""
    macros = {s.id for state in states.values() for s in state.symbols
              if is_macro(s.language, s.signature)}  # fmt: skip
    if not macros:
        return
    out: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for (src, dst), rank in edges.items():
        if src in macros:
            out[src].append((dst, rank))
    frontier = [(src, dst, rank) for (src, dst), rank in edges.items() if dst in macros]
    for _ in range(MAX_MACRO_HOPS):
        beyond = []
        for src, macro, rank in frontier:
            for target, hop in out.get(macro, ()):
                edge, weaker = (src, target), max(rank, hop)
                if edge not in edges or edges[edge] > weaker:
                    edges[edge] = weaker
                    if target in macros:
                        beyond.append((src, target, weaker))
        frontier = beyond


def _returned_methods(
    states: dict[str, FileState], by_key: dict[str, list[str]]
) -> dict[str, list[str]]:
    """``<C's key>.m`` -> ``B.m`` for each ``m`` a class inherits from a base ``B``;
    ``<f's key>().m`` -> ``C.m`` for each function ``f`` declared to return ``C``, and
    ``<f's key>(*).m`` for each ``C`` a callback parameter of f's parameters declares: the
    keys the graph's walks through RETURNS and CALLBACK_PARAM build (``statements``)."""
    key_of = {sid: key for key, sids in by_key.items() for sid in sids}
    members: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for state in states.values():
        module = next((s.id for s in state.symbols if s.kind is SymbolKind.MODULE), "")
        for symbol in state.symbols:
            if symbol.parent_id is not None and symbol.id in key_of:  # not shadowed
                members[symbol.parent_id].append((symbol.name, symbol.id))
            okey = owner_key(SCOPE, symbol, module)  # a C++ method out of its class's file
            for owner in by_key.get(okey or "", ()):
                members[owner].append((symbol.name, symbol.id))
    bases: dict[str, list[str]] = defaultdict(list)
    for state in states.values():
        for edge in state.edges:
            if edge.type is EdgeType.INHERITS_FROM:
                bases[edge.src] += ([edge.dst] if edge.ref is None else
                                    [c for k in reference_keys(SCOPE, edge.ref, state.language)
                                     for c in by_key.get(k, ())])  # fmt: skip

    def inherited(cls: str, depth: int = 0) -> list[tuple[str, str]]:
        """A class's methods and those it inherits (three levels up), nearest first."""
        found = list(members.get(cls, ()))
        if depth < 3:
            names = {name for name, member in found if member not in java_fields}
            for base in bases.get(cls, ()):
                # Every member of a name the class does not define (a Java field and its
                # namesake method are two members).
                taken = [(n, m) for n, m in inherited(base, depth + 1) if n not in names]
                found += taken
                names |= {n for n, _ in taken}
        return found

    out: dict[str, list[str]] = defaultdict(list)
    # ``Sub.m`` where Sub inherits m: the callers the graph adds through subclasses
    # (statements.CALLERS_THROUGH_SUBCLASSES).
    java_fields = {s.id for state in states.values() for s in state.symbols
                   if state.language == "java" and s.kind is SymbolKind.VARIABLE}  # fmt: skip
    classes = [s.id for state in states.values() for s in state.symbols
               if s.kind in (SymbolKind.CLASS, SymbolKind.INTERFACE)
               and s.id in key_of]  # fmt: skip
    for cls in classes:  # an empty subclass (``class QueueScheduler extends AsyncScheduler {}``)
        # A Java field does not hide a base's method of its name (statements._OWN_MEMBER).
        own = {name for name, member in members.get(cls, ()) if member not in java_fields}
        for name, member in inherited(cls):
            if name not in own and f"{key_of[cls]}.{name}" not in by_key:
                out[f"{key_of[cls]}.{name}"].append(member)
    markers = {EdgeType.RETURNS: "()", EdgeType.CALLBACK_PARAM: "(*)"}
    returned: dict[str, list[str]] = defaultdict(list)  # a function -> the classes it returns
    for state in states.values():
        for edge in state.edges:
            marker = markers.get(edge.type)
            if marker is None or edge.src not in key_of:
                continue
            classes = ([edge.dst] if edge.ref is None else
                       [c for k in reference_keys(SCOPE, edge.ref, state.language)
                        for c in by_key.get(k, ())])  # fmt: skip
            if marker == "()":
                returned[edge.src] += classes
            for cls in classes:
                for name, member in inherited(cls):
                    out[f"{key_of[edge.src]}{marker}.{name}"].append(member)
    # ``<f's key>().g().m``: what g returns, for each g of the class f returns
    # (statements.CALLERS_THROUGH_TWO_RETURNS).
    for key, members_of in list(out.items()):
        if key.count("().") != 1 or "(*)" in key:
            continue
        for g in members_of:
            for cls in returned.get(g, ()):
                for name, member in inherited(cls):
                    out[f"{key}().{name}"].append(member)
    return out


def _caller(state: FileState, repo: str, line: int) -> str:
    """The innermost function or class around ``line`` (extraction's rule for a call's src)."""
    best = None
    for symbol in state.symbols:
        if symbol.kind not in CALLABLE:
            continue
        if symbol.start_line <= line <= symbol.end_line and (
            best is None or symbol.start_line >= best.start_line
        ):
            best = symbol
    return best.id if best is not None else module_id(repo, state.path)


def _call_sites(path: Path) -> list[tuple[int, int]]:
    """(line, column) of the callee name of every call: ``f`` in ``f()``, ``m`` in ``a.b.m()``."""
    import tree_sitter as ts

    from patchstream.parsing.languages import get_language

    tree = ts.Parser(get_language("python")).parse(path.read_bytes())
    query = ts.Query(get_language("python"), "(call function: [(identifier) @name "
                     "(attribute attribute: (identifier) @name)])")  # fmt: skip
    sites = []
    for node in ts.QueryCursor(query).captures(tree.root_node).get("name", []):
        line, byte_column = node.start_point
        prefix = path.read_bytes().splitlines()[line][:byte_column]
        sites.append((line + 1, len(prefix.decode("utf-8", errors="replace"))))
    return sites


def jedi_edges(root: Path, repo: str, states: dict[str, FileState]) -> set[Edge]:
    """Every call site's callee as jedi infers it (``goto`` following imports), when it is a
    function or class of the package: caller edges that follow re-exports and types."""
    import jedi

    project = jedi.Project(str(root.parent), added_sys_path=[str(root.parent)])
    by_line: dict[tuple[str, int], str] = {}
    for rel, state in states.items():
        for symbol in state.symbols:
            if symbol.kind in CALLABLE:
                by_line.setdefault((rel, symbol.start_line), symbol.id)
    edges: set[Edge] = set()
    for rel, state in states.items():
        path = root.parent / rel
        script = jedi.Script(path.read_text(errors="replace"), path=str(path), project=project)
        for line, column in _call_sites(path):
            try:
                names = script.goto(line, column, follow_imports=True)
            except Exception:  # jedi gives up on some constructs: that call site is left out
                continue
            for name in names:
                # Only a function or class definition is a callee: a call of a local
                # (``c = attrib.converter; c(x)``) lands on its assignment, which the
                # decorator look-back below would otherwise take for the def above it.
                if name.module_path is None or name.line is None:
                    continue
                if name.type not in ("function", "class"):
                    continue
                try:
                    target_rel = str(Path(name.module_path).relative_to(root.parent))
                except ValueError:
                    continue  # outside the package
                target = _definition_at(states.get(target_rel), by_line, target_rel, name.line)
                if target is not None:
                    edges.add((_caller(state, repo, line), target))
    return edges


def _definition_at(
    state: FileState | None, by_line: dict[tuple[str, int], str], rel: str, line: int
) -> str | None:
    """Our symbol whose definition starts at ``line`` (decorators may come first)."""
    if state is None:
        return None
    for offset in range(0, 8):
        found = by_line.get((rel, line - offset))
        if found is not None:
            return found
    return None


def measure(package: str, runtime: set[Edge] | None = None) -> dict[str, float]:
    """Static edges against jedi's; with ``runtime``, the traced edges added as the graph
    would hold them (resolution ``runtime``)."""
    root = package_tree(package)
    states = build_states(root, package)
    # jedi takes a while (tens of ms per call site): its edges are kept per package version,
    # so a change to extraction is measured again in seconds.
    import jedi

    version = getattr(__import__(package), "__version__", "unknown")
    cache = CACHE / f"jedi{jedi.__version__}-goto-defs-{package}{version}.json"
    if cache.exists():
        reference = {(a, b) for a, b in json.loads(cache.read_text())}
    else:
        reference = jedi_edges(root, package, states)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(sorted(reference)))
    return compare(states, reference, runtime=runtime or set())


def measure_typescript() -> dict[str, float]:
    """rxjs's TypeScript sources against the TypeScript compiler's checker."""
    root = npm_tree()
    states = build_states(root, "rxjs", "*.ts")
    reference = checker_edges(root, "rxjs", states, _caller)
    return compare(states, reference, same_target=first_of_name)


def measure_javascript(name: str) -> dict[str, float]:
    """An npm package's JavaScript against the TypeScript checker reading it (allowJs)."""
    root = npm_tree(JS_CORPORA[name].spec)
    states = build_states(root, name, "*.js")
    reference = checker_edges(root, name, states, _caller, javascript=True)
    return compare(states, reference, same_target=first_of_name)


def measure_go(name: str) -> dict[str, float]:
    """A Go module's packages against go/types."""
    root = go_tree(GO_CORPORA[name])
    states = build_states(root, name, "*.go")
    return compare(states, go_edges(root, name, states, _caller), same_target=first_of_name)


def measure_rust(name: str) -> dict[str, float]:
    """A crate against the calls rustc's MIR makes (``_rust_reference``)."""
    corpus = RUST_CORPORA[name]
    root = rust_tree(corpus)
    states = build_states(root, name, "*.rs")
    reference, calls = rust_edges(corpus, states, _caller)
    # A struct of no data (``PrinterBuilder { _priv: () }``) is built by no MIR statement:
    # the reference cannot say, so neither side's edges to it count.
    unbuilt = {(f"{name}/{file}", line) for file, line in map(json.loads, calls.zero_sized)}
    hidden = {symbol.id for rel, state in states.items() for symbol in state.symbols
              if (rel, symbol.start_line) in unbuilt}  # fmt: skip
    figures = compare(states, reference, same_target=first_of_name,
                      keep=lambda edge: edge[1] not in hidden)  # fmt: skip
    figures["calls"] = calls.calls
    figures["ambiguous"] = calls.ambiguous
    return figures


def measure_java(name: str) -> dict[str, float]:
    """A Java project's main sources against javac's attribution."""
    root = java_tree(JAVA_CORPORA[name])
    states = build_states(root, name, "*.java")
    return compare(states, javac_edges(root, name, states, _caller), same_target=first_of_name)


def measure_c(name: str) -> dict[str, float]:
    """A C project's files against GCC's call graph (``_c_reference``)."""
    corpus = C_CORPORA[name]
    root = c_tree(corpus)
    states = {**build_states(root, name, "*.c"), **build_states(root, name, "*.h")}
    reference = gcc_edges(root, states, corpus)
    source_level = compare(states, reference.edges, keep=reference.keeps)
    edges = reference.through_inlined(our_edges(states))
    figures = compare(states, reference.edges, keep=reference.keeps, edges=edges)
    figures["source-level recall"] = source_level["inferred recall"]
    figures["source-level precision"] = source_level["inferred precision"]
    figures["forced inline"] = len(reference.inlined)
    figures["compiled"] = reference.compiled
    figures["not compiled"] = len(reference.failed)
    figures["ambiguous names"] = len(reference.ambiguous)
    return figures


def measure_cpp(name: str) -> dict[str, float]:
    """A C++ project's files against G++'s call graph (``_cpp_reference``)."""
    corpus = CPP_CORPORA[name]
    root = cpp_tree(corpus)
    states: dict[str, FileState] = {}
    for pattern in ("*.cc", "*.cpp", "*.h", "*.hpp"):
        states.update(build_states(root, name, pattern))
    states = {path: state for path, state in states.items()
              if not any(path.split("/", 1)[1].startswith(s) for s in corpus.skip)}  # fmt: skip
    reference = gpp_edges(root, states, corpus)
    figures = compare(states, reference.edges, keep=reference.keeps)
    figures["compiled"] = reference.compiled
    figures["not compiled"] = len(reference.failed)
    figures["ambiguous names"] = len(reference.ambiguous)
    figures["as C++"] = sum(state.language == "cpp" for state in states.values())
    return figures


def measure_csharp(name: str) -> dict[str, float]:
    """A C# project against the calls Mono's compiler bound (``_csharp_reference``)."""
    corpus = CSHARP_CORPORA[name]
    root = csharp_tree(corpus)
    states = build_states(root, name, "*.cs", compiled_text)
    calls = mcs_calls(root, corpus)
    reference, ranked, figures = compared_edges(states, our_edges(states), calls)
    return {**compare(states, reference, edges=ranked), **figures}


def measure_kotlin(name: str) -> dict[str, float]:
    """A Kotlin project against the calls its bytecode makes (``_kotlin_reference``)."""
    root = kotlin_tree(KOTLIN_CORPORA[name])
    remember_sources(root)
    states = build_states(root, name, "*.kt")
    calls = kotlinc_calls(root)
    reference, ranked, figures = kotlin_compared(states, our_edges(states), calls)
    return {**compare(states, reference, edges=ranked), **figures}


def measure_scala(name: str) -> dict[str, float]:
    """A Scala project against the calls its bytecode makes (``_kotlin_reference``)."""
    corpus = SCALA_CORPORA[name]
    root = kotlin_tree(corpus)
    remember_sources(root, "*.scala")
    states = build_states(root, name, "*.scala")
    calls = scalac_calls(root, c_tree(corpus) / corpus.beside if corpus.beside else None)
    reference, ranked, figures = kotlin_compared(states, our_edges(states), calls, "scala")
    return {**compare(states, reference, edges=ranked), **figures}


def measure_traced(corpus: TracedCorpus) -> dict[str, float]:
    """A Ruby or PHP project against what its traced test run called
    (``_dynamic_reference``): recall over all of patchstream's edges, precision over those
    the run could have shown."""
    tree = traced_tree(corpus)
    remember_tree(tree)
    states = source_states(corpus, tree)
    trace = traced(corpus, tree, states)
    reference, named, checkable = traced_compared(states, our_edges(states), trace,
                                                  corpus.language)  # fmt: skip
    figures = compare(states, reference, edges=named)
    shown = compare(states, reference, edges=checkable)
    figures.update({key: value for key, value in shown.items()
                    if key.endswith((" precision", " edges"))})  # fmt: skip
    return figures


def measure_swift(name: str) -> dict[str, float]:
    """A Swift project against its hand-checked sample (``_swift_reference``)."""
    corpus = SWIFT_CORPORA[name]
    states = swift_states(swift_tree(corpus))
    edges = our_edges(states)
    figures: dict[str, float] = {"files": len(states)}
    for level in CallResolution:
        for key, value in sampled_edges(corpus, states, edges, _caller, level.rank).items():
            figures[f"{level} {key}"] = value
    figures["reference edges"] = figures[f"{CallResolution.EXACT} reference edges"]
    return figures


def compare(
    states: dict[str, FileState],
    reference: set[Edge],
    same_target: Callable[[str], str] = lambda symbol_id: symbol_id,
    runtime: set[Edge] | None = None,
    keep: Callable[[Edge], bool] = lambda edge: True,
    edges: dict[Edge, int] | None = None,
) -> dict[str, float]:
    """Recall and precision per minimum resolution; ``same_target`` maps declarations the
    reference counts as one symbol (TypeScript's overload signatures) to one id; ``keep``
    says which edges the reference speaks of (C: no macros, no code GCC did not compile)."""
    ranked: dict[Edge, int] = {}
    for (src, dst), rank in (our_edges(states) if edges is None else edges).items():
        if not keep((src, dst)):
            continue
        key = (src, same_target(dst))
        ranked[key] = min(rank, ranked.get(key, rank))
    for edge in runtime or ():
        ranked[edge] = min(CallResolution.RUNTIME.rank, ranked.get(edge, 9))
    figures: dict[str, float] = {"files": len(states), "reference edges": len(reference)}
    if runtime:  # what the static reference says of the calls a run observed
        unnamed = [dst.rsplit("::", 1)[1].rsplit(".", 1)[-1] for _, dst in runtime - reference]
        figures["runtime named by reference"] = len(runtime & reference)
        figures["runtime __init__"] = sum(name == "__init__" for name in unnamed)
        figures["runtime other dunders"] = sum(
            name != "__init__" and name.startswith("__") and name.endswith("__") for name in unnamed
        )
        figures["runtime rest"] = (
            len(unnamed) - figures["runtime __init__"] - figures["runtime other dunders"]
        )
    for level in CallResolution:  # each level with the stronger ones
        ours = {edge for edge, rank in ranked.items() if rank <= level.rank}
        found = ours & reference
        figures[f"{level} edges"] = len(ours)
        figures[f"{level} recall"] = len(found) / len(reference) if reference else 1.0
        figures[f"{level} precision"] = len(found) / len(ours) if ours else 1.0
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--packages", default="requests,click,attr")
    parser.add_argument("--typescript", default="rxjs", help="'' to leave TypeScript out")
    parser.add_argument("--javascript", default=",".join(JS_CORPORA),
                        help="'' to leave JavaScript out")  # fmt: skip
    parser.add_argument("--go", default=",".join(GO_CORPORA), help="'' to leave Go out")
    parser.add_argument("--rust", default=",".join(RUST_CORPORA), help="'' to leave Rust out")
    parser.add_argument("--java", default=",".join(JAVA_CORPORA), help="'' to leave Java out")
    parser.add_argument("--c", default=",".join(C_CORPORA), help="'' to leave C out")
    parser.add_argument("--cpp", default=",".join(CPP_CORPORA), help="'' to leave C++ out")
    parser.add_argument("--csharp", default=",".join(CSHARP_CORPORA), help="'' to leave C# out")
    parser.add_argument("--kotlin", default=",".join(KOTLIN_CORPORA), help="'' to leave Kotlin out")
    parser.add_argument("--scala", default=",".join(SCALA_CORPORA), help="'' to leave Scala out")
    parser.add_argument("--ruby", default=",".join(RUBY_CORPORA), help="'' to leave Ruby out")
    parser.add_argument("--php", default=",".join(PHP_CORPORA), help="'' to leave PHP out")
    parser.add_argument("--swift", default=",".join(SWIFT_CORPORA),
                        help="'' to leave Swift out")  # fmt: skip
    parser.add_argument("--update-results", action="store_true")
    parser.add_argument(
        "--trace",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also trace each Python package's own tests (runtime edges)",
    )
    parser.add_argument("--pin-typescript", metavar="DIR", type=Path,
                        help="rewrite the pinned TypeScript references in DIR")  # fmt: skip
    parser.add_argument(
        "--pin-rust",
        metavar="DIR",
        type=Path,
        help="write regex-syntax's pinned sources and rustc's lines to DIR",
    )
    args = parser.parse_args()
    if args.pin_rust is not None:
        count = pin_rust_reference(RUST_CORPORA["regex-syntax"], args.pin_rust)
        print(f"{args.pin_rust}: {count} edge lines")
        return
    if args.pin_typescript is not None:
        for archive in sorted(args.pin_typescript.glob("*.tar.xz")):
            out = archive.with_name(archive.name.removesuffix(".tar.xz") + ".checker.jsonl")
            if out.exists():
                print(f"{out}: {pin_checker_reference(archive, out)} lines")
        return
    import jedi

    packages = [p for p in args.packages.split(",") if p]
    print(f"corpus installed packages {', '.join(packages)} (Python); reference jedi "
          f"{jedi.__version__} goto (following imports) at every call site; machine "
          f"{machine()}", flush=True)  # fmt: skip
    rows = {}
    for package in packages:
        rows[package] = _row(measure(package), "jedi")
        print(f"{package}: {rows[package]}", flush=True)
        if args.trace:
            from _runtime_edges import traced_edges

            runtime, cost = traced_edges(package)
            traced = measure(package, runtime)
            rows[f"{package} static+runtime"] = (
                f"recall {traced['inferred recall']:.3f}, precision against jedi "
                f"{traced['inferred precision']:.3f}: {len(runtime)} runtime edges from its own "
                f"tests ({cost.suite}), {traced['runtime named by reference']:.0f} of them "
                f"jedi's; of the rest, {traced['runtime __init__']:.0f} to an __init__ (jedi "
                f"names the class), {traced['runtime other dunders']:.0f} to other dunders and "
                f"{traced['runtime rest']:.0f} to overrides, properties and callbacks jedi "
                f"resolves statically elsewhere or not at all; tracing "
                f"{cost.untraced_s:.1f} -> {cost.traced_s:.1f} s, {cost.overhead:.2f}x"
            )
            print(f"{package} static+runtime: {rows[f'{package} static+runtime']}", flush=True)
    typescript = {}
    if args.typescript:
        print(f"corpus npm {NPM_CORPUS[0]}@{NPM_CORPUS[1]} {NPM_CORPUS[2]}/ (TypeScript); "
              f"reference the TypeScript {TYPESCRIPT} checker's symbol at every call and new "
              "(aliases followed)", flush=True)  # fmt: skip
        typescript["rxjs"] = _row(measure_typescript(), "checker")
        print(f"rxjs: {typescript['rxjs']}", flush=True)
    java = {}
    for name in filter(None, args.java.split(",")):
        print(f"corpus {JAVA_CORPORA[name].label} from Debian's source archive, src/main "
              f"(Java); reference {javac_version()} attribution: the method or class at every "
              "call and new", flush=True)  # fmt: skip
        java[name] = _row(measure_java(name), "javac")
        print(f"{name}: {java[name]}", flush=True)
    c_rows = {}
    for name in filter(None, args.c.split(",")):
        print(f"corpus {C_CORPORA[name].label} (C); reference gcc {gcc_version()} -O0 "
              "-fcallgraph-info, each .c compiled alone", flush=True)  # fmt: skip
        figures = measure_c(name)
        failed = figures["not compiled"]
        c_rows[name] = (f"{_row(figures, 'gcc')}; {figures['compiled']:.0f} translation units"
                        f" compiled, {failed:.0f} not" + (" (Windows-only sources)" * bool(failed))
                        + f", {figures['ambiguous names']:.0f} names only the link step pins "
                        f"down left out; through {figures['forced inline']:.0f} forced-inline "
                        "functions as GCC credits their calls (source level only: recall "
                        f"{figures['source-level recall']:.3f}, precision "
                        f"{figures['source-level precision']:.3f})")  # fmt: skip
        print(f"{name}: {c_rows[name]}", flush=True)
    cpp_rows = {}
    for name in filter(None, args.cpp.split(",")):
        print(f"corpus {CPP_CORPORA[name].label} (C++); reference g++ {gpp_version()} -O0 "
              "-fcallgraph-info, each source compiled alone", flush=True)  # fmt: skip
        figures = measure_cpp(name)
        cpp_rows[name] = (f"{_row(figures, 'g++')}; {figures['compiled']:.0f} translation "
                          f"units compiled, {figures['not compiled']:.0f} not, "
                          f"{figures['ambiguous names']:.0f} names several definitions share "
                          f"left out; {figures['as C++']:.0f} files read as C++")  # fmt: skip
        print(f"{name}: {cpp_rows[name]}", flush=True)
    bytecode = "the method each invoke of the compiled bytecode binds (javap)"
    compiled = {  # (language, corpora, measure, short name, the reference's words when asked)
        "javascript": ("JavaScript", JS_CORPORA, measure_javascript, "checker",
                       lambda: f"the TypeScript {TYPESCRIPT} checker reading the JavaScript "
                       "(allowJs): its symbol at every call and new (aliases followed)"),
        "go": ("Go", GO_CORPORA, measure_go, "go/types", lambda: f"{go_version()}'s go/types: "
               "the function or method at every call (bench/go_callees.go)"),
        "rust": ("Rust", RUST_CORPORA, measure_rust, "rustc", lambda: f"{rustc_version()}'s "
                 "MIR (-Zunpretty=mir): the function or method at every call written in the "
                 "source (bench/_rust_reference.py)"),
        "csharp": ("C#", CSHARP_CORPORA, measure_csharp, "mcs", lambda: f"{mcs_version()}: "
                   "the method each call and new of the compiled IL binds (monodis)"),
        "kotlin": ("Kotlin", KOTLIN_CORPORA, measure_kotlin, "kotlinc",
                   lambda: f"{kotlinc_version()}: {bytecode}"),
        "scala": ("Scala", SCALA_CORPORA, measure_scala, "scalac",
                  lambda: f"scalac 2.11 (Debian): {bytecode}"),
        "ruby": ("Ruby", RUBY_CORPORA, lambda name: measure_traced(RUBY_CORPORA[name]),
                 "traced", lambda: f"{_version(['ruby', '--version'])}: every call its test "
                 "suite made (TracePoint), precision where a line that ran names the callee"),
        "swift": ("Swift", SWIFT_CORPORA, measure_swift, "hand-checked",
                  lambda: "hand-checked samples of call sites, bench/samples/*.json"),
        "php": ("PHP", PHP_CORPORA, lambda name: measure_traced(PHP_CORPORA[name]), "traced",
                lambda: f"{_version(['php', '--version'])} with Xdebug: every call its test "
                "suite made (function trace), precision where a line that ran names the callee"),
    }  # fmt: skip
    compiled_rows: dict[str, dict[str, str]] = {}
    for key, (language, corpora, measure_one, short, reference) in compiled.items():
        compiled_rows[key] = {}
        for name in filter(None, getattr(args, key).split(",")):
            print(f"corpus {corpora[name].label} ({language}); reference {reference()}",
                  flush=True)  # fmt: skip
            compiled_rows[key][name] = _row(measure_one(name), short)
            print(f"{name}: {compiled_rows[key][name]}", flush=True)
    print_rows({**rows, **typescript, **java, **c_rows, **cpp_rows,
                **{k: v for each in compiled_rows.values() for k, v in each.items()}})  # fmt: skip
    for key, each in compiled_rows.items():
        if args.update_results and each:
            update_results_row(f"correctness {key}",
                              f"python bench/correctness.py --{key} {getattr(args, key)}",
                              "; ".join(f"{k} {v}" for k, v in each.items()))  # fmt: skip
    if args.update_results and cpp_rows:
        update_results_row("correctness cpp", f"python bench/correctness.py --cpp {args.cpp}",
                          "; ".join(f"{k} {v}" for k, v in cpp_rows.items()))  # fmt: skip
    if args.update_results and rows:
        update_results_row("correctness python", "python bench/correctness.py",
                          "; ".join(f"{k} {v}" for k, v in rows.items()))  # fmt: skip
    if args.update_results and c_rows:
        update_results_row("correctness c", f"python bench/correctness.py --c {args.c}",
                          "; ".join(f"{k} {v}" for k, v in c_rows.items()))  # fmt: skip
    if args.update_results:
        if typescript:
            update_results_row("correctness typescript", "python bench/correctness.py",
                              "; ".join(f"{k} {v}" for k, v in typescript.items()))  # fmt: skip
        if java:
            update_results_row("correctness java", "python bench/correctness.py",
                              "; ".join(f"{k} {v}" for k, v in java.items()))  # fmt: skip


def _version(command: list[str]) -> str:
    """A tool's version line (``ruby 3.1.2p20 ...``)."""
    import subprocess

    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done.stdout.splitlines()[0] if done.stdout else " ".join(command)


def _row(figures: dict[str, float], reference: str) -> str:
    """The default answer (inferred and stronger) first, as the row always had it."""
    return (
        f"recall {figures['inferred recall']:.3f}, precision "
        f"{figures['inferred precision']:.3f} ({figures['reference edges']:.0f} {reference} "
        f"edges, {figures['inferred edges']:.0f} ours, {figures['files']:.0f} files); exact "
        f"only: recall {figures['exact recall']:.3f}, precision "
        f"{figures['exact precision']:.3f} ({figures['exact edges']:.0f}); with name-only: "
        f"recall {figures['name-only recall']:.3f}, precision "
        f"{figures['name-only precision']:.3f} ({figures['name-only edges']:.0f})"
    )


if __name__ == "__main__":
    main()
