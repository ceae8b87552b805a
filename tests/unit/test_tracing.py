"""``patchstream trace``: the tracer records exactly the calls a program makes, Python's code
names map to the graph's symbols, and hostile trace files and events are refused by reason."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.traces import TracedCall, TraceEvent
from patchstream.stores.graph.runtime_edges import plan_trace
from patchstream.tracing.mapping import caller_name, graph_name, trace_events
from patchstream.tracing.reader import read_trace_dir
from patchstream.tracing.run import trace_command

HASH = "0" * 32


def test_python_code_names_become_graph_names() -> None:
    assert graph_name("outer.<locals>.inner") == "outer.inner"
    assert graph_name("A.m.<locals>.B.n") == "A.m.B.n"
    assert caller_name("outer.<locals>.<lambda>") == "outer"
    assert caller_name("f.<locals>.<listcomp>.<locals>.<genexpr>") == "f"
    assert caller_name("<module>") == "<module>"
    assert caller_name("<lambda>") == "<module>"  # a module-level lambda runs in the module


def _program(calls: list[tuple[int, int]], size: int) -> dict[str, str]:
    """Functions f0..f{size-1} over two modules; each calls its callees once, in order."""
    bodies: dict[int, list[str]] = {i: [] for i in range(size)}
    for caller, callee in calls:
        bodies[caller].append(f"    m{callee % 2}.f{callee}()")
    files = {"pkg/__init__.py": ""}
    for module in (0, 1):
        lines = ["from pkg import m0, m1", ""]
        for i in range(module, size, 2):
            lines += ["", f"def f{i}():", *(bodies[i] or ["    return None"]), ""]
        files[f"pkg/m{module}.py"] = "\n".join(lines)
    files["pkg/main.py"] = "from pkg import m0\n\nm0.f0()\n"
    return files


@st.composite
def call_dags(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    size = draw(st.integers(2, 8))
    pairs = [(a, b) for a in range(size) for b in range(a + 1, size)]
    return size, sorted(set(draw(st.lists(st.sampled_from(pairs), max_size=12))))


@settings(max_examples=12, deadline=None)
@given(dag=call_dags())
def test_tracing_a_program_yields_exactly_the_calls_it_makes(
    dag: tuple[int, list[tuple[int, int]]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    size, calls = dag
    root = tmp_path_factory.mktemp("traced")
    for rel, text in _program(calls, size).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    result = trace_command([sys.executable, "-m", "pkg.main"], root, tenant="t", repo="r",
                           ref="main")  # fmt: skip
    assert result.returncode == 0
    found = {(c.caller.rsplit("::", 1)[1], c.callee.rsplit("::", 1)[1])
             for e in result.events for c in e.calls}  # fmt: skip
    reachable = {0}
    for caller, callee in calls:  # callers come before their callees: a DAG in index order
        if caller in reachable:
            reachable.add(callee)
    expected = {(f"f{a}", f"f{b}") for a, b in calls if a in reachable}
    assert found == expected | {("<module>", "f0")}


def _states(root: Path, paths: list[str]) -> dict[str, object]:
    builder = FileStateBuilder()
    return {p: builder.build(FileRef("t", "r", "main", p, 0), (root / p).read_bytes())
            for p in paths}  # fmt: skip


def test_pairs_map_to_symbols_and_the_rest_is_left_out_by_reason(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "def outer():\n    def inner():\n        return 1\n    return inner()\n\n\n"
        "class K:\n    def m(self):\n        return [outer() for _ in ()]\n"
    )
    counts = {
        ("a.py", "outer", "a.py", "outer.<locals>.inner"): 2,
        ("a.py", "K.m.<locals>.<listcomp>", "a.py", "outer"): 3,
        ("a.py", "<module>", "a.py", "K"): 1,  # the class body runs: not a call of K
        ("a.py", "outer", "a.py", "outer.<locals>.<lambda>"): 1,
        ("a.py", "outer", "a.py", "gone"): 1,
        ("a.py", "outer", "b.py", "f"): 1,  # b.py changed during the run: no state
    }
    mapped = trace_events(counts, _states(tmp_path, ["a.py"]), tenant="t", repo="r",
                          ref="main", command="pytest")  # type: ignore[arg-type]  # fmt: skip
    [event] = mapped.events
    assert [(c.caller, c.callee, c.count) for c in event.calls] == [
        ("r::a.py::K.m", "r::a.py::outer", 3),
        ("r::a.py::outer", "r::a.py::outer.inner", 2),
    ]
    assert mapped.left_out == {
        "callee is a class body": 1,
        "callee is a lambda, comprehension or module body": 1,
        "name not among the file's symbols": 1,
        "file unreadable or changed during the run": 1,
    }


def test_a_lambda_bound_to_a_name_is_its_symbol_as_caller_and_callee(tmp_path: Path) -> None:
    """``key = lambda x: helper(x)`` is the function ``key`` statically, so its runtime
    edges name it too: found by the line its code starts on."""
    source = "def helper(x):\n    return x\n\n\nkey = lambda x: helper(x)\nkey(1)\n"
    (tmp_path / "a.py").write_text(source)
    (tmp_path / "traced.py").write_text(
        "import sys\nsys.path.insert(0, '.')\nimport a\n"
        "print([c for c in (lambda: a.key(2),)][0]())\n"
    )
    result = trace_command([sys.executable, "traced.py"], tmp_path, tenant="t", repo="r",
                           ref="main")  # fmt: skip
    found = {(c.caller.rsplit("::", 1)[1], c.callee.rsplit("::", 1)[1])
             for e in result.events for c in e.calls}  # fmt: skip
    assert {("<module>", "key"), ("key", "helper")} <= found
    assert ("<module>", "helper") not in found  # the lambda's call is its own


def test_hostile_trace_files_are_refused_row_by_row(tmp_path: Path) -> None:
    root, out = tmp_path / "repo", tmp_path / "out"
    (root / "pkg").mkdir(parents=True)
    out.mkdir()
    (root / "pkg/a.py").write_text("def f():\n    pass\n")
    outside = tmp_path / "secret.py"
    outside.write_text("x = 1\n")
    (root / "pkg/link.py").symlink_to(outside)
    good = str(root / "pkg/a.py")
    rows = [
        [good, "f", 1, good, "f", 1, 4],
        [good, "f", 1, good, "f", 1, 3],  # summed with the first
        [good, "f", 1, str(outside), "x", 1, 1],  # outside the root
        [good, "f", 1, str(root / "pkg/link.py"), "x", 1, 1],  # a symlink out of it
        [good, "f", 1, str(root / ".git/hooks/x.py"), "x", 1, 1],  # into .git
        [good, "f", 1, "pkg/a.py", "f", 1, 1],  # relative: not the collector's
        [good, "f", 1, good, "f", 1, 10**13],  # implausible count
        [good, "f", 1, good, "f", 1, True],  # a bool is no count
        [good, "f", 1, good, "f", 1],  # short
        "not a row",
        [good, "x" * 1001, 1, good, "f", 1, 1],
    ]
    (out / "trace-1-1.json").write_text(json.dumps({"pairs": rows, "dropped": 7}))
    (out / "trace-2-1.json").write_text("{not json")
    (out / "trace-3-1.json").write_text(json.dumps({"pairs": "many"}))
    raw = read_trace_dir(out, root)
    assert dict(raw.counts) == {("pkg/a.py", "f", "pkg/a.py", "f"): 7}
    assert raw.refused == {
        "path outside the repository": 4, "implausible count": 1, "malformed row": 3,
        "name over 1,000 characters": 1, "trace file is not JSON": 1,
        "trace file has no pairs": 1,
    }  # fmt: skip
    assert raw.processes == 1 and raw.dropped_at_source == 7


def _event(**fields: object) -> TraceEvent:
    call = {"caller": "r::a.py::f", "callee": "r::b.py::g", "callee_path": "b.py",
            "callee_hash": HASH, "count": 2}  # fmt: skip
    base: dict[str, object] = {"tenant": "t", "repo": "r", "path": "a.py", "content_hash": HASH,
                               "command": "pytest -q", "calls": [call]}  # fmt: skip
    base.update(fields)
    return TraceEvent.model_validate(base)


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"path": "../etc/passwd"}, "'..'"),
        ({"path": ".git/config"}, ".git"),
        ({"repo": "a/../b"}, "'..'"),
        ({"content_hash": "not-a-hash"}, "pattern"),
        ({"command": "pytest\x1b[2J"}, "control character"),
        ({"traced_at": datetime(2026, 1, 1)}, "timezone"),
        ({"calls": [{"caller": "r::other.py::f", "callee": "r::b.py::g", "callee_path": "b.py",
                     "callee_hash": HASH, "count": 1}]}, "not a symbol of 'a.py'"),
        ({"calls": [{"caller": "r::a.py::f", "callee": "r::c.py::g", "callee_path": "b.py",
                     "callee_hash": HASH, "count": 1}]}, "not a symbol of 'b.py'"),
        ({"calls": [{"caller": "r::a.py::f", "callee": "r::b.py::g", "callee_path": "b.py",
                     "callee_hash": HASH, "count": 0}]}, "greater than or equal to 1"),
        ({"calls": [{"caller": "r::a.py::f\n", "callee": "r::b.py::g", "callee_path": "b.py",
                     "callee_hash": HASH, "count": 1}]}, "control character"),
    ],
)  # fmt: skip
def test_hostile_trace_events_are_refused_with_a_reason(
    fields: dict[str, object], reason: str
) -> None:
    with pytest.raises(ValidationError, match=reason.replace(".", r"\.")):
        _event(**fields)


def test_a_trace_event_keeps_only_calls_whose_files_still_hold_the_traced_content() -> None:
    event = _event(calls=[
        TracedCall(caller="r::a.py::f", callee="r::b.py::g", callee_path="b.py",
                   callee_hash=HASH, count=2),
        TracedCall(caller="r::a.py::f", callee="r::c.py::h", callee_path="c.py",
                   callee_hash=HASH, count=1),  # c.py changed since
        TracedCall(caller="r::a.py::f", callee="r::b.py::gone", callee_path="b.py",
                   callee_hash=HASH, count=1),  # no such symbol now
        TracedCall(caller="r::a.py::f", callee="r::d.py::k", callee_path="d.py",
                   callee_hash=HASH, count=1),  # d.py is not indexed
    ])  # fmt: skip
    scope = "t|r|main"
    hashes = {f"{scope}|a.py": HASH, f"{scope}|b.py": HASH, f"{scope}|c.py": "1" * 32}
    existing = {f"{scope}|r::a.py::f", f"{scope}|r::b.py::g", f"{scope}|r::c.py::h"}
    statements, outcome = plan_trace(event, hashes, existing, now=1.0)
    assert (outcome.kept, outcome.stale, outcome.unknown) == (1, 1, 2)
    [write, mark] = statements
    assert [r["dst"] for r in write[1]["rows"]] == [f"{scope}|r::b.py::g"]
    assert mark[1]["props"]["event_id"] == event.event_id
    # A trace of a caller file that has changed keeps nothing.
    _, stale = plan_trace(event, {**hashes, f"{scope}|a.py": "2" * 32}, existing, now=1.0)
    assert (stale.kept, stale.stale) == (0, 3)


def test_the_tracer_leaves_the_environments_own_sitecustomize_running(tmp_path: Path) -> None:
    """A project's sitecustomize (coverage, path setup) still runs under the tracer."""
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "ran"
    (site / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (tmp_path / "prog.py").write_text("def f():\n    pass\n\n\nf()\n")
    os.environ["PYTHONPATH"], old = str(site), os.environ.get("PYTHONPATH")
    try:
        result = trace_command([sys.executable, "prog.py"], tmp_path, tenant="t", repo="r",
                               ref="main")  # fmt: skip
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    assert marker.exists()
    assert [(c.caller, c.callee) for e in result.events for c in e.calls] == [
        ("r::prog.py::<module>", "r::prog.py::f")
    ]
    assert isinstance(result.events[0].traced_at, datetime)
    assert result.events[0].traced_at.tzinfo is UTC


def test_calls_made_in_threads_and_subprocesses_are_traced(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(
        "import subprocess, sys, threading\n\n\ndef work():\n    pass\n\n\n"
        "def in_thread():\n    work()\n\n\n"
        "if __name__ == '__main__':\n"
        "    t = threading.Thread(target=in_thread)\n    t.start()\n    t.join()\n"
        "    if len(sys.argv) == 1:\n"
        "        subprocess.run([sys.executable, 'child.py'], check=True)\n"
    )
    (tmp_path / "child.py").write_text("def child():\n    pass\n\n\nchild()\n")
    result = trace_command([sys.executable, "prog.py"], tmp_path, tenant="t", repo="r",
                           ref="main")  # fmt: skip
    found = {(c.caller, c.callee) for e in result.events for c in e.calls}
    assert ("r::prog.py::in_thread", "r::prog.py::work") in found
    assert ("r::child.py::<module>", "r::child.py::child") in found
    assert result.processes == 2
