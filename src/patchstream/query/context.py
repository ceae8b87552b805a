"""Token-budgeted context assembly: pure logic over candidate blocks.

Candidates come in priority order (session changes, entry code, the file map, caller and
callee signatures, semantic chunks, prose). Each is rendered with a provenance header; blocks of
the same file whose lines overlap or touch are merged into one, never repeated; the budget
is never exceeded, counted on the final text with the configured encoding.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from patchstream.parsing.tokens import TokenCounter
from patchstream.text_flags import unicode_flags

# Zero-width, bidirectional-control and other invisible characters used to hide instructions.


@dataclass(frozen=True)
class Candidate:
    """One piece of context and where it came from."""

    kind: (
        str  # session-change | entry-code | file-map | caller-/callee-signature | semantic | prose
    )
    repo: str
    ref: str
    path: str
    start_line: int
    end_line: int
    text: str
    symbol_id: str | None = None
    version: int | None = None
    source: str = "code"  # code | signature | map | doc
    trust: str = "repository"  # repository | agent-written | discussion | memory | ...
    key: str = ""  # identical keys are the same content


@dataclass
class Block:
    kind: str
    repo: str
    ref: str
    path: str
    start_line: int
    end_line: int
    text: str
    symbol_ids: list[str]
    version: int | None
    source: str
    trust: str
    flags: list[str] = field(default_factory=list)
    tokens: int = 0

    def header(self) -> str:
        where = f"{self.repo}@{self.ref}:{self.path}:{self.start_line}-{self.end_line}"
        return f"### {where} [{self.kind}; {self.source}; trust={self.trust}]"

    def render(self) -> str:
        return f"{self.header()}\n{self.text}\n"


def _block(candidate: Candidate) -> Block:
    return Block(
        kind=candidate.kind,
        repo=candidate.repo,
        ref=candidate.ref,
        path=candidate.path,
        start_line=candidate.start_line,
        end_line=candidate.end_line,
        text=candidate.text.rstrip("\n"),
        symbol_ids=[candidate.symbol_id] if candidate.symbol_id else [],
        version=candidate.version,
        source=candidate.source,
        trust=candidate.trust,
        flags=unicode_flags(candidate.text),
    )


def _merged(held: Block, new: Block) -> Block | None:
    """``held`` with ``new`` merged in, when they are of the same file and source and their
    lines overlap or touch; else None."""
    same_file = (held.repo, held.ref, held.path) == (new.repo, new.ref, new.path)
    if not same_file or held.source != new.source:
        return None
    if new.start_line > held.end_line + 1 or held.start_line > new.end_line + 1:
        return None
    if new.text in held.text:
        return replace(held, symbol_ids=sorted({*held.symbol_ids, *new.symbol_ids}))
    first, second = (held, new) if held.start_line <= new.start_line else (new, held)
    return replace(
        held,
        start_line=min(held.start_line, new.start_line),
        end_line=max(held.end_line, new.end_line),
        text=f"{first.text}\n{second.text}",
        symbol_ids=sorted({*held.symbol_ids, *new.symbol_ids}),
        flags=sorted({*held.flags, *new.flags}),
        trust="agent-written" if "agent-written" in (held.trust, new.trust) else held.trust,
    )


def assemble(
    candidates: list[Candidate], budget: int, counter: TokenCounter
) -> tuple[list[Block], int]:
    """Fill ``budget`` tokens with candidates in order; returns blocks and tokens used.

    A candidate merges into the first selected block of its file and source that it
    overlaps or touches, else it is appended; it is taken when the running total of block
    tokens stays within the budget. Only the block it changes is re-counted, so assembly is
    linear in the candidates, not quadratic; a block longer than six characters per token of
    the room left is deemed not to fit without being counted (code runs 3-5)."""
    selected: list[Block] = []
    costs: list[int] = []  # tokens of each selected block, rendered
    by_file: dict[tuple[str, str, str, str], list[int]] = {}  # -> indexes into selected
    code_symbols: set[str] = set()  # symbols whose code (not signature) is selected
    seen: set[str] = set()
    used = 0
    memo: dict[str, int] = {}

    def tokens(block: Block, room: int) -> int | None:
        """The block's tokens, or None when it is clearly over ``room`` (not counted)."""
        rendered = block.render()
        if rendered not in memo:
            cost = counter.count_unless_over(rendered, room)
            if cost is None:
                return None
            memo[rendered] = cost
        return memo[rendered]

    for candidate in candidates:
        if candidate.key and candidate.key in seen:
            continue
        if candidate.source == "signature" and candidate.symbol_id in code_symbols:
            continue  # its code is already in the context
        new = _block(candidate)
        where = (new.repo, new.ref, new.path, new.source)
        target, block = None, new
        for index in by_file.get(where, []):
            merged = _merged(selected[index], new)
            if merged is not None:
                target, block = index, merged
                break
        # Most candidates come after the budget is nearly spent; only those that might
        # still fit are counted (tiktoken is most of the assembler's time).
        room = budget - used + (costs[target] if target is not None else 0)
        cost = tokens(block, room)
        if cost is None or cost > room:
            continue
        total = used + cost - (costs[target] if target is not None else 0)
        if target is None:
            by_file.setdefault(where, []).append(len(selected))
            selected.append(block)
            costs.append(cost)
        else:
            selected[target], costs[target] = block, cost
        used = total
        if block.source != "signature":
            code_symbols.update(block.symbol_ids)
        if candidate.key:
            seen.add(candidate.key)
    # The sum of parts can differ from the whole by a token at a seam: check the whole,
    # counted once unless it is over.
    used = counter.count("".join(b.render() for b in selected)) if selected else 0
    while used > budget:
        selected.pop()
        costs.pop()
        used = counter.count("".join(b.render() for b in selected)) if selected else 0
    for block, cost in zip(selected, costs, strict=True):
        block.tokens = cost
    return selected, used
