"""Bare mirrors of registered repositories, and what changed between two commits.

Contents are read from the object database (``git cat-file`` by the parse stage); nothing is
ever checked out. Symlinks (mode 120000) and submodules (160000) are skipped; paths that
could escape a checkout are rejected.

Everything that reaches git from a webhook is untrusted, signed or not: object ids must be
hashes, branch names must pass ``git check-ref-format``, revisions follow ``--end-of-options``,
and git runs with a minimal environment (no inherited secrets, no system or global config, no
``ext::`` or other transports beyond http(s), ssh, git and file under the allowed roots).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from patchstream.errors import ContractError, PatchstreamError
from patchstream.schemas.paths import validate_repo_path
from patchstream.system.git_safety import UnsafeGitInput, git_environment, validate_object_id

ZERO_SHA = "0" * 40
_SKIPPED_MODES = ("120000", "160000")
_REMOTE_SCHEMES = ("https", "http", "ssh", "git")
_SCP_LIKE = re.compile(r"[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[A-Za-z0-9._~/-]+")


class GitError(PatchstreamError):
    """A git command failed."""


def validate_branch(name: object) -> str:
    """A branch name git itself accepts (``git check-ref-format --branch``), or UnsafeGitInput."""
    if not isinstance(name, str) or not name or len(name) > 200 or name[0] in "-@":
        raise UnsafeGitInput(f"branch name {repr(name)[:80]} is refused", "bad_ref")
    result = subprocess.run(
        ["git", "check-ref-format", f"refs/heads/{name}"],
        capture_output=True, env=git_environment(), timeout=10, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        raise UnsafeGitInput(f"branch name {name[:80]!r} is not a valid git ref", "bad_ref")
    return name


def validate_clone_url(url: str, local_roots: Sequence[str | Path]) -> str:
    """A clone URL git may fetch: http(s)/ssh/git, or ``file://`` under one of ``local_roots``.

    ``ext::`` (runs a command), other ``transport::`` forms, bare local paths, option-like
    values and local paths outside the configured roots are refused.
    """
    if not url or url.startswith("-") or any(ord(c) < 0x21 or c == "\x7f" for c in url):
        raise UnsafeGitInput(f"clone URL {redact_url(url)!r} is refused", "bad_url")
    if "::" in url.split("/", 1)[0]:
        raise UnsafeGitInput(f"clone URL {redact_url(url)!r}: transport helpers are refused",
                             "bad_url")  # fmt: skip
    parts = urlsplit(url)
    if parts.scheme in _REMOTE_SCHEMES and parts.netloc:
        return url
    if parts.scheme == "file":
        local = Path(parts.path).resolve()
        for root in local_roots:
            if local.is_relative_to(Path(root).resolve()):
                return url
        raise UnsafeGitInput(
            f"clone URL {url!r} is a local path outside the allowed roots; add its directory "
            "to PATCHSTREAM_GATEWAY__LOCAL_ROOTS", "bad_url",
        )  # fmt: skip
    if not parts.scheme and _SCP_LIKE.fullmatch(url):
        return url
    raise UnsafeGitInput(f"clone URL {redact_url(url)!r}: scheme not allowed", "bad_url")


def redact_url(url: str) -> str:
    """``url`` without its password (for logs and error messages)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable url>"
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


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
    command = ["git", "-c", "protocol.ext.allow=never",
               *(["--git-dir", str(git_dir)] if git_dir else []), *args]  # fmt: skip
    result = subprocess.run(command, capture_output=True, timeout=timeout, check=False,
                            env=git_environment())  # fmt: skip
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip()[:500]
        message = re.sub(r"://[^/@\s]*@", "://***@", message)  # never echo credentials
        raise GitError(f"git {args[0]} failed: {message}")
    return result.stdout


