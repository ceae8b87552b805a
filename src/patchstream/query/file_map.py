"""The file map tier of context: which files a question points at, one short block each.

Localization needs breadth before depth: the real fix of a question is often in a file whose
code would not fit the budget, and an agent that knows the file and the symbols that matched
can read it. So after the entry points' code, context lists the next best files of the search,
each as its path and the declarations of its matching chunks (a line each), in search order.
Measured on ``bench/context_quality.py``'s localization sets. Pure: hits in, candidates out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from patchstream.query.context import Candidate
from patchstream.stores.graph.base import CommitHit
from patchstream.stores.vector.milvus_rows import SearchHit

CODE_KINDS = ("function", "class", "interface")  # hits whose code can be an entry point
_COMMENT_PREFIXES = ("@", "#", "//", "/*", "*", '"""', "'''")
_MAX_LINE = 160


def declaration_line(hit: SearchHit) -> str:
    """The line that declares a hit's symbol (decorators and comments skipped), or its name."""
    qualified = hit.symbol_id.rsplit("::", 1)[-1]
    if hit.kind == "module":
        return f"(module level, lines {hit.start_line}-{hit.end_line})"
    short = qualified.rsplit(".", 1)[-1]
    for line in hit.text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(_COMMENT_PREFIXES):
            continue
        if short in stripped:
            return stripped[:_MAX_LINE]
        break  # a later part of a split chunk: its first line is not the declaration
    return f"{qualified} (lines {hit.start_line}-{hit.end_line})"


def file_map_candidates(
    hits: Sequence[SearchHit],
    files: int,
    skip: Iterable[tuple[str, str, str]] = (),
    per_file: int = 3,
) -> list[Candidate]:
    """One ``file-map`` candidate for each of the first ``files`` distinct files of ``hits``
    (repo, ref, path) not in ``skip``, listing up to ``per_file`` of its hits' declarations."""
    skipped = set(skip)
    grouped: dict[tuple[str, str, str], list[SearchHit]] = {}
    for hit in hits:
        where = (hit.repo, hit.ref, hit.path)
        if where in skipped or (where not in grouped and len(grouped) == files):
            continue
        grouped.setdefault(where, []).append(hit)
    found = []
    for (repo, ref, path), held in grouped.items():
        shown = held[:per_file]
        lines = list(dict.fromkeys(declaration_line(h) for h in shown))
        found.append(
            Candidate(
                kind="file-map",
                repo=repo,
                ref=ref,
                path=path,
                start_line=min(h.start_line for h in shown),
                end_line=max(h.end_line for h in shown),
                text="\n".join(lines),
                version=shown[0].version,
                source="map",
                key=f"map:{repo}:{ref}:{path}",
            )
        )
    return found


def hit_candidate(kind: str, hit: SearchHit) -> Candidate:
    """A search hit as a context candidate of ``kind`` (its chunk's code or prose)."""
    return Candidate(
        kind=kind,
        repo=hit.repo,
        ref=hit.ref,
        path=hit.path,
        start_line=hit.start_line,
        end_line=hit.end_line,
        text=hit.text,
        symbol_id=hit.symbol_id,
        version=hit.version,
        source=hit.source,
        key=hit.chunk_id,
    )


def entry_hits(hits: Sequence[SearchHit], count: int) -> list[SearchHit]:
    """The first ``count`` hits whose code can stand as an entry point (functions, classes)."""
    return [h for h in hits if h.kind in CODE_KINDS][:count]


def remaining_candidates(
    hits: Sequence[SearchHit], entries: Sequence[SearchHit]
) -> list[Candidate]:
    """The search's other hits, best first, code before prose (docs, ADRs): what fills the
    budget once the entry points, the file map and their neighbours are in."""
    rest = [h for h in hits if h not in entries]
    return [hit_candidate("semantic" if h.source == "code" else "prose", h)
            for h in sorted(rest, key=lambda h: h.source != "code")]  # fmt: skip


def history_candidate(repo: str, ref: str, path: str, commits: Sequence[CommitHit]) -> Candidate:
    """A file's last commits, a line each: sha, date, author, subject, the issues it names
    and the definitions it touched."""
    lines = [f"last commits that changed {path}:"]
    linked = False
    for commit in commits:
        issues = f" [{', '.join(commit.issues)}]" if commit.issues else ""
        touched = sorted({name for change in commit.files for name in change["symbols"]})
        where = f" (in {', '.join(touched)})" if touched else ""
        lines.append(f"- {commit.sha[:10]} {commit.date[:10]} {commit.author}: "
                     f"{commit.subject}{issues}{where}")  # fmt: skip
        for thread in commit.linked[:3]:  # the titles people gave the issues it closed
            linked = True
            state = f", {thread['state']}" if thread["state"] else ""
            lines.append(f"  - {thread['kind']} {thread['number']}{state}: {thread['title']}")
    # Commit lines are the repository's; an issue's title is whoever opened it.
    return Candidate(kind="history", repo=repo, ref=ref, path=path, start_line=1, end_line=1,
                     text="\n".join(lines), source="history",
                     key=f"history|{repo}|{ref}|{path}",
                     trust="discussion" if linked else "repository")  # fmt: skip


_WORD = re.compile(r"[a-z0-9]+")
_NAME_PART = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
MEMBERS_PER_ENTRY = 2


def named_members(question: str, class_id: str, symbols: Iterable[tuple[str, int]]) -> list[str]:
    """The members of class ``class_id`` whose names the question uses ("how is the area of
    a square computed": ``Square.area``), best first: a class's chunk holds its header, not
    its methods, so a small budget would show ``class Square`` and never the two lines the
    question is about. ``symbols`` are (id, first line) pairs; a member's name is its id's
    last part. Dunder methods never match."""
    words = set(_WORD.findall(question.lower()))
    words |= {w[:-1] for w in words if w.endswith("s") and len(w) > 3}  # "areas" asks "area"
    prefix = f"{class_id}."
    scored = []
    for symbol_id, start_line in symbols:
        name = symbol_id[len(prefix) :].rsplit(".", 1)[-1]
        if not symbol_id.startswith(prefix) or name.startswith("__"):
            continue
        parts = {p.lower() for p in _NAME_PART.findall(name) if len(p) >= 3}
        overlap = len(parts & words)
        if overlap:
            scored.append((-overlap, start_line, symbol_id))
    return [symbol_id for _, _, symbol_id in sorted(scored)[:MEMBERS_PER_ENTRY]]
