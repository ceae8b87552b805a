"""The TypeScript side of ``correctness.py``: caller edges by the TypeScript compiler's
checker (``ts_callees.js``) over a project, mapped onto patchstream's symbols.

The compiler is installed once from npm into ``bench/.cache/typescript-<version>``, outside
the project's dependencies.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from patchstream.schemas.graph import SymbolKind
from patchstream.schemas.state import FileState

TYPESCRIPT = "5.9.3"
HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
CALLABLE = (SymbolKind.FUNCTION, SymbolKind.CLASS)
Caller = Callable[[FileState, str, int], str]


def typescript_module() -> Path:
    prefix = CACHE / f"typescript-{TYPESCRIPT}"
    module = prefix / "node_modules" / "typescript"
    if not (module / "package.json").exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix",
                        str(prefix), f"typescript@{TYPESCRIPT}"], check=True)  # fmt: skip
    return module


@dataclass(frozen=True)
class NpmCorpus:
    """A package's sources as npm ships them (``npm pack``): JavaScript packages ship theirs."""

    package: str
    version: str
    folder: str
    licence: str

    @property
    def label(self) -> str:
        return f"npm {self.package}@{self.version} {self.folder}/ ({self.licence})"

    @property
    def spec(self) -> tuple[str, str, str]:
        return (self.package, self.version, self.folder)


# JavaScript measured against the checker, as found (no rule was tuned on either).
JS_CORPORA = {
    "eslint": NpmCorpus("eslint", "9.39.1", "lib", "MIT"),
    "mocha": NpmCorpus("mocha", "11.7.5", "lib", "MIT"),
}


def checker_edges(
    root: Path, repo: str, states: dict[str, FileState], caller: Caller, javascript: bool = False
) -> set[tuple[str, str]]:
    """(caller id, callee id) for every call and ``new`` whose callee the checker finds in
    the project. A symbol declared several times (overload signatures, a class and its
    constructor) counts once, as its first declaration: the one a key finds in the graph."""
    return edges_from_lines(checker_lines(root, javascript), root, repo, states, caller)


def checker_lines(root: Path, javascript: bool = False) -> list[str]:
    """``ts_callees.js``'s JSON lines for the TypeScript (or, ``javascript``, the JavaScript)
    sources under ``root``."""
    argv = ["node", str(HERE / "ts_callees.js"), str(typescript_module()), str(root)]
    done = subprocess.run([*argv, *(["js"] if javascript else [])], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return done.stdout.splitlines()


def pin_checker_reference(archive: Path, out: Path) -> int:
    """Write the checker's lines for the sources in ``archive`` (a tarball of one folder,
    ``src/`` or ``lib/``; JavaScript when it holds no TypeScript) to ``out``: the stored
    reference of a pinned test. Returns the count."""
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
        [root] = Path(tmp).iterdir()
        javascript = not any(root.rglob("*.ts"))
        lines = checker_lines(root, javascript)
    out.write_text("".join(f"{line}\n" for line in lines))
    return len(lines)


def edges_from_lines(
    lines: list[str], root: Path, repo: str, states: dict[str, FileState], caller: Caller
) -> set[tuple[str, str]]:
    """A reference tool's JSON lines ([caller file, call line, callee file, callee's first
    line, callee's name line], files relative to ``root``) as (caller id, callee id)."""
    prefix = root.name
    by_line: dict[tuple[str, int], str] = {}
    for rel, state in states.items():
        for symbol in state.symbols:
            if symbol.kind in CALLABLE:
                by_line.setdefault((rel, symbol.start_line), symbol.id)
    edges: set[tuple[str, str]] = set()
    for raw in lines:
        src_file, line, dst_file, start, name_line = json.loads(raw)
        src_rel, dst_rel = f"{prefix}/{src_file}", f"{prefix}/{dst_file}"
        if src_rel not in states:
            continue
        target = by_line.get((dst_rel, start)) or by_line.get((dst_rel, name_line))
        if target is not None:
            edges.add((caller(states[src_rel], repo, line), first_of_name(target)))
    return edges


def first_of_name(symbol_id: str) -> str:
    """``f#3`` (a later declaration of ``f``: an overload) -> ``f``."""
    base, mark, number = symbol_id.rpartition("#")
    return base if mark and number.isdigit() else symbol_id
