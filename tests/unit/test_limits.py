"""Pathological files are flagged, never crash, and broken code keeps the last good structure."""

from __future__ import annotations

import pytest

from patchstream.config.settings import ParsingSettings
from patchstream.parsing.filestate import FileStateBuilder
from patchstream.schemas.graph import SymbolKind
from tests.conftest import build_state

GOOD = b'''def keep(x):
    """Kept."""
    return helper(x)


def helper(x):
    return x + 1


class Model:
    def run(self):
        return keep(1)
'''


def test_oversized_file_keeps_only_a_file_node() -> None:
    builder = FileStateBuilder(ParsingSettings(max_file_bytes=100))
    state = build_state(builder, "big.py", GOOD)
    assert state.flags.too_large and state.flags.raised() == ["too_large"]
    assert [s.kind for s in state.symbols] == [SymbolKind.FILE]
    assert state.chunks == ()


def test_binary_file_is_skipped(builder: FileStateBuilder) -> None:
    state = build_state(builder, "blob.py", b"\x7fELF\x00\x01\x02def x(): pass")
    assert state.flags.binary
    assert [s.kind for s in state.symbols] == [SymbolKind.FILE]


def test_non_utf8_is_decoded_with_replacement_and_flagged(builder: FileStateBuilder) -> None:
    state = build_state(builder, "latin.py", b"# caf\xe9\ndef cafe():\n    return 1\n")
    assert state.flags.not_utf8 and not state.flags.has_errors
    assert "cafe" in {s.qualified_name for s in state.symbols}


def test_parse_timeout_is_flagged_and_keeps_previous_structure() -> None:
    normal = FileStateBuilder()
    previous = build_state(normal, "slow.py", GOOD)
    strict = FileStateBuilder(ParsingSettings(timeout_micros=1))
    huge = GOOD + b"\n".join(b"def f%d(a):\n    return a" % i for i in range(30000))
    state = build_state(strict, "slow.py", huge, version=2, previous=previous)
    assert state.flags.parse_timeout
    assert state.symbols == previous.symbols
    fresh = build_state(strict, "other.py", huge, version=2)
    assert fresh.flags.parse_timeout
    assert [s.kind for s in fresh.symbols] == [SymbolKind.FILE]


def test_syntax_error_keeps_last_good_symbols_until_fixed(builder: FileStateBuilder) -> None:
    good = build_state(builder, "m.py", GOOD)
    broken_src = GOOD.replace(
        b"def helper(x):\n    return x + 1", b"def helper(x:\n    return (x +"
    )
    broken = build_state(builder, "m.py", broken_src, version=2, previous=good)
    assert broken.flags.has_errors
    good_helper = next(s for s in good.symbols if s.qualified_name == "helper")
    assert good_helper in broken.symbols  # last good version, not the broken one
    assert {s.id for s in good.symbols} <= {s.id for s in broken.symbols}
    assert any(e.dst == good_helper.id for e in broken.edges)  # keep() still calls helper
    # Once it parses again, symbols that were really removed go away.
    fixed = build_state(
        builder,
        "m.py",
        GOOD.replace(b"def helper(x):\n    return x + 1\n", b""),
        version=3,
        previous=broken,
    )
    assert not fixed.flags.has_errors
    assert "helper" not in {s.qualified_name for s in fixed.symbols}


def test_deeply_nested_code_does_not_hit_recursion_limits(builder: FileStateBuilder) -> None:
    depth = 3000
    source = ("x = " + "[" * depth + "]" * depth + "\n").encode()
    state = build_state(builder, "deep.py", source)
    assert "x" in {s.qualified_name for s in state.symbols}
    nested = "".join("    " * i + f"def f{i}():\n" for i in range(200)) + "    " * 200 + "pass\n"
    state = build_state(builder, "nest.py", nested.encode())
    assert len([s for s in state.symbols if s.kind is SymbolKind.FUNCTION]) == 200


def test_extraction_has_a_budget_of_its_own() -> None:
    import time

    import pytest
    import tree_sitter as ts

    from patchstream.parsing.extract import extract
    from patchstream.parsing.incremental import ParseTimeout
    from patchstream.parsing.languages import get_language

    source = b"def f():\n    return g(1)\n" * 600
    tree = ts.Parser(get_language("python")).parse(source)
    assert extract(tree, source, "python", "r", "a.py", time.thread_time() + 60).symbols
    with pytest.raises(ParseTimeout):
        extract(tree, source, "python", "r", "a.py", deadline=time.thread_time() - 1)


def test_a_busy_machine_does_not_count_against_a_files_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The budget is the parsing thread's CPU time. Wall time passing while the thread does
    not run (other processes on the cores, the GIL) used to flag ordinary big files
    ``parse_timeout`` during a cold index and drop their symbols: here every look at the wall
    clock finds another 10 s gone."""
    import time

    wall = [time.monotonic()]

    def stalled() -> float:
        wall[0] += 10.0
        return wall[0]

    monkeypatch.setattr(time, "monotonic", stalled)
    source = b"".join(b"def f%d(x):\n    return g(x).h(%d)\n\n" % (i, i) for i in range(800))
    builder = FileStateBuilder(ParsingSettings(timeout_micros=2_000_000))
    state = build_state(builder, "big.py", source)
    assert not state.flags.parse_timeout
    assert len([s for s in state.symbols if s.kind is SymbolKind.FUNCTION]) == 800


def test_compiling_a_languages_queries_is_not_the_first_files_budget() -> None:
    """The first Swift file of a process was flagged parse_timeout: compiling Swift's fact
    query (1.1-1.4 s of CPU here) was counted in its 2 s. A budget under the compile time
    still parses a small file once the compile is left out of it."""
    from patchstream.parsing.fact_queries import facts_query
    from patchstream.parsing.languages import get_query

    get_query.cache_clear()
    facts_query.cache_clear()
    tight = FileStateBuilder(ParsingSettings(timeout_micros=300_000))
    source = (
        b"struct Square {\n  var side: Int\n  func area() -> Int { side * side }\n}\n"
        + b"".join(b"func f%d(_ s: Square) -> Int { s.area() + %d }\n" % (i, i) for i in range(300))
    )  # enough steps that the budget is looked at after the compile
    state = build_state(tight, "Sources/Square.swift", source)
    assert not state.flags.parse_timeout
    assert "Square.area" in {s.qualified_name for s in state.symbols}
