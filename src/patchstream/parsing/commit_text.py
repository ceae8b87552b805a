"""The text of a ``_commits/<sha>.md`` file, written by the producers and read back by the
parse stage: a Markdown page an embedder reads as prose (the message first), with the
commit's parents, author, date and changed files in lines a parser reads without doubt.

The changed files come last, under a heading the renderer writes once: a message that holds
the same heading (hostile or not) cannot add files, since the parser reads the last one.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

from patchstream.parsing.prose import COMMITS_DIR
from patchstream.schemas.history import SHA, ChangedFile, CommitInfo, issue_refs, printable

HEAD_PATH = f"{COMMITS_DIR}HEAD"  # names the commit a ref's history starts from
CHANGED_HEADING = "## Changed files"
MAX_MESSAGE_CHARS = 8_000
_TITLE = re.compile(r"# commit ([0-9a-f]{40}(?:[0-9a-f]{24})?)\s*")
_CHANGE = re.compile(r"- (.+) \(\+(\d+) -(\d+)\)(?:: (.*))?")
_FIELDS = {"Parents": "parents", "Author": "author", "Date": "date"}


def commit_path(sha: str) -> str:
    return f"{COMMITS_DIR}{sha}.md"


def is_commit_path(path: str) -> bool:
    return path.startswith(COMMITS_DIR) and SHA.fullmatch(path[len(COMMITS_DIR) : -3]) is not None


def render_commit(info: CommitInfo, message: str) -> str:
    """The file's text: title, header lines, the message, then the changed files."""
    lines = [f"# commit {info.sha}", ""]
    if info.parents:
        lines.append(f"Parents: {' '.join(info.parents)}")
    lines += [f"Author: {info.author}", f"Date: {info.date}", "", _message(message), ""]
    # Always written (a merge lists no file): the last heading is this one, never a message's.
    lines += [CHANGED_HEADING, ""]
    for change in info.changes:
        named = f": {', '.join(change.symbols)}" if change.symbols else ""
        lines.append(f"- {change.path} (+{change.added} -{change.removed}){named}")
    if info.changes_cut:
        lines.append(f"- and {info.changes_cut} more files")
    return "\n".join(lines).rstrip("\n") + "\n"


def _message(message: str) -> str:
    return clipped(message, MAX_MESSAGE_CHARS, "message")


def clipped(text: str, limit: int, what: str) -> str:
    """``text`` trimmed, with Unix line ends, cut at ``limit`` characters with a line that
    says so (a stranger's message or body)."""
    text = text.strip().replace("\r\n", "\n")
    return text[:limit] + f"\n[{what} cut]" if len(text) > limit else text


def parse_commit(text: str) -> CommitInfo | None:
    """The commit a ``_commits/<sha>.md`` text describes; None when it is not one (a push's
    older pages without header lines still give the sha and the subject)."""
    lines = text.split("\n")
    title = _TITLE.fullmatch(lines[0]) if lines else None
    if title is None:
        return None
    fields: dict[str, str] = {}
    at = 1
    while at < len(lines) and not lines[at].strip():
        at += 1
    while at < len(lines) and ": " in lines[at]:
        name, _, value = lines[at].partition(": ")
        if name not in _FIELDS and name != "Branch":
            break
        fields[_FIELDS.get(name, name)] = value.strip()
        at += 1
    body, heading, changed = "\n".join(lines[at:]).rpartition(f"\n{CHANGED_HEADING}\n")
    if not heading:
        body, changed = changed, ""
    subject = next((line.strip() for line in body.split("\n") if line.strip()), "")
    changes, cut = _changes(changed)
    try:
        return CommitInfo(
            sha=title.group(1),
            parents=tuple(fields.get("parents", "").split()),
            author=fields.get("author", "")[:256],
            date=fields.get("date", "")[:40],
            subject=printable(subject)[:512],
            changes=tuple(changes),
            changes_cut=cut,
            issues=issue_refs(body),
        )
    except ValidationError:
        return None


def _changes(section: str) -> tuple[list[ChangedFile], int]:
    changes: list[ChangedFile] = []
    cut = 0
    for line in section.split("\n"):
        if line.startswith("- and ") and line.endswith(" more files"):
            cut = int(line[6:-11]) if line[6:-11].isdigit() else 0
            continue
        found = _CHANGE.fullmatch(line)
        if found is None:
            continue
        names = tuple(n.strip() for n in (found.group(4) or "").split(",") if n.strip())
        try:
            changes.append(
                ChangedFile(
                    path=found.group(1),
                    added=int(found.group(2)),
                    removed=int(found.group(3)),
                    symbols=names[:50],
                )
            )
        except ValidationError:
            continue  # a path that leaves the repository names nothing
    return changes, cut


def parse_head(text: str) -> str | None:
    """The sha a ``_commits/HEAD`` file names."""
    sha = text.strip()
    return sha if SHA.fullmatch(sha) else None
