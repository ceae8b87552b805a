"""Which files of a directory to index: git's view of it (``.gitignore`` respected), minus
vendored and generated files, with oversized, binary and secret files withheld (their names
only): ``parsing.indexable``, the rule pushes, writes and watches share."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from patchstream.parsing.indexable import SKIP_DIRS, judge_file

DEFAULT_MAX_BYTES = 2 * 1024 * 1024  # ParsingSettings.max_file_bytes's default


@dataclass(frozen=True)
class WithheldFile:
    """A file whose content stays here: the index gets its name, flagged with ``reason``."""

    path: str
    reason: str
    size: int
    detail: str


@dataclass
class ScanResult:
    files: list[str] = field(default_factory=list)
    withheld: list[WithheldFile] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> files (withheld too)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def _git_files(root: Path) -> list[str] | None:
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"],
            capture_output=True,
            check=True,
            timeout=120,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return [p for p in result.stdout.decode("utf-8", "replace").split("\0") if p]


def _walk_files(root: Path) -> list[str]:
    ignore_file = root / ".gitignore"
    lines = ignore_file.read_text(errors="replace").splitlines() if ignore_file.is_file() else []
    spec = pathspec.PathSpec.from_lines("gitwildmatch", lines)
    found: list[str] = []
    for directory, dirs, names in os.walk(root):
        rel_dir = Path(directory).relative_to(root).as_posix()
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(names):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if not spec.match_file(rel):
                found.append(rel)
    return found


def scan_directory(root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> ScanResult:
    result = ScanResult()
    candidates = _git_files(root)
    if candidates is None:
        candidates = _walk_files(root)
    for rel in sorted(set(candidates)):
        path = root / rel
        if path.is_symlink() or not path.is_file():
            result.skip("not_a_regular_file")
            continue
        try:
            skip, _ = judge_file(path, rel, max_bytes)
        except OSError:  # gone or unreadable since git listed it
            result.skip("unreadable")
            continue
        if skip is None:
            result.files.append(rel)
            continue
        result.skip(skip.reason)
        if skip.withheld:
            size = path.stat().st_size
            result.withheld.append(WithheldFile(rel, skip.reason, size, skip.detail))
    return result
