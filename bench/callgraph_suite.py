"""Call graphs of small programs: PyCG's micro-benchmark (119 programs in 18 categories, each
with a hand-written call graph), static edges alone and with the runtime edges of running
each program under ``patchstream trace``'s tracer.

The suite comes from a clone of github.com/vitsalis/PyCG (``--mirror``; fetched once, never
at run time) and is unpacked into ``bench/.cache``. Edges are compared between the
program's own functions, in PyCG's names (``main.MyClass.func``; ``main`` for module-level
code): a call of a class counts as a call of its ``__init__`` when it has one, as PyCG
writes it; calls into builtins and other packages are left out on both sides. PyCG names
lambdas (``main.<lambda1>``); patchstream makes a lambda bound to a name that name's
function, compared under PyCG's name; other lambdas have no symbol, so their edges count as
misses. Correctness, never a timed figure.

    python bench/callgraph_suite.py [--mirror DIR] [--update-results]
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, print_rows, update_results_row
from correctness import our_edges
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.graph import CallResolution, SymbolKind
from patchstream.schemas.state import FileState
from patchstream.tracing.run import trace_command

MIRROR = Path("/work/.mirror/vitsalis+PyCG/repo")
SUITE = Path(__file__).resolve().parent / ".cache" / "pycg"
SNIPPETS = "micro-benchmark/snippets"
Edge = tuple[str, str]


def unpack(mirror: Path) -> tuple[Path, str]:
    """The snippets, unpacked from the mirror's HEAD once; and that commit."""
    commit = subprocess.run(["git", "--git-dir", str(mirror), "rev-parse", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    root = SUITE / commit[:12]
    if not (root / SNIPPETS).is_dir():
        root.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "--git-dir", str(mirror), "archive", commit, SNIPPETS],
                                 capture_output=True, check=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root / SNIPPETS, commit


def lambda_names(file: Path) -> dict[int, str]:
    """Line -> PyCG's name of the lambda there (``<lambda2>``: the second in its scope)."""
    names: dict[int, str] = {}

    def visit(node: ast.AST, counter: list[int]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Lambda):
                counter[0] += 1
                names.setdefault(child.lineno, f"<lambda{counter[0]}>")
                visit(child, [0])
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, [0])
            else:
                visit(child, counter)

    visit(ast.parse(file.read_text()), [0])
    return names


def module_name(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class Program:
    """One snippet: its files' states and PyCG's call graph between its own functions."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        builder = FileStateBuilder()
        self.states: dict[str, FileState] = {}
        for file in sorted(directory.rglob("*.py")):
            rel = str(file.relative_to(directory))
            target = FileRef(tenant="t", repo="s", ref="main", path=rel, version=1)
            self.states[rel] = builder.build(target, file.read_bytes())
        self.modules = {module_name(p) for p in self.states}
        graph = json.loads((directory / "callgraph.json").read_text())
        self.expected = {(src, dst) for src, dsts in graph.items() for dst in dsts
                         if self.own(src) and self.own(dst)}  # fmt: skip
        self.names: dict[str, str] = {}  # symbol id -> PyCG name
        self.inits: dict[str, str] = {}  # class id -> its __init__'s id
        for path, state in self.states.items():
            for symbol in state.symbols:
                if symbol.kind is SymbolKind.MODULE:
                    self.names[symbol.id] = module_name(path)
                elif (symbol.signature or "").startswith("lambda"):  # ``x = lambda: ...``
                    scope = symbol.qualified_name.rpartition(".")[0]
                    where = ".".join(p for p in (module_name(path), scope) if p)
                    lambdas = lambda_names(directory / path)
                    self.names[symbol.id] = f"{where}.{lambdas.get(symbol.start_line, '?')}"
                elif symbol.kind in (SymbolKind.FUNCTION, SymbolKind.CLASS):
                    self.names[symbol.id] = f"{module_name(path)}.{symbol.qualified_name}"
                    if symbol.name == "__init__" and symbol.parent_id:
                        self.inits[symbol.parent_id] = symbol.id

    def own(self, name: str) -> bool:
        return any(name == m or name.startswith(f"{m}.") for m in self.modules)

    def named(self, edges: dict[Edge, int]) -> dict[Edge, int]:
        """Edges in PyCG's names; a call of a class is one of its ``__init__`` or none."""
        found: dict[Edge, int] = {}
        for (src, dst), rank in edges.items():
            dst = self.inits.get(dst, dst)
            kind = next((s.kind for st in self.states.values() for s in st.symbols
                         if s.id == dst), None)  # fmt: skip
            if kind is SymbolKind.CLASS or src not in self.names or dst not in self.names:
                continue
            edge = (self.names[src], self.names[dst])
            found[edge] = min(rank, found.get(edge, rank))
        return found

    def runtime(self) -> dict[Edge, int]:
        """Edges of one run of ``main.py`` under the tracer."""
        result = trace_command([sys.executable, "main.py"], self.directory, tenant="t",
                               repo="s", ref="main")  # fmt: skip
        edges = {(c.caller, c.callee): CallResolution.RUNTIME.rank
                 for event in result.events for c in event.calls}  # fmt: skip
        return self.named(edges)


def score(expected: set[Edge], ours: set[Edge]) -> tuple[int, int, int]:
    return len(expected & ours), len(expected), len(ours)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirror", type=Path, default=MIRROR)
    parser.add_argument("--update-results", action="store_true")
    args = parser.parse_args()
    snippets, commit = unpack(args.mirror)
    programs = sorted(p.parent for p in snippets.rglob("callgraph.json"))
    print(f"corpus PyCG micro-benchmark at {commit[:12]}: {len(programs)} programs; reference "
          f"its hand-written call graphs, edges between each program's own functions; "
          f"machine {machine()}", flush=True)  # fmt: skip
    # category -> level -> (found, expected, ours)
    totals: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for directory in programs:
        program = Program(directory)
        static = program.named(our_edges(program.states))
        runtime = program.runtime()
        levels = {
            "exact": {e for e, r in static.items() if r <= CallResolution.EXACT.rank},
            "static": {e for e, r in static.items() if r <= CallResolution.INFERRED.rank},
            "static+runtime": {e for e, r in static.items()
                               if r <= CallResolution.INFERRED.rank} | set(runtime),
            "runtime alone": set(runtime),
        }  # fmt: skip
        category = directory.parent.name
        for level, ours in levels.items():
            for key in (category, "all"):
                counts = totals[key][level]
                for i, value in enumerate(score(program.expected, ours)):
                    counts[i] += value
    rows = {}
    for key in sorted(totals, key=lambda k: (k == "all", k)):
        parts = []
        for level in ("static", "static+runtime", "exact", "runtime alone"):
            found, expected, ours = totals[key][level]
            parts.append(f"{level} {found}/{expected} recall {found / max(expected, 1):.2f} "
                         f"precision {found / max(ours, 1):.2f}")  # fmt: skip
        rows[key] = "; ".join(parts)
    print_rows(rows)
    if args.update_results:
        update_results_row("callgraph suite", "python bench/callgraph_suite.py", rows["all"])


if __name__ == "__main__":
    main()
