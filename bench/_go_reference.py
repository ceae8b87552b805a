"""The Go side of ``correctness.py``: caller edges by go/types (``go_callees.go``, run with
Debian's ``golang-go``) over a module with no dependencies, mapped onto patchstream's
symbols as the TypeScript checker's are (``_ts_reference.edges_from_lines``)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from _c_reference import c_tree
from _ts_reference import Caller, edges_from_lines
from patchstream.schemas.state import FileState

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class GoCorpus:
    name: str
    mirror: Path
    commit: str
    licence: str

    @property
    def label(self) -> str:
        return f"{self.name} at {self.commit} ({self.licence})"


# Measured as found: no rule was tuned on either.
GO_CORPORA = {
    "goldmark": GoCorpus("goldmark", Path("/work/.mirror/yuin+goldmark/repo"), "v1.7.8", "MIT"),
    "toml": GoCorpus("toml", Path("/work/.mirror/BurntSushi+toml/repo"), "v1.4.0", "MIT"),
}


def go_tree(corpus: GoCorpus) -> Path:
    """The module at its pinned tag without what ``go build`` leaves out: tests, ``_*`` and
    ``testdata`` folders (the reference reads none of them)."""
    root = c_tree(corpus)  # type: ignore[arg-type]
    for path in sorted(root.rglob("*"), reverse=True):
        if path.is_dir() and (path.name.startswith(("_", ".")) or path.name == "testdata"):
            shutil.rmtree(path)
        elif path.name.endswith("_test.go"):
            path.unlink()
    return root


def go_version() -> str:
    return subprocess.run(["go", "version"], check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def go_edges(
    root: Path, repo: str, states: dict[str, FileState], caller: Caller
) -> set[tuple[str, str]]:
    """(caller id, callee id) for every call whose callee go/types finds in the module."""
    done = subprocess.run(["go", "run", str(HERE / "go_callees.go"), str(root)], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return edges_from_lines(done.stdout.splitlines(), root, repo, states, caller)