class Mirror:
    def __init__(
        self,
        repos_dir: Path,
        tenant: str,
        name: str,
        clone_url: str,
        local_roots: Sequence[str | Path] = (),
    ) -> None:
        self.path = repos_dir / tenant / f"{name}.git"
        self.clone_url = clone_url
        self.local_roots = tuple(local_roots)

    def fetch(self) -> None:
        """Bring the remote's branches into ``refs/incoming/*``. ``refs/heads/*`` is what was
        indexed: it moves only in ``mark_indexed``, after the push's events were published."""
        validate_clone_url(self.clone_url, self.local_roots)
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _git(None, "init", "--bare", "--quiet", "--", str(self.path))
        _git(self.path, "fetch", "--prune", "--force", "--quiet", "--", self.clone_url,
             "+refs/heads/*:refs/incoming/*")  # fmt: skip

    def mark_indexed(self, ref: str, sha: str | None) -> None:
        """Record ``sha`` as the indexed commit of branch ``ref`` (None: the branch is gone)."""
        name = f"refs/heads/{validate_branch(ref)}"
        if sha is None:
            if self.ref_sha(ref) is not None:
                _git(self.path, "update-ref", "-d", "--", name)
            return
        _git(self.path, "update-ref", "--", name, validate_object_id(sha))

    def incoming_sha(self, ref: str) -> str | None:
        """The branch's head as last fetched from the remote."""
        return self._resolve(f"refs/incoming/{validate_branch(ref)}")

    def is_ancestor(self, older: str, newer: str) -> bool:
        try:
            _git(self.path, "merge-base", "--is-ancestor", "--end-of-options",
                 validate_object_id(older), validate_object_id(newer))  # fmt: skip
            return True
        except GitError:
            return False

    def merge_base(self, one: str, other: str) -> str | None:
        """The best common ancestor of two commits (None: unrelated histories)."""
        try:
            out = _git(self.path, "merge-base", "--end-of-options", validate_object_id(one),
                       validate_object_id(other))  # fmt: skip
        except GitError:
            return None
        found = out.decode().strip()
        return validate_object_id(found) if found else None

    def _resolve(self, name: str) -> str | None:
        if not self.path.exists():
            return None
        try:
            out = _git(self.path, "rev-parse", "--verify", "--quiet", "--end-of-options", name)
        except GitError:
            return None
        return out.decode().strip() or None

    def ref_sha(self, ref: str) -> str | None:
        """The branch's indexed commit."""
        return self._resolve(f"refs/heads/{validate_branch(ref)}")

    def has_commit(self, sha: str) -> bool:
        try:
            _git(
                self.path,
                "cat-file",
                "-e",
                "--end-of-options",
                f"{validate_object_id(sha)}^{{commit}}",
            )
            return True
        except GitError:
            return False

    def files(self, sha: str) -> DiffResult:
        """Every file of a commit, as additions."""
        out = _git(self.path, "ls-tree", "-r", "-z", "--end-of-options", validate_object_id(sha))
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
        validate_object_id(after, "after")
        if before is not None:
            validate_object_id(before, "before")
        if not before or before == ZERO_SHA or not self.has_commit(before):
            return self.files(after)
        out = _git(self.path, "diff-tree", "-r", "-z", "-M", "--raw", "--no-commit-id",
                   "--end-of-options", before, after)  # fmt: skip
        return parse_raw_diff(out)

    def indexed_branches(self) -> list[str]:
        """Branches with an indexed commit (``refs/heads/*``)."""
        if not self.path.exists():
            return []
        out = _git(self.path, "for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads/")
        return [line for line in out.decode().splitlines() if line]

    def read_blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        """Contents of blobs by object id, in one ``git cat-file --batch``."""
        wanted = [validate_object_id(sha, "blob") for sha in dict.fromkeys(shas)]
        if not wanted:
            return {}
        result = subprocess.run(
            ["git", "--git-dir", str(self.path), "cat-file", "--batch"],
            input="".join(f"{sha}\n" for sha in wanted).encode(), capture_output=True,
            timeout=600, check=False, env=git_environment(),
        )  # fmt: skip
        if result.returncode != 0:
            raise GitError(f"git cat-file failed: {result.stderr.decode(errors='replace')[:300]}")
        found: dict[str, bytes] = {}
        data, at = result.stdout, 0
        while at < len(data):
            header_end = data.index(b"\n", at)
            sha, kind, *rest = data[at:header_end].decode().split()
            at = header_end + 1
            if kind == "missing" or not rest:
                continue
            size = int(rest[0])
            found[sha] = data[at : at + size]
            at += size + 1  # the content is followed by a newline
        return found

    def log_messages(
        self, before: str | None, after: str, limit: int = 100
    ) -> list[tuple[str, str]]:
        """(sha, message) of the commits in before..after, newest first."""
        validate_object_id(after, "after")
        if before:
            validate_object_id(before, "before")
        span = after if not before or before == ZERO_SHA else f"{before}..{after}"
        out = _git(self.path, "log", f"-n{int(limit)}", "--format=%H%x1f%B%x1e",
                   "--end-of-options", span)  # fmt: skip
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
