"""Deltas: apply(previous, diff(previous, new)) == new; incremental parsing changes nothing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pydantic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchstream.config.settings import ParsingSettings
from patchstream.parsing.delta import apply_delta, compute_delta, delete_delta, diff_states
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.schemas.state import FileState
from patchstream.streams.codec import decode_delta, encode
from tests.conftest import FIXTURES, build_state

REAL_FILES = [
    # Every fixture's source; ``pinned/`` holds archives of real code and their licences.
    *(p for p in sorted(FIXTURES.rglob("*")) if p.is_file() and "pinned" not in p.parts),
    Path(pydantic.__file__).parent / "fields.py",
    Path(pydantic.__file__).parent / "networks.py",
]
SNIPPETS = [
    "\n",
    "def added(a):\n    return a\n",
    "    x = call(y)\n",
    "class K(Base):\n",
    "(",
    "}",
    "{",
]


@st.composite
def edits(draw: st.DrawFn, text: str) -> list[str]:
    """A sequence of versions of ``text``, each a random line-level edit of the previous."""
    versions = []
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "duplicate", "rename"]))
        at = draw(st.integers(0, max(0, len(lines) - 1)))
        if kind == "delete":
            span = draw(st.integers(1, 8))
            lines = lines[:at] + lines[at + span :]
        elif kind == "insert":
            lines = lines[:at] + draw(st.sampled_from(SNIPPETS)).split("\n") + lines[at:]
        elif kind == "duplicate" and lines:
            lines = [*lines[: at + 1], lines[at], *lines[at + 1 :]]
        else:
            lines = [
                line.replace("def ", "def renamed_", 1) if i == at else line
                for i, line in enumerate(lines)
            ]
        versions.append("\n".join(lines))
    return versions


def _rel(path: Path) -> str:
    return (
        path.name
        if path.is_relative_to(FIXTURES) is False
        else path.relative_to(FIXTURES).as_posix()
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), source=st.sampled_from(REAL_FILES))
def test_delta_round_trip_and_incremental_equals_full(data: st.DataObject, source: Path) -> None:
    incremental = FileStateBuilder()
    text = source.read_text(encoding="utf-8")
    path = _rel(source)
    previous: FileState | None = None
    for version, content in enumerate([text, *data.draw(edits(text))], start=1):
        target = FileRef(tenant="t", repo="r", ref="main", path=path, version=version)
        new = incremental.build(target, content.encode(), previous)
        full = FileStateBuilder(ParsingSettings(tree_cache_size=0)).build(
            target, content.encode(), previous
        )
        assert new == full, "incremental reparse must give the same state as a full parse"
        delta = diff_states(previous, new)
        assert apply_delta(previous, delta) == new  # incremental path
        if previous is not None:  # replacement path: the sink holds some other version
            elsewhere = previous.model_copy(update={"version": previous.version + 1000})
            assert apply_delta(elsewhere, delta) == new
            assert apply_delta(None, delta) == new
        assert set(delta.new_chunk_hashes) <= {c.content_hash for c in new.chunks}
        previous = new


def test_compute_delta_is_deterministic_and_minimal(builder: FileStateBuilder) -> None:
    source = (FIXTURES / "python/pkg/shapes.py").read_bytes()
    target = FileRef(tenant="t", repo="r", ref="main", path="pkg/shapes.py", version=1)
    first = compute_delta(None, source, target, FileStateBuilder())
    again = compute_delta(None, source, target, FileStateBuilder())
    assert first == again
    state = apply_delta(None, first)
    assert state is not None
    edited = source.replace(b"return 0\n", b"return 1\n", 1)
    second = compute_delta(state, edited, dataclasses.replace(target, version=2), builder)
    assert [s.qualified_name for s in second.upserted_symbols()] == [
        "pkg/shapes.py",
        "pkg.shapes",
        "Shape",
        "Shape.area",
    ]
    assert second.symbol_ids_remove == () and second.edges_add == () and second.edges_remove == ()
    assert [c.symbol_id for c in second.upserted_chunks()] == ["r::pkg/shapes.py::Shape.area"]
    assert second.base_version == 1 and second.version == 2
    assert len(second.new_chunk_hashes) == 1


def test_unchanged_content_gives_an_empty_delta(builder: FileStateBuilder) -> None:
    source = (FIXTURES / "go/shapes.go").read_bytes()
    first = build_state(builder, "shapes.go", source)
    again = build_state(builder, "shapes.go", source, version=2, previous=first)
    delta = diff_states(first, again)
    assert delta.symbol_ids_upsert == () and delta.chunk_ids_upsert == () and delta.edges_add == ()
    assert delta.new_chunk_hashes == ()


def test_delete_delta_removes_everything(builder: FileStateBuilder) -> None:
    state = build_state(builder, "shapes.go", (FIXTURES / "go/shapes.go").read_bytes())
    delta = delete_delta(state, tenant="t", repo="r", ref="main", path="shapes.go", version=2)
    assert delta.op == "delete"
    assert set(delta.symbol_ids_remove) == {s.id for s in state.symbols}
    assert set(delta.chunk_ids_remove) == {c.id for c in state.chunks}
    assert apply_delta(state, delta) is None


def test_a_delta_against_nothing_carries_the_state_once_and_reads_as_all_new(
    builder: FileStateBuilder,
) -> None:
    state = build_state(builder, "shapes.py", (FIXTURES / "python/pkg/shapes.py").read_bytes())
    assert state.edges and state.chunks
    cold = diff_states(None, state)
    # On the wire: each edge once (the complete list), none of the "all new" lists.
    wire = encode(cold)
    assert (cold.symbol_ids_upsert, cold.edges_add, cold.chunk_ids_upsert) == ((), (), ())
    assert cold.new_chunk_hashes == ()
    first_edge = state.edges[0].model_dump_json().encode()
    assert wire.count(first_edge) == 1
    # Read back: everything is new.
    read = decode_delta(wire)
    assert read.added_edges() == state.edges
    assert read.upserted_symbols() == list(state.symbols)
    assert read.upserted_chunks() == list(state.chunks)
    assert read.embedding_candidates() == sorted({c.content_hash for c in state.chunks})
    assert apply_delta(None, read) == state
    # A producer that still fills the lists (as before) is read the same way.
    filled = read.model_copy(
        update={
            "edges_add": state.edges,
            "symbol_ids_upsert": tuple(s.id for s in state.symbols),
            "chunk_ids_upsert": tuple(c.id for c in state.chunks),
        }
    )
    assert apply_delta(None, filled) == state
    assert filled.added_edges() == read.added_edges()


def test_a_delta_against_a_base_keeps_its_diff_lists(builder: FileStateBuilder) -> None:
    source = (FIXTURES / "python/pkg/shapes.py").read_bytes()
    first = build_state(builder, "shapes.py", source)
    edited = source.replace(b"return 0\n", b"return helper_added()\n", 1)
    second = build_state(builder, "shapes.py", edited, version=2, previous=first)
    delta = diff_states(first, second)
    assert delta.base_version == 1
    assert delta.edges_add and set(delta.added_edges()) == set(second.edges) - set(first.edges)
    assert delta.embedding_candidates() == list(delta.new_chunk_hashes)
    assert apply_delta(first, delta) == second
