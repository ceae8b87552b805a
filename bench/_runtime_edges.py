"""Runtime edges for the correctness bench: a package's own test suite, run from its sdist
under ``patchstream trace``'s tracer, and the tracing overhead on the same command.

The sdist is the installed version's (fetched from PyPI once into the bench cache), so its
symbol ids match the installed tree the static side reads: ``click::src/click/core.py::f``
becomes ``click::click/core.py::f``. Only edges between the package's own files count (a test
calling into the package is not an edge jedi's reference has).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from patchstream.tracing.run import trace_command

SDISTS = Path.home() / ".cache" / "patchstream-bench" / "sdists"
TREES = Path(__file__).resolve().parent / ".cache" / "traced"
DISTRIBUTION = {"attr": "attrs"}  # import name -> distribution, where they differ
# The suites' own configuration turns this pytest's deprecations into errors.
PYTEST = ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
          "-W", "ignore::pytest.PytestRemovedIn10Warning", "tests"]  # fmt: skip

Edge = tuple[str, str]


@dataclass(frozen=True)
class TraceCost:
    untraced_s: float
    traced_s: float
    suite: str  # the suite's own last line: what ran

    @property
    def overhead(self) -> float:
        return self.traced_s / self.untraced_s if self.untraced_s else 0.0


def sdist_tree(package: str) -> Path:
    """The installed version's sdist, unpacked (downloaded from PyPI the first time)."""
    dist = DISTRIBUTION.get(package, package)
    version = metadata.version(dist)
    tree = TREES / f"{dist}-{version}"
    if tree.is_dir():
        return tree
    archive = SDISTS / f"{dist}-{version}.tar.gz"
    if not archive.exists():
        SDISTS.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                        ":all:", f"{dist}=={version}", "-d", str(SDISTS), "-q"],
                       check=True)  # fmt: skip
    TREES.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(TREES, filter="data")
    return tree


def traced_edges(package: str) -> tuple[set[Edge], TraceCost]:
    """The caller edges the package's tests exercised, and what tracing cost: seconds of the
    suite untraced and traced, their ratio, and how many tests ran."""
    tree = sdist_tree(package)
    command = [sys.executable, *PYTEST]
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree / "src")  # the sdist's code, not site-packages'
    try:
        started = time.perf_counter()
        plain = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)
        untraced = time.perf_counter() - started
        result = trace_command(command, tree, tenant="bench", repo=package, ref="main")
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    inside = f"{package}::src/"
    edges = set()
    for event in result.events:
        for call in event.calls:
            if call.caller.startswith(inside) and call.callee.startswith(inside):
                edges.add((_installed(call.caller, package), _installed(call.callee, package)))
    own = {e for e in edges if e[0].startswith(f"{package}::{package}/")
           and e[1].startswith(f"{package}::{package}/")}  # fmt: skip
    summary = plain.stdout.strip().splitlines()[-1] if plain.stdout.strip() else ""
    # Kept beside the tree for a look at what the reference lacks (``--explain``).
    (tree.parent / f"{tree.name}.runtime-edges.json").write_text(json.dumps(sorted(own)))
    return own, TraceCost(untraced, result.seconds, summary)


def _installed(symbol_id: str, package: str) -> str:
    return f"{package}::" + symbol_id.removeprefix(f"{package}::src/")
