"""Prose memory: Markdown (README, docs, ADRs) cut into section chunks owned by the file."""

from __future__ import annotations

from collections.abc import Iterable

from patchstream.parsing.chunking import pack_lines
from patchstream.parsing.hashing import hash_code
from patchstream.parsing.languages import language_for_path
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
    path: str,
    text: str,
    file_node: Symbol,
    counter: TokenCounter,
    max_tokens: int,
    sections: bool = True,
) -> list[Chunk]:
    """One chunk per section (a long section is cut between lines), owned by the File node;
    without ``sections`` (plain text of a language with no grammar here: a ``#`` line is a
    preprocessor line or a comment there, not a heading) only the cap cuts it."""
    lines = text.split("\n")
    starts = [1, *(s for s in _section_starts(lines) if s > 1)] if sections else [1]
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


def extension_of(path: str) -> str:
    """What a file is counted under when no grammar reads it: its lowercased suffix, or its
    name when it has none (``Makefile``, ``.gitignore``)."""
    name = path.rsplit("/", 1)[-1]
    stem, dot, suffix = name.rpartition(".")
    return f".{suffix.lower()}" if dot and stem else name


def unparsed_by_extension(paths: Iterable[str]) -> dict[str, int]:
    """Files no grammar here reads (neither code nor prose), counted by extension, most first:
    what ``index`` says it indexed as plain text."""
    counts: dict[str, int] = {}
    for path in paths:
        if language_for_path(path) is None and not is_prose(path) and not is_virtual(path):
            extension = extension_of(path)
            counts[extension] = counts.get(extension, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
