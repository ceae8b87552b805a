"""What an index of a directory publishes, from what the stores already hold: pure, shared
by the local ``index`` (it reads the stores itself) and the remote one (it reads them
through the query service's ``/v1/files``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from patchstream.errors import ContractError
from patchstream.parsing.commit_text import HEAD_PATH, commit_path, render_commit
from patchstream.parsing.hashing import hash_bytes
from patchstream.parsing.indexable import withheld_hash
from patchstream.parsing.prose import COMMITS_DIR
from patchstream.producers.git_history import HistoryCommit, head_commit, read_history
from patchstream.producers.tree_scan import ScanResult
from patchstream.schemas.discussions import DISCUSSIONS_DIR
from patchstream.schemas.events import WithheldContent
from patchstream.schemas.paths import validate_repo_path


@dataclass(frozen=True)
class PlannedWrite:
    path: str
    op: Literal["upsert", "delete"]
    content: str | None = None
    content_hash: str | None = None
    commit: str | None = None
    withheld: WithheldContent | None = None


@dataclass
class IndexPlan:
    writes: list[PlannedWrite] = field(default_factory=list)
    unchanged: int = 0
    deleted: int = 0
    commits: int = 0
    invalid_paths: int = 0


def plan_index(
    root: Path, scan: ScanResult, held: Mapping[str, str | None], commits: int
) -> IndexPlan:
    """Upserts for the scanned files (and the pages of the last ``commits`` commits reachable
    from the head, with ``_commits/HEAD``) whose hash the stores do not both hold, deletes for
    the files they hold that the scan lacks."""
    plan = IndexPlan()
    for rel in scan.files:
        content = (root / rel).read_bytes().decode("utf-8", errors="replace")
        digest = hash_bytes(content.encode("utf-8"))
        if held.get(rel) == digest:
            plan.unchanged += 1
            continue
        try:
            validate_repo_path(rel)
        except ContractError:
            plan.invalid_paths += 1
            continue
        plan.writes.append(PlannedWrite(rel, "upsert", content, digest))
    for file in scan.withheld:  # a flagged name, never the content
        digest = withheld_hash(file.reason, file.size)
        if held.get(file.path) == digest:
            plan.unchanged += 1
            continue
        try:
            validate_repo_path(file.path)
        except ContractError:
            plan.invalid_paths += 1
            continue
        withheld = WithheldContent(reason=file.reason, size=file.size)
        plan.writes.append(PlannedWrite(file.path, "upsert", None, digest, withheld=withheld))
    present = set(scan.files) | {file.path for file in scan.withheld}
    # Discussions are the repository's, not the tree's: an index never takes them away.
    present |= {path for path in held if path.startswith(DISCUSSIONS_DIR)}
    history, complete = _history(root, held, commits)
    if not complete and not history and commits > 0:
        present |= {path for path in held if path.startswith(COMMITS_DIR)}
    pages = [(commit_path(c.info.sha), render_commit(c.info, c.message), c.info.sha)
             for c in history]  # fmt: skip
    if history:  # git log starts at the head
        pages.append((HEAD_PATH, f"{history[0].info.sha}\n", history[0].info.sha))
    for path, content, sha in pages:
        present.add(path)
        digest = hash_bytes(content.encode("utf-8"))
        if held.get(path) == digest:
            continue
        plan.writes.append(PlannedWrite(path, "upsert", content, digest, sha))
        plan.commits += path != HEAD_PATH
    # History read whole: a commit page no longer reachable (a force-push, or a view at an
    # older commit than its base's pages) goes. Read in part (a limit, a shallow clone, no
    # git): the pages beyond it stay.
    known = {path for path in held if complete or not path.startswith(COMMITS_DIR)}
    for gone in sorted(known - present):
        plan.writes.append(PlannedWrite(gone, "delete"))
        plan.deleted += 1
    return plan


def _history(
    root: Path, held: Mapping[str, str | None], commits: int
) -> tuple[list[HistoryCommit], bool]:
    """The history to publish; nothing to read when the stores already hold the pages of
    this head (sympy's 62,658 commits take ~20 s to read, an unchanged re-index none)."""
    head = head_commit(root) if commits > 0 else None
    if head is not None and held.get(HEAD_PATH) == hash_bytes(f"{head[0]}\n".encode()):
        pages = sum(1 for path in held if path.startswith(COMMITS_DIR) and path != HEAD_PATH)
        if pages >= min(commits, head[1]):
            return [], False
    return read_history(root, commits)
