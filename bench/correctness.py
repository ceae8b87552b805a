"""Caller-edge correctness against a precise reference: jedi's references on real packages.

For every function, method and class a package defines (or a deterministic sample of them,
``--max-defs``), jedi's ``get_references`` lists where it is used; each use followed by ``(``
is a call, attributed to the innermost function or class around it (the module otherwise).
patchstream's side: the CALLS and INSTANTIATES edges extraction gives, with cross-file
references resolved by their keys exactly as the graph joins them. Recall is the share of
jedi's caller edges patchstream has; precision the share of patchstream's edges (to the same
definitions) that jedi confirms. Correctness, never a timed figure.

    python bench/correctness.py [--packages requests,click,attr] [--max-defs 400]
                                [--update-readme]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, package_tree, print_rows, update_readme_row
from patchstream.parsing.delta import diff_states
from patchstream.parsing.extract import module_id
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.graph import EdgeType, SymbolKind
from patchstream.schemas.state import FileState
from patchstream.stores.graph.keys import reference_keys, symbol_key
from patchstream.stores.graph.planner import module_of

SCOPE = "t|r|main"
CACHE = Path(__file__).resolve().parent / ".cache"
CALL_EDGES = (EdgeType.CALLS, EdgeType.INSTANTIATES)
CALLABLE = (SymbolKind.FUNCTION, SymbolKind.CLASS)
Edge = tuple[str, str]


def build_states(root: Path, repo: str) -> dict[str, FileState]:
    builder = FileStateBuilder()
    states = {}
    for path in sorted(root.rglob("*.py")):
        rel = str(path.relative_to(root.parent))
        target = FileRef(tenant="t", repo=repo, ref="main", path=rel, version=1)
        states[rel] = builder.build(target, path.read_bytes())
    return states


def our_edges(states: dict[str, FileState]) -> set[Edge]:
    """Caller edges as the graph would answer them: local ones, and references joined to
    every symbol whose key is among the reference's candidate keys."""
    by_key: dict[str, list[str]] = defaultdict(list)
    for state in states.values():
        module = module_of(diff_states(None, state), None)
        for symbol in state.symbols:
            key = symbol_key(SCOPE, module, symbol)
            if key is not None:
                by_key[key].append(symbol.id)
    edges: set[Edge] = set()
    for state in states.values():
        for edge in state.edges:
            if edge.type not in CALL_EDGES:
                continue
            if edge.ref is None:
                edges.add((edge.src, edge.dst))
                continue
            for key in reference_keys(SCOPE, edge.ref, state.language):
                edges.update((edge.src, target) for target in by_key.get(key, ()))
    return edges


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


def jedi_edges(
    root: Path, repo: str, states: dict[str, FileState], definitions: list[tuple[str, str]]
) -> set[Edge]:
    import jedi

    project = jedi.Project(str(root.parent), added_sys_path=[str(root.parent)])
    texts = {rel: (root.parent / rel).read_text(errors="replace") for rel in states}
    symbols = {s.id: s for state in states.values() for s in state.symbols}
    edges: set[Edge] = set()
    for rel, symbol_id in definitions:
        symbol = symbols[symbol_id]
        lines = texts[rel].splitlines()
        where = None
        for number in range(symbol.start_line, min(symbol.end_line, symbol.start_line + 30) + 1):
            match = re.search(rf"\b(?:def|class)\s+({re.escape(symbol.name)})\b", lines[number - 1])
            if match:
                where = (number, match.start(1))
                break
        if where is None:
            continue
        script = jedi.Script(texts[rel], path=str(root.parent / rel), project=project)
        try:
            references = script.get_references(*where, scope="project")
        except Exception:  # jedi gives up on some constructs: leave the definition out
            continue
        for ref in references:
            if ref.is_definition() or ref.module_path is None:
                continue
            ref_rel = str(Path(ref.module_path).relative_to(root.parent))
            if ref_rel not in states:
                continue
            line_text = texts[ref_rel].splitlines()[ref.line - 1]
            after = line_text[ref.column + len(ref.name) :].lstrip()
            if after.startswith("("):
                edges.add((_caller(states[ref_rel], repo, ref.line), symbol_id))
    return edges


def measure(package: str, max_defs: int, seed: int) -> dict[str, float]:
    root = package_tree(package)
    repo = package
    states = build_states(root, repo)
    definitions = [(rel, s.id) for rel, state in states.items() for s in state.symbols
                   if s.kind in CALLABLE]  # fmt: skip
    if len(definitions) > max_defs:
        definitions = sorted(random.Random(seed).sample(definitions, max_defs))
    wanted = {symbol_id for _, symbol_id in definitions}
    # jedi is slow (seconds per definition): its edges are kept per package version and
    # sample, so a change to extraction is measured again in seconds.
    import jedi

    version = getattr(__import__(package), "__version__", "unknown")
    cache = CACHE / f"jedi{jedi.__version__}-{package}{version}-{max_defs}-{seed}.json"
    if cache.exists():
        reference = {tuple(edge) for edge in json.loads(cache.read_text())}
    else:
        reference = jedi_edges(root, repo, states, definitions)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(sorted(reference)))
    ours = {edge for edge in our_edges(states) if edge[1] in wanted}
    found = ours & reference
    return {
        "files": len(states),
        "definitions": len(definitions),
        "jedi edges": len(reference),
        "our edges": len(ours),
        "recall": len(found) / len(reference) if reference else 1.0,
        "precision": len(found) / len(ours) if ours else 1.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--packages", default="requests,click,attr")
    parser.add_argument("--max-defs", type=int, default=400)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    import jedi

    packages = args.packages.split(",")
    print(f"corpus installed packages {', '.join(packages)} (Python); reference jedi "
          f"{jedi.__version__} get_references; up to {args.max_defs} definitions per package "
          f"(seed {args.seed}); machine {machine()}", flush=True)  # fmt: skip
    rows = {}
    for package in packages:
        figures = measure(package, args.max_defs, args.seed)
        rows[package] = (
            f"recall {figures['recall']:.3f}, precision {figures['precision']:.3f} "
            f"({figures['jedi edges']:.0f} jedi edges, {figures['our edges']:.0f} ours, "
            f"{figures['definitions']:.0f} definitions, {figures['files']:.0f} files)"
        )
        print(f"{package}: {rows[package]}", flush=True)
    print_rows(rows)
    if args.update_readme:
        update_readme_row("correctness python", "python bench/correctness.py",
                          "; ".join(f"{k} {v}" for k, v in rows.items()))  # fmt: skip


if __name__ == "__main__":
    main()
