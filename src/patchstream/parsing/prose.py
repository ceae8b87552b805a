"""Prose memory: Markdown (README, docs, ADRs) cut into section chunks owned by the file."""

from __future__ import annotations

from patchstream.parsing.chunking import pack_lines
from patchstream.parsing.hashing import hash_code
from patchstream.parsing.tokens import TokenCounter
from patchstream.schemas.chunks import Chunk
from patchstream.schemas.discussions import DISCUSSIONS_DIR
from patchstream.schemas.graph import Symbol, SymbolKind

PROSE_EXTENSIONS = (".md", ".markdown", ".mdx", ".rst", ".adoc")
PROSE_LANGUAGE = "markdown"
#: Commit messages are indexed as prose files under this virtual directory.
COMMITS_DIR = "_commits/"
#: Files of a view that are not files of its tree: a scan or a reconcile never deletes them.
VIRTUAL_DIRS = (COMMITS_DIR, DISCUSSIONS_DIR)


def prose_source(path: str) -> str:
    """``commit`` for commit messages, ``discussion`` for issues and reviews, ``doc`` for
    documentation."""
    if path.startswith(COMMITS_DIR):
        return "commit"
    return "discussion" if path.startswith(DISCUSSIONS_DIR) else "doc"


def is_virtual(path: str) -> bool:
    """A page the producers write beside a tree's files (commits, discussions)."""
    return path.startswith(VIRTUAL_DIRS)


def is_prose(path: str) -> bool:
    return path.lower().endswith(PROSE_EXTENSIONS)


def _section_starts(lines: list[str]) -> tuple[int, ...]:
    """1-based lines that open a section (ATX headings; fenced code is not a heading)."""
    starts = []
    fenced = False
    for number, line in enumerate(lines, start=1):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and stripped.startswith("#") and stripped.lstrip("#").startswith(" "):
            starts.append(number)
    return tuple(starts)


def prose_chunks(
    path: str, text: str, file_node: Symbol, counter: TokenCounter, max_tokens: int
) -> list[Chunk]:
    """One chunk per section (a long section is cut between lines), owned by the File node."""
    lines = text.split("\n")
    starts = [1, *(s for s in _section_starts(lines) if s > 1)]
    bounds = [*starts[1:], len(lines) + 1]
    pieces: list[tuple[int, int, str, int]] = []
    for first, after in zip(starts, bounds, strict=True):
        for numbers, body, tokens in pack_lines(
            lines, list(range(first, after)), counter, max_tokens
        ):
            pieces.append((numbers[0], numbers[-1], body, tokens))
    chunks = []
    for part, (first, last, body, tokens) in enumerate(p for p in pieces if p[2].strip()):
        chunks.append(
            Chunk(
                id=f"{file_node.id}#{part}",
                symbol_id=file_node.id,
                path=path,
                kind=SymbolKind.FILE,
                start_line=first,
                end_line=last,
                content_hash=hash_code(body),
                tokens=tokens,
                text=body,
            )
        )
    return chunks
