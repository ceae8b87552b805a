"""Mine a localization set from a project's git history (run once; the output is committed).

A snapshot of the project's source files at one commit, and for the later commits that change
1-3 of those files (not version bumps, typo, lint, docs or test-only commits) the commit's
subject as the question and the changed source files and functions as the answer. The history
before the snapshot (subjects and the source files each commit changed) comes along: it is what
the gateway would have seen of that project, and it may point at code.

    python bench/localization/mine.py REPO_GIT_DIR --name pytest --root src/ \
        --before 2023-06-01 --licence MIT --url https://github.com/pytest-dev/pytest
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.graph import SymbolKind

HERE = Path(__file__).resolve().parent

# Subjects of commits that do not describe a behaviour to find in code.
SKIP_SUBJECT = re.compile(
    r"(?i)\b(bump|release|version|typos?|spelling|lint|flake8|pylint|mypy|ruff|pre-commit|"
    r"black|isort|reformat|format(ting)?|docs?|docstrings?|documentation|changelog|readme|"
    r"typing|type hints?|annotations?|annotate|copyright|revert|merge|cleanup|clean up|"
    r"refactor|rename|tests?|coverage|ci|py\.typed|pyupgrade|codespell|reviews?|suggestions?|"
    r"feedback|fixup|wip|nits?|minor|tweaks?|py3\d+|python 3\.\d+|address)\b"
)
PR_NUMBER = re.compile(r"\s*\((?:#\d+(?:,\s*)?)+\)\s*$")
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", re.M)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True)
    return done.stdout.decode("utf-8", errors="replace")


def git_bytes(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True).stdout


def is_source(path: str, root: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return (
        path.startswith(root)
        and path.endswith(".py")
        and "/tests/" not in f"/{path}"
        and not name.startswith(("test_", "conftest"))
    )


def changed_files(repo: Path, commit: str) -> list[str]:
    out = git(repo, "diff-tree", "--no-commit-id", "-r", "--name-only", "-M", f"{commit}^", commit)
    return [p for p in out.splitlines() if p]


def touched_lines(repo: Path, commit: str, path: str) -> set[int]:
    """Lines of the parent's version of ``path`` that the commit changed (or inserted after)."""
    diff = git(repo, "diff", "-U0", f"{commit}^", commit, "--", path)
    lines: set[int] = set()
    for start, count in HUNK.findall(diff):
        first, size = int(start), int(count) if count else 1
        lines.update(range(first, first + size) if size else (first, first + 1))
    return lines


def functions_at(builder: FileStateBuilder, path: str, data: bytes) -> list[tuple[str, int, int]]:
    state = builder.build(FileRef("t", "mine", "main", path, 1), data)
    return [
        (s.qualified_name, s.start_line, s.end_line)
        for s in state.symbols
        if s.kind is SymbolKind.FUNCTION
    ]


def changed_functions(
    repo: Path, builder: FileStateBuilder, commit: str, path: str, in_snapshot: set[str]
) -> list[str]:
    """Innermost functions of the parent version that the commit touched (if the snapshot
    has them)."""
    before = git_bytes(repo, "show", f"{commit}^:{path}")
    defs = functions_at(builder, path, before)
    found: set[str] = set()
    for line in touched_lines(repo, commit, path):
        holding = [d for d in defs if d[1] <= line <= d[2]]
        if holding:
            found.add(min(holding, key=lambda d: d[2] - d[1])[0])
    return sorted(f"{path}::{q}" for q in found if q in in_snapshot)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("repo", type=Path)
    parser.add_argument("--name", required=True)
    parser.add_argument("--root", required=True, help="source folder prefix, e.g. src/")
    parser.add_argument("--before", required=True, help="snapshot: last first-parent commit before")
    parser.add_argument("--licence", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--questions", type=int, default=150)
    parser.add_argument("--history", type=int, default=1500)
    args = parser.parse_args()
    repo: Path = args.repo
    snapshot = git(repo, "log", "--first-parent", "-1", f"--before={args.before}",
                   "--format=%H", "HEAD").strip()  # fmt: skip
    files = [p for p in git(repo, "ls-tree", "-r", "--name-only", snapshot).splitlines()
             if is_source(p, args.root)]  # fmt: skip
    builder = FileStateBuilder()
    symbols = {}
    for path in files:
        data = git_bytes(repo, "show", f"{snapshot}:{path}")
        symbols[path] = {q for q, _, _ in functions_at(builder, path, data)}
    later = git(repo, "log", "--no-merges", "--reverse", "--format=%H%x09%s",
                f"{snapshot}..HEAD").splitlines()  # fmt: skip
    questions: list[dict[str, object]] = []
    skipped: dict[str, int] = {"subject": 0, "size": 0, "new file": 0}
    for line in later:
        commit, subject = line.split("\t", 1)
        source = [p for p in changed_files(repo, commit) if is_source(p, args.root)]
        if not 1 <= len(source) <= 3:
            skipped["size"] += 1
            continue
        if SKIP_SUBJECT.search(subject) or len(subject.split()) < 3:
            skipped["subject"] += 1
            continue
        if any(p not in symbols for p in source):
            skipped["new file"] += 1
            continue
        functions = [f for p in source
                     for f in changed_functions(repo, builder, commit, p, symbols[p])]  # fmt: skip
        questions.append({"commit": commit, "question": PR_NUMBER.sub("", subject).strip(),
                          "files": sorted(source), "functions": functions})  # fmt: skip
        if len(questions) == args.questions:
            break
    history = []
    for line in git(repo, "log", "--no-merges", f"-{args.history}", "--format=%H%x09%s",
                    snapshot).splitlines():  # fmt: skip
        commit, subject = line.split("\t", 1)
        source = [p for p in changed_files(repo, commit) if p in symbols]
        if source and len(source) <= 10:
            history.append({"commit": commit, "subject": subject, "files": sorted(source)})
    out = HERE / args.name
    out.mkdir(exist_ok=True)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz") as tar:
        for path in files:
            data = git_bytes(repo, "show", f"{snapshot}:{path}")
            info = tarfile.TarInfo(path)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
    (out / "snapshot.tar.xz").write_bytes(buffer.getvalue())
    (out / "LICENSE").write_bytes(git_bytes(repo, "show", f"{snapshot}:LICENSE"))
    meta = {"project": args.name, "url": args.url, "licence": args.licence,
            "snapshot": snapshot, "root": args.root, "files": len(files),
            "mined_with": "python bench/localization/mine.py " + " ".join(sys.argv[1:]),
            "questions": questions, "history": history}  # fmt: skip
    (out / "set.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    print(f"{args.name}: {len(files)} files at {snapshot[:10]}, {len(questions)} questions, "
          f"{len(history)} history commits; skipped {skipped}")  # fmt: skip


if __name__ == "__main__":
    main()
