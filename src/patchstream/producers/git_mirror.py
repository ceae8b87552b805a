"""Bare mirrors of registered repositories, and what changed between two commits.

Contents are read from the object database (``git cat-file`` by the parse stage); nothing is
ever checked out. Symlinks (mode 120000) and submodules (160000) are skipped; paths that
could escape a checkout are rejected.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from patchstream.errors import ContractError, PatchstreamError
from patchstream.schemas.paths import validate_repo_path

ZERO_SHA = "0" * 40
_SKIPPED_MODES = ("120000", "160000")


class GitError(PatchstreamError):
    """A git command failed."""


@dataclass(frozen=True)
class FileChange:
    status: str  # A, M, D, R (rename), T (type change)
    path: str
    blob: str | None  # the new blob; None for deletions
    old_path: str | None = None


@dataclass
class DiffResult:
    changes: list[FileChange]
    rejected: list[str]


def _git(git_dir: Path | None, *args: str, timeout: float = 300) -> bytes:
    command = ["git", *(["--git-dir", str(git_dir)] if git_dir else []), *args]
    result = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {' '.join(args[:2])} failed: {message}")
    return result.stdout


class Mirror:
    def __init__(self, repos_dir: Path, tenant: str, name: str, clone_url: str) -> None:
        self.path = repos_dir / tenant / f"{name}.git"
        self.clone_url = clone_url

    def fetch(self) -> None:
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _git(None, "clone", "--mirror", "--quiet", self.clone_url, str(self.path))
        else:
            _git(self.path, "fetch", "--prune", "--force", "--quiet", "origin",
                 "+refs/heads/*:refs/heads/*")  # fmt: skip

    def ref_sha(self, ref: str) -> str | None:
        if not self.path.exists():
            return None
        try:
            return (
                _git(self.path, "rev-parse", "--verify", "--quiet", f"refs/heads/{ref}")
                .decode()
                .strip()
                or None
            )
        except GitError:
            return None

    def has_commit(self, sha: str) -> bool:
        try:
            _git(self.path, "cat-file", "-e", f"{sha}^{{commit}}")
            return True
        except GitError:
            return False

    def files(self, sha: str) -> DiffResult:
        """Every file of a commit, as additions."""
        out = _git(self.path, "ls-tree", "-r", "-z", sha)
        changes, rejected = [], []
        for record in out.decode("utf-8", "surrogateescape").split("\0"):
            if not record:
                continue
            meta, path = record.split("\t", 1)
            mode, kind, blob = meta.split()
            if kind != "blob" or mode in _SKIPPED_MODES:
                rejected.append(path)
                continue
            if _valid(path):
                changes.append(FileChange("A", path, blob))
            else:
                rejected.append(path)
        return DiffResult(changes, rejected)

    def diff(self, before: str | None, after: str) -> DiffResult:
        """What changed from ``before`` to ``after`` (everything when there is no before)."""
        if not before or before == ZERO_SHA or not self.has_commit(before):
            return self.files(after)
        out = _git(self.path, "diff-tree", "-r", "-z", "-M", "--raw", "--no-commit-id",
                   before, after)  # fmt: skip
        return parse_raw_diff(out)

    def log_messages(
        self, before: str | None, after: str, limit: int = 100
    ) -> list[tuple[str, str]]:
        """(sha, message) of the commits in before..after, newest first."""
        span = after if not before or before == ZERO_SHA else f"{before}..{after}"
        out = _git(self.path, "log", f"-n{limit}", "--format=%H%x1f%B%x1e", span)
        found = []
        for record in out.decode("utf-8", "replace").split("\x1e"):
            fields = record.strip("\n").split("\x1f")
            if len(fields) == 2 and fields[0]:
                found.append((fields[0], fields[1].strip()))
        return found


def _valid(path: str) -> bool:
    try:
        validate_repo_path(path)
    except ContractError:
        return False
    return True


def parse_raw_diff(out: bytes) -> DiffResult:
    """Parse ``git diff-tree -r -z --raw`` output."""
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    changes: list[FileChange] = []
    rejected: list[str] = []
    index = 0
    while index < len(fields) and fields[index]:
        meta = fields[index].lstrip(":").split()
        _old_mode, new_mode, _old_blob, new_blob, status = meta[:5]
        letter = status[0]
        if letter in ("R", "C"):
            old_path, path = fields[index + 1], fields[index + 2]
            index += 3
        else:
            old_path, path = None, fields[index + 1]
            index += 2
        if new_mode in _SKIPPED_MODES or not _valid(path) or (old_path and not _valid(old_path)):
            rejected.append(path)
            continue
        if letter == "D":
            changes.append(FileChange("D", path, None))
        elif letter == "R":
            changes.append(FileChange("R", path, new_blob, old_path))
        else:  # A, M, T, C
            changes.append(FileChange("A" if letter == "C" else letter, path, new_blob))
    return DiffResult(changes, rejected)
