"""The text of a ``_discussions/`` page, written by the producers and read back by the parse
stage: a Markdown page an embedder reads as prose (title and body), with the header lines a
parser reads without doubt.

Header lines stop at the first blank line and the renderer writes every value on one line
(titles, labels and names made printable), so a body cannot add a header: ``Closes:`` or
``File:`` inside a body is prose. What the page is (kind, number, note) comes from its path.
"""

from __future__ import annotations

from pydantic import ValidationError

from patchstream.parsing.commit_text import clipped
from patchstream.schemas.discussions import DiscussionInfo, page_key

MAX_BODY_CHARS = 32_000
_NOTE_TITLES = {"comment": "comment", "review": "review", "review-comment": "review comment"}
_FIELDS = {"State": "state", "Author": "author", "Date": "date", "URL": "url"}


def render_discussion(info: DiscussionInfo, body: str) -> str:
    """The page's text: a title line, header lines, a blank line, the body."""
    thread = f"{info.kind} {info.number}"
    if info.note:
        what = _NOTE_TITLES[info.note.rsplit("-", 1)[0]]
        title = f"# {what} on {thread}" + (f": {info.title}" if info.title else "")
    else:
        title = f"# {thread}: {info.title}"
    lines = [title, ""]
    for name, attribute in _FIELDS.items():
        value = getattr(info, attribute)
        if value:
            lines.append(f"{name}: {value}")
    if info.labels:
        lines.append(f"Labels: {', '.join(label.replace(',', ' ') for label in info.labels)}")
    if info.closes:
        lines.append(f"Closes: {' '.join(info.closes)}")
    if info.commits:
        lines.append(f"Commits: {' '.join(info.commits)}")
    lines += [f"File: {path}" for path in info.paths]
    lines += ["", _body(body)]
    return "\n".join(lines).rstrip("\n") + "\n"


def _body(body: str) -> str:
    return clipped(body, MAX_BODY_CHARS, "body")


def parse_discussion(path: str, text: str) -> DiscussionInfo | None:
    """The discussion a page describes; None when the path is not a page's or the text is
    not one (a title line naming another thread than the path says nothing)."""
    key = page_key(path)
    if key is None:
        return None
    kind, number, note = key
    lines = text.split("\n")
    head = lines[0] if lines else ""
    thread = f"{kind} {number}"
    if note:
        what = _NOTE_TITLES[note.rsplit("-", 1)[0]]
        opening = f"# {what} on {thread}"
    else:
        opening = f"# {thread}"
    if head != opening and not head.startswith(f"{opening}: "):
        return None
    fields: dict[str, str] = {}
    paths: list[str] = []
    at = 1
    while at < len(lines) and not lines[at].strip():
        at += 1
    while at < len(lines) and ": " in lines[at]:
        name, _, value = lines[at].partition(": ")
        if name == "File":
            paths.append(value.strip())
        elif name in _FIELDS or name in ("Labels", "Closes", "Commits"):
            fields[name] = value.strip()
        else:
            break
        at += 1
    try:
        return DiscussionInfo(
            kind=kind, number=number, note=note, title=head[len(opening) + 2 :][:512],
            state=fields.get("State", "")[:20], author=fields.get("Author", "")[:128],
            date=fields.get("Date", "")[:40], url=fields.get("URL", "")[:500],
            labels=tuple(x.strip() for x in fields.get("Labels", "").split(",") if x.strip()),
            closes=tuple(fields.get("Closes", "").split()),
            commits=tuple(fields.get("Commits", "").split()), paths=tuple(paths),
        )  # fmt: skip
    except ValidationError:
        return None
