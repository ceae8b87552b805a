"""Branches other than the default one are indexed as overlays of it (``stores.overlays``):
a branch stores what it changed since it left the default branch, never a copy of the rest.

- The first push of a branch is diffed against its merge base with the default branch's
  indexed commit (the fetched head if the default branch was never indexed); later pushes
  against the branch's own indexed commit, as any branch.
- Deleting a branch, or merging it (the default branch's new head contains the branch's
  indexed commit), closes its overlay: a delete of every path it changed, marked
  ``closes_overlay``. The deletes fence late deliveries; the query service's janitor drops
  the closed overlay after a grace period.
"""

from __future__ import annotations

from typing import Any

from patchstream.parsing.commit_text import HEAD_PATH
from patchstream.parsing.prose import COMMITS_DIR
from patchstream.producers.git_mirror import Mirror
from patchstream.schemas.events import PatchEvent

_CLOSING_LOG_LIMIT = 5_000  # commit pages of a branch to close with it (a push publishes as many)


def default_head(mirror: Mirror, default: str) -> str | None:
    """The default branch's indexed commit, else its fetched head."""
    return mirror.ref_sha(default) or mirror.incoming_sha(default)


def first_push_base(mirror: Mirror, default: str, after: str) -> str | None:
    """Where a branch's first push is diffed from: its merge base with the default branch
    (None: no common history, so the whole tree)."""
    head = default_head(mirror, default)
    if head is None or not mirror.has_commit(head):
        return None
    return mirror.merge_base(head, after)


def changed_paths(mirror: Mirror, default_sha: str | None, branch_sha: str) -> list[str]:
    """Every path the overlay of a branch at ``branch_sha`` holds: the files it changed since
    its merge base with ``default_sha``, and its commit-message files."""
    base = mirror.merge_base(default_sha, branch_sha) if default_sha else None
    if base is None or base == branch_sha:
        return []
    diff = mirror.diff(base, branch_sha)
    paths = {c.path for c in diff.changes} | {c.old_path for c in diff.changes if c.old_path}
    paths |= {f"{COMMITS_DIR}{sha}.md"
              for sha, _ in mirror.log_messages(base, branch_sha, _CLOSING_LOG_LIMIT)}  # fmt: skip
    paths.add(HEAD_PATH)  # where the branch's history started
    return sorted(paths)


def closing_events(
    mirror: Mirror, default_sha: str | None, branch: str, branch_sha: str, common: dict[str, Any]
) -> list[PatchEvent]:
    """Deletes that close the overlay of ``branch`` (nothing to parse)."""
    fields = {**common, "ref": branch, "commit": None, "closes_overlay": True}
    return [PatchEvent(path=path, op="delete", **fields)
            for path in changed_paths(mirror, default_sha, branch_sha)]  # fmt: skip


def merged_branches(mirror: Mirror, default: str, new_head: str) -> list[tuple[str, str]]:
    """(branch, indexed commit) of the indexed branches the default branch's new head
    contains: merged, so their overlays close."""
    found = []
    for branch in mirror.indexed_branches():
        sha = mirror.ref_sha(branch)
        if branch != default and sha is not None and mirror.is_ancestor(sha, new_head):
            found.append((branch, sha))
    return found
