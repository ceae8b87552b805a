"""A repository's history as commits: one streaming ``git log -p -U0`` read.

Each commit keeps its parents, author, date, message and the files it changed, with the
lines added and removed and the definitions its hunks fell in. Those come from the hunk
headers: git writes after each ``@@ ... @@`` the nearest line above the hunk that opens a
definition (its function-context drivers, turned on here for the languages git knows), so a
commit names the functions it touched *at that commit*, without parsing any old version.
Merges list no files (their changes are their parents'). Renames count as a delete and an
add (rename detection costs more than the rest of the read).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from patchstream.schemas.history import (
    MAX_CHANGED_FILES,
    MAX_SYMBOLS_PER_FILE,
    SHA,
    ChangedFile,
    CommitInfo,
    issue_refs,
    printable,
)
from patchstream.system.git_safety import git_environment, validate_object_id

# git's built-in function-context drivers, by extension.
_DRIVERS = {"py": "python", "pyi": "python", "go": "golang", "rs": "rust", "java": "java",
            "rb": "ruby", "php": "php", "kt": "kotlin", "cs": "csharp", "c": "cpp", "h": "cpp",
            "cc": "cpp", "cpp": "cpp", "hpp": "cpp", "js": "javascript", "ts": "javascript",
            "tsx": "javascript", "jsx": "javascript", "md": "markdown"}  # fmt: skip
_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@ ?(.*)")
_DEFINED = re.compile(
    r"\b(?:async\s+def|def|class|func|fn|function|struct|interface|trait|enum|impl|module|"
    r"object|record)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)"
)
_OPENS = re.compile(
    r"\s*(?:(?:export|public|private|protected|static|async|pub)\s+)*"
    r"(?:async\s+def|def|class|func|fn|function|struct|interface|trait|enum|impl|module)\s"
)
_CALLED = re.compile(r"([A-Za-z_$][\w$]*)\s*\(")
_NOT_NAMES = frozenset({"if", "for", "while", "switch", "return", "catch", "with", "elif"})


@dataclass
class HistoryCommit:
    info: CommitInfo
    message: str


@dataclass
class _Building:
    sha: str
    parents: list[str]
    author: str
    date: str
    message: str
    files: dict[str, list[int]] = field(default_factory=dict)  # path -> added, removed
    names: dict[str, list[str]] = field(default_factory=dict)
    path: str | None = None
    in_header: bool = False  # between ``diff --git`` and the first hunk: ---/+++ name files
    # The hunk being read: the definition its header names, used unless its own lines
    # open one (a changed ``def`` line is that definition's change, not the one above it).
    context: str | None = None
    hunk_defines: bool = False

    def name(self, name: str | None) -> None:
        names = self.names.setdefault(self.path or "", [])
        if name and name not in names and len(names) < MAX_SYMBOLS_PER_FILE:
            names.append(name)

    def end_hunk(self) -> None:
        if self.path is not None and not self.hunk_defines:
            self.name(self.context)
        self.context, self.hunk_defines = None, False


def read_history(
    root: Path, limit: int, head: str = "HEAD", since: str | None = None, mirror: bool = False
) -> tuple[list[HistoryCommit], bool]:
    """The commits reachable from ``head`` (and not from ``since``), newest first, at most
    ``limit`` (and whether that was all of them). Nothing (and complete) outside git or for an
    empty repository. ``mirror``: ``root`` is a gateway's bare mirror, read in git's safe
    environment (no user or system config) with its object ids checked.

    Two reads of the same walk: the messages NUL-separated (a message cannot hold NUL, so
    none can forge a commit's boundary), then the hunks, each commit opened by a line of NUL
    and its sha (a patch's lines all start with a marker, never NUL)."""
    if limit <= 0:
        return [], False
    if mirror:
        validate_object_id(head, "head")
        if since is not None:
            validate_object_id(since, "since")
    walk = ["log", f"-n{limit + 1}", "--end-of-options", head,
            *([f"^{since}"] if since else []), "--"]  # fmt: skip
    env = git_environment() if mirror else None
    described = _git(root, ["-c", "core.quotePath=false", *walk[:2], "-z",
                            "--format=%H%x00%P%x00%an%x00%aI%x00%B", *walk[2:]], env)  # fmt: skip
    if described is None:
        return [], True
    commits: dict[str, _Building] = {}
    fields = described.read().decode("utf-8", "replace").split("\0")
    described.close()
    for at in range(0, len(fields) - 4, 5):
        sha, parents, author, date, message = fields[at : at + 5]
        sha = sha.lstrip("\n")
        if not SHA.fullmatch(sha):
            break  # out of step: what came before is kept
        commits[sha] = _Building(sha, parents.split(), author, date, message)
    with tempfile.TemporaryDirectory(prefix="patchstream-attrs-") as scratch:
        attributes = Path(scratch) / "attributes"
        attributes.write_text("".join(f"*.{ext} diff={d}\n" for ext, d in _DRIVERS.items()))
        hunks = _git(root, ["-c", f"core.attributesFile={attributes}", "-c",
                            "core.quotePath=false", *walk[:2], "--format=%x00%H", "-p", "-U0",
                            "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
                            *walk[2:]], env)  # fmt: skip
        if hunks is not None:
            current: _Building | None = None
            for raw in hunks:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                if line.startswith("\0"):
                    current = commits.get(line[1:])
                elif current is not None:
                    _diff_line(current, line)
            hunks.close()
    history = [done for c in commits.values() if (done := _finish(c)) is not None]
    return history[:limit], len(history) <= limit


def head_commit(root: Path) -> tuple[str, int] | None:
    """The commit HEAD names and how many commits it reaches (None outside git, or for a
    repository without commits): cheap, so an unchanged history is not read again."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "-q", "HEAD"],
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        sha = head.stdout.strip()
        if head.returncode != 0 or not SHA.fullmatch(sha):
            return None
        count = subprocess.run(["git", "-C", str(root), "rev-list", "--count",
                                "--end-of-options", sha], capture_output=True, text=True,
                               timeout=120, check=True)  # fmt: skip
        return sha, int(count.stdout.strip())
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def _git(root: Path, args: list[str], env: dict[str, str] | None) -> IO[bytes] | None:
    """A git command's output as a stream (its errors: nothing more to read)."""
    try:
        process = subprocess.Popen(["git", "-C", str(root), *args], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, env=env)  # fmt: skip
    except OSError:
        return None
    assert process.stdout is not None
    return process.stdout


def _diff_line(commit: _Building, line: str) -> None:
    if line.startswith("diff --git "):
        commit.end_hunk()
        commit.path, commit.in_header = _same_path(line[11:]), True
        if commit.path is not None:  # a binary file has no ---/+++ lines
            commit.files.setdefault(commit.path, [0, 0])
    elif commit.in_header and (line.startswith("--- a/") or line.startswith("+++ b/")):
        commit.path = line[6:].removesuffix("\t")  # git ends a name holding spaces with a tab
        commit.files.setdefault(commit.path, [0, 0])
    elif line.startswith("@@ ") and commit.path is not None:
        commit.end_hunk()
        commit.in_header = False
        hunk = _HUNK.match(line)
        if hunk is None:
            return
        counts = commit.files[commit.path]
        counts[1] += int(hunk.group(1) if hunk.group(1) is not None else 1)
        counts[0] += int(hunk.group(2) if hunk.group(2) is not None else 1)
        commit.context = defined_name(hunk.group(3))
    elif line[:1] in ("+", "-") and commit.path and not commit.in_header and _OPENS.match(line, 1):
        commit.hunk_defines = True
        commit.name(defined_name(line[1:]))


def _same_path(pair: str) -> str | None:
    """``a/P b/P`` -> P (renames are off, so both sides name one path; a quoted name, which
    git writes for odd characters, is left out)."""
    half = (len(pair) - 5) // 2
    path = pair[2 : 2 + half]
    return path if pair == f"a/{path} b/{path}" and path else None


def defined_name(context: str) -> str | None:
    """The name a hunk header's function context defines (``def area(self):`` -> area)."""
    paren = context.find("(")
    found = _DEFINED.search(context)  # a keyword in a parameter list (``struct s *p``) is not
    if found is not None and (paren < 0 or found.start() < paren):
        return found.group(1)
    called = _CALLED.search(context)  # C, Java and JS method heads: ``int area(void) {``
    if called is not None and called.group(1) not in _NOT_NAMES:
        return called.group(1)
    return None


def _finish(commit: _Building) -> HistoryCommit | None:
    commit.end_hunk()
    paths = sorted(commit.files)
    changes = []
    for path in paths[:MAX_CHANGED_FILES]:
        added, removed = commit.files[path]
        try:
            changes.append(ChangedFile(path=path, added=added, removed=removed,
                                       symbols=tuple(commit.names.get(path, ()))))  # fmt: skip
        except ValidationError:
            continue
    try:
        info = CommitInfo(
            sha=commit.sha,
            parents=tuple(commit.parents),
            author=printable(commit.author)[:256],
            date=commit.date[:40],
            subject=printable(commit.message.strip().split("\n", 1)[0])[:512],
            changes=tuple(changes),
            changes_cut=max(0, len(paths) - MAX_CHANGED_FILES),
            issues=issue_refs(commit.message),
        )
    except ValidationError:
        return None
    return HistoryCommit(info, commit.message)
