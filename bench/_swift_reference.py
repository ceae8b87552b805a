"""Callers of Swift measured against a hand-checked sample: no Swift compiler installs here
(Debian 12 has none; its ``swift`` package is OpenStack's).

Each sample (``bench/samples/<corpus>.json``) is drawn at random, seed fixed, from the call
sites of a project's sources (swift-argument-parser 1.5.0's ``Sources/``; Alamofire 5.9.1's
``Source/``, held out) whose called name is the name of some definition of the project (a
function, or a type whose initializer runs): the sites that may call project code, found
from the text alone, before any resolution. Each
site was then read by hand, its callee named (a full name such as ``ParsedValues.set``, a
type for an initializer) or marked ``null`` when it calls the standard library's or
Foundation's (``Array.append`` where the project also defines an ``append``), with a note.

- **Recall**: of the sampled sites that call project code, the share where patchstream's
  edges from the caller include the callee.
- **Precision**: of patchstream's targets at the sampled sites (the edges it derives from
  those calls), the share that are the site's callee.

    python bench/_swift_reference.py --draw 200 [--corpus alamofire]   # to check by hand
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tree_sitter as ts

from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.parsing.languages import get_language
from patchstream.schemas.graph import SymbolKind
from patchstream.schemas.state import FileState

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
SAMPLES = HERE / "samples"


@dataclass(frozen=True)
class SwiftCorpus:
    name: str
    mirror: Path
    commit: str
    license: str
    source_root: str

    @property
    def label(self) -> str:
        return f"{self.name} {self.commit} ({self.license})"


SWIFT_CORPORA = {
    "swift-argument-parser": SwiftCorpus(
        "swift-argument-parser", Path("/work/.mirror/apple+swift-argument-parser/repo"),
        "1.5.0", "Apache-2.0", "Sources"),
    # Held out: sampled and checked once Swift's rules were settled on swift-argument-parser.
    "alamofire": SwiftCorpus("alamofire", Path("/work/.mirror/Alamofire+Alamofire/repo"),
                             "5.9.1", "MIT", "Source"),
}  # fmt: skip
SWIFT_CORPUS = SWIFT_CORPORA["swift-argument-parser"]


def swift_tree(corpus: SwiftCorpus = SWIFT_CORPUS) -> Path:
    """The corpus's sources at its pinned tag, checked out on first use."""
    root = CACHE / f"{corpus.name}-{corpus.commit}" / corpus.name
    if root.is_dir():
        return root
    root.mkdir(parents=True)
    sha = subprocess.run(["git", f"--git-dir={corpus.mirror}", "rev-parse", "--verify",
                          "--end-of-options", f"{corpus.commit}^{{commit}}"],
                         check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    env = {**os.environ, "GIT_INDEX_FILE": str(root.parent / "index")}
    subprocess.run(["git", f"--git-dir={corpus.mirror}", f"--work-tree={root}", "checkout",
                    "-f", sha, "--", corpus.source_root], check=True, capture_output=True,
                   env=env)  # fmt: skip
    return root


def swift_states(tree: Path) -> dict[str, FileState]:
    builder = FileStateBuilder()
    states = {}
    for path in sorted(tree.rglob("*.swift")):
        rel = str(path.relative_to(tree))
        target = FileRef(tenant="t", repo="swift", ref="main", path=rel, version=1)
        states[rel] = builder.build(target, path.read_bytes())
    return states


def _called_name(call: ts.Node) -> tuple[str, int] | None:
    """The name a call expression calls (``f`` of ``f()``, ``m`` of ``a.b.m()``) and its
    line, from the text alone."""
    callee = call.named_children[0] if call.named_child_count else None
    if callee is None:
        return None
    if callee.type == "simple_identifier":
        return callee.text.decode(), callee.start_point[0] + 1  # type: ignore[union-attr]
    if callee.type == "navigation_expression":
        suffix = callee.child_by_field_name("suffix")
        named = suffix.child_by_field_name("suffix") if suffix is not None else None
        if named is not None and named.type == "simple_identifier":
            return named.text.decode(), named.start_point[0] + 1  # type: ignore[union-attr]
    return None


def call_sites(tree: Path, names: set[str]) -> list[tuple[str, int, str]]:
    """(path, line, called name) of every call whose called name some definition has."""
    parser = ts.Parser(get_language("swift"))
    query = ts.Query(get_language("swift"), "(call_expression) @call")
    sites = []
    for path in sorted(tree.rglob("*.swift")):
        root = parser.parse(path.read_bytes()).root_node
        for call in ts.QueryCursor(query).captures(root).get("call", []):
            called = _called_name(call)
            if called is not None and called[0] in names:
                sites.append((str(path.relative_to(tree)), called[1], called[0]))
    return sorted(set(sites))


def _definition_names(states: dict[str, FileState]) -> set[str]:
    return {s.name for state in states.values() for s in state.symbols
            if s.kind in (SymbolKind.FUNCTION, SymbolKind.CLASS) and s.name != "init"}  # fmt: skip


def draw(corpus: SwiftCorpus, count: int, seed: int = 56) -> list[dict[str, object]]:
    """A new sample: ``count`` sites at random, each with its line, to be checked by hand."""
    tree = swift_tree(corpus)
    sites = call_sites(tree, _definition_names(swift_states(tree)))
    chosen = sorted(random.Random(seed).sample(sites, min(count, len(sites))))
    lines = {path: (tree / path).read_text().splitlines() for path, _, _ in chosen}
    return [{"path": path, "line": line, "called": name,
             "text": lines[path][line - 1].strip(), "callee": None, "note": ""}
            for path, line, name in chosen]  # fmt: skip


def sampled_edges(
    corpus: SwiftCorpus,
    states: dict[str, FileState],
    ours: dict[tuple[str, str], int],
    caller_at: Callable[[FileState, str, int], str],
    rank: int,
) -> dict[str, float]:
    """Recall and precision over the kept sample, for patchstream's edges of ``rank`` and
    stronger (``CallResolution.rank``). A caller's edges to definitions of the called name
    are the site's targets. Edges carry no line, so the sampled sites of one caller calling
    one name are judged together: their targets against the callees of them all."""
    sample = json.loads((SAMPLES / f"{corpus.name}.json").read_text())["sites"]
    names = {s.id: s.qualified_name for state in states.values() for s in state.symbols}
    out: dict[str, set[str]] = {}
    for (src, dst), held in ours.items():
        if held <= rank:
            out.setdefault(src, set()).add(names.get(dst, dst))
    called = found = targets = right = 0
    groups: dict[tuple[str, str], set[str]] = {}
    for site in sample:
        caller = caller_at(states[site["path"]], "swift", site["line"])
        name = site["called"]
        callees = groups.setdefault((caller, name), set())
        if site["callee"] is not None:
            callees.add(site["callee"])
            called += 1
            # Our targets: the caller's edges to a definition of the called name (a type
            # for an initializer).
            found += site["callee"] in out.get(caller, ())
    for (caller, name), callees in groups.items():
        mine = {t for t in out.get(caller, ()) if t.rsplit(".", 1)[-1] == name}
        targets += len(mine)
        right += len(mine & callees)
    return {"sites": len(sample), "reference edges": called, "found": found,
            "edges": targets, "recall": found / called if called else 1.0,
            "precision": right / targets if targets else 1.0}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--draw", type=int, help="print a new sample of this many sites")
    parser.add_argument("--corpus", default="swift-argument-parser", choices=SWIFT_CORPORA)
    args = parser.parse_args()
    if args.draw:
        print(json.dumps(draw(SWIFT_CORPORA[args.corpus], args.draw), indent=1))


if __name__ == "__main__":
    main()
