"""A git repository made by a test, and ``index``'s plan of it applied to a graph store."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from patchstream.indexing.plan import plan_index
from patchstream.parsing.hashing import hash_bytes
from patchstream.producers.tree_scan import scan_directory
from patchstream.stores.graph.cypher import CypherGraphStore
from tests.integration.deltas import delete, upsert

AREA_V1 = (
    "class Square:\n    def area(self):\n        return 1\n\n    def side(self):\n"
    "        return 1\n"
)
AREA_V2 = AREA_V1.replace("return 1\n\n    def side", "return self.s * self.s\n\n    def side")


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", "-C", str(root), "-c", "user.name=Ann", "-c",
                           "user.email=ann@example.com", *args],
                          check=True, capture_output=True, text=True,
                          env=None if env is None else {**os.environ, **env})  # fmt: skip
    return done.stdout.strip()


def commit(root: Path, files: dict[str, str], message: str, date: str | None = None) -> str:
    """A commit of ``files``; ``date`` (ISO 8601) as its author and committer date."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "-A")
    dates = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else None
    git(root, "commit", "-q", "-m", message, env=dates)
    return git(root, "rev-parse", "HEAD")


class Publisher:
    """``index``'s plan of the checkout at ``root`` applied to the graph for ``ref``: what it
    would publish, with versions that grow."""

    def __init__(self, graph: CypherGraphStore, tenant: str) -> None:
        self.graph, self.tenant, self.version = graph, tenant, 0
        self.held: dict[str, dict[str, str | None]] = {}

    def index(self, root: Path, ref: str, base: str | None = None, commits: int = 1000) -> None:
        held = dict(self.held.get(base or ref, {})) if base else self.held.setdefault(ref, {})
        if base:
            held.update(self.held.get(ref, {}))
        plan = plan_index(root, scan_directory(root, 2**20), held, commits=commits)
        mine = self.held.setdefault(ref, {})
        for write in plan.writes:
            self.version += 1
            if write.op == "delete":
                delta = delete(self.tenant, write.path, self.version, ref=ref)
                mine.pop(write.path, None)
            else:
                assert write.content is not None
                delta = upsert(self.tenant, write.path, write.content, self.version, ref=ref)
                mine[write.path] = hash_bytes(write.content.encode())
            assert self.graph.apply(delta).applied
