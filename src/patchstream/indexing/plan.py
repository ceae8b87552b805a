"""What an index of a directory publishes, from what the stores already hold: pure, shared
by the local ``index`` (it reads the stores itself) and the remote one (it reads them
through the query service's ``/v1/files``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from patchstream.errors import ContractError
from patchstream.parsing.hashing import hash_bytes
from patchstream.parsing.indexable import withheld_hash
from patchstream.parsing.prose import COMMITS_DIR
from patchstream.producers.tree_scan import ScanResult, recent_commits
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
    """Upserts for the scanned files (and the last ``commits`` commit messages) whose hash
    the stores do not both hold, deletes for the files they hold that the scan lacks. Commit
    messages stay when history is not in the scan (shallow runs, ``commits=0``)."""
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
    for commit in recent_commits(root, commits):
        path = f"{COMMITS_DIR}{commit.sha}.md"
        present.add(path)
        content = commit.as_markdown()
        digest = hash_bytes(content.encode("utf-8"))
        if held.get(path) == digest:
            continue
        plan.writes.append(PlannedWrite(path, "upsert", content, digest, commit.sha))
        plan.commits += 1
    known = {path for path in held if not path.startswith(COMMITS_DIR)}
    for gone in sorted(known - present):
        plan.writes.append(PlannedWrite(gone, "delete"))
        plan.deleted += 1
    return plan
