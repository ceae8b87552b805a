"""Chunks: one per symbol that owns code, split on statement boundaries under a token cap.

Each line of a file belongs to exactly one chunk owner: the innermost class, interface or
top-level function/method containing it, or else the module. Nested functions stay inside
their outer function's chunk, so no text is embedded twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from patchstream.parsing.hashing import hash_code
from patchstream.parsing.tokens import TokenCounter
from patchstream.schemas.chunks import Chunk
from patchstream.schemas.graph import SymbolKind


@dataclass(frozen=True)
class ChunkOwner:
    symbol_id: str
    kind: SymbolKind
    start_line: int
    end_line: int
    boundaries: tuple[int, ...] = ()


def build_chunks(
    path: str,
    lines: Sequence[str],
    owners: Sequence[ChunkOwner],
    module_owner: ChunkOwner,
    counter: TokenCounter,
    max_tokens: int,
) -> list[Chunk]:
    """Chunks of a file whose ``lines`` (without newlines) are split among ``owners``."""
    total = len(lines)
    line_owner: list[int] = [-1] * (total + 1)  # index into ``everyone``; 1-based lines
    everyone = [module_owner, *owners]
    # Outer owners first so inner ones overwrite their lines.
    order = sorted(
        range(1, len(everyone)),
        key=lambda i: (-(everyone[i].end_line - everyone[i].start_line), everyone[i].start_line),
    )
    for line in range(1, total + 1):
        line_owner[line] = 0
    for index in order:
        owner = everyone[index]
        for line in range(owner.start_line, min(owner.end_line, total) + 1):
            line_owner[line] = index
    owned: dict[int, list[int]] = {}
    for line in range(1, total + 1):
        owned.setdefault(line_owner[line], []).append(line)
    chunks: list[Chunk] = []
    for index in sorted(owned, key=lambda i: owned[i][0]):
        owner = everyone[index]
        numbers = owned[index]
        if not any(lines[n - 1].strip() for n in numbers):
            continue
        pieces = _split(lines, numbers, set(owner.boundaries), counter, max_tokens)
        for part, (piece_lines, text, tokens) in enumerate(pieces):
            chunks.append(
                Chunk(
                    id=f"{owner.symbol_id}#{part}",
                    symbol_id=owner.symbol_id,
                    path=path,
                    kind=owner.kind,
                    start_line=piece_lines[0],
                    end_line=piece_lines[-1],
                    content_hash=hash_code(text),
                    tokens=tokens,
                    text=text,
                )
            )
    return chunks


def _trim(lines: Sequence[str], numbers: list[int]) -> list[int]:
    """Drop leading and trailing blank lines."""
    start, end = 0, len(numbers)
    while start < end and not lines[numbers[start] - 1].strip():
        start += 1
    while end > start and not lines[numbers[end - 1] - 1].strip():
        end -= 1
    return numbers[start:end]


def _split(
    lines: Sequence[str],
    numbers: list[int],
    boundaries: set[int],
    counter: TokenCounter,
    max_tokens: int,
) -> list[tuple[list[int], str, int]]:
    """Pieces as (line numbers, text, tokens as packed).

    A piece's tokens are exact for a piece that is one whole owner; for packed pieces they are
    the exact counts of its segments or lines plus one per join (the join's newline), within a
    token or two of counting the joined text, and never over the cap by that measure.
    """
    numbers = _trim(lines, numbers)
    whole = "\n".join(lines[n - 1] for n in numbers)
    whole_tokens = counter.count_unless_over(whole, max_tokens)
    if whole_tokens is not None and whole_tokens <= max_tokens:
        return [(numbers, whole, whole_tokens)]
    # Segments start at statement boundaries and at gaps left by inner owners.
    segments: list[list[int]] = []
    for n in numbers:
        if not segments or n in boundaries or n != segments[-1][-1] + 1:
            segments.append([n])
        else:
            segments[-1].append(n)
    pieces: list[tuple[list[int], str, int]] = []
    current: list[int] = []
    current_tokens = 0
    for segment in segments:
        seg_text = "\n".join(lines[n - 1] for n in segment)
        counted = counter.count_unless_over(seg_text, max_tokens)
        seg_tokens = max_tokens + 1 if counted is None else counted + 1
        if seg_tokens > max_tokens:
            if current:
                pieces.append(_piece(lines, current, current_tokens - 1))
                current, current_tokens = [], 0
            pieces.extend(pack_lines(lines, segment, counter, max_tokens))
            continue
        if current and current_tokens + seg_tokens > max_tokens:
            pieces.append(_piece(lines, current, current_tokens - 1))
            current, current_tokens = [], 0
        current.extend(segment)
        current_tokens += seg_tokens
    if current:
        pieces.append(_piece(lines, current, current_tokens - 1))
    return [piece for piece in pieces if piece[1].strip()]


def _piece(lines: Sequence[str], numbers: list[int], tokens: int) -> tuple[list[int], str, int]:
    numbers = _trim(lines, numbers) or numbers
    return numbers, "\n".join(lines[n - 1] for n in numbers), max(0, tokens)


def pack_lines(
    lines: Sequence[str], numbers: list[int], counter: TokenCounter, max_tokens: int
) -> list[tuple[list[int], str, int]]:
    """Pack whole lines under the cap (a single huge line is cut by tokens); with each piece's
    tokens as packed.

    Used for one statement over the cap, and for prose sections.
    """
    pieces: list[tuple[list[int], str, int]] = []
    current: list[int] = []
    current_tokens = 0
    for n in numbers:
        line_tokens = counter.count(lines[n - 1]) + 1
        if line_tokens > max_tokens:
            if current:
                pieces.append(_piece(lines, current, current_tokens - 1))
                current, current_tokens = [], 0
            parts = counter.split_counted(lines[n - 1], max_tokens)
            pieces.extend(([n], part, count) for part, count in parts)
            continue
        if current and current_tokens + line_tokens > max_tokens:
            pieces.append(_piece(lines, current, current_tokens - 1))
            current, current_tokens = [], 0
        current.append(n)
        current_tokens += line_tokens
    if current:
        pieces.append(_piece(lines, current, current_tokens - 1))
    return pieces
