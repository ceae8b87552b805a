"""Extraction over complete source trees of real packages installed from PyPI."""

from __future__ import annotations

import collections
from pathlib import Path

import aiokafka
import click
import faust
import hypothesis
import pydantic
import pytest

from patchstream.parsing.filestate import FileStateBuilder
from patchstream.schemas.graph import SymbolKind
from tests.conftest import build_state

CORPORA = {
    "aiokafka": Path(aiokafka.__file__).parent,
    "faust": Path(faust.__file__).parent,
    "pydantic": Path(pydantic.__file__).parent,
    "hypothesis": Path(hypothesis.__file__).parent,
    "click": Path(click.__file__).parent,
}


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(CORPORA))
def test_whole_package_extracts_without_crashing(builder: FileStateBuilder, name: str) -> None:
    root = CORPORA[name]
    files = sorted(p for p in root.rglob("*.py") if p.is_file())
    assert len(files) > 10
    flags: collections.Counter[str] = collections.Counter()
    symbols = edges = chunks = 0
    for file in files:
        rel = file.relative_to(root.parent).as_posix()
        state = build_state(builder, rel, file.read_bytes(), repo=name)
        flags.update(state.flags.raised())
        symbols += len(state.symbols)
        edges += len(state.edges)
        chunks += len(state.chunks)
        kinds = collections.Counter(s.kind for s in state.symbols)
        assert kinds[SymbolKind.FILE] == 1 and kinds[SymbolKind.MODULE] <= 1
        ids = {s.id for s in state.symbols}
        assert len(ids) == len(state.symbols), f"duplicate symbol ids in {rel}"
        for edge in state.edges:
            assert edge.src in ids and (edge.ref is not None or edge.dst in ids), (rel, edge)
        for chunk in state.chunks:
            assert chunk.symbol_id in ids and chunk.tokens <= 2 * 256
    print(
        f"{name}: files={len(files)} symbols={symbols} edges={edges} chunks={chunks} "
        f"flags={dict(flags)}"
    )
    assert symbols > 5 * len(files) // 2
    # Installed packages are valid Python: a syntax-error flag would be an extraction bug.
    assert flags["has_errors"] == 0 and flags["parse_timeout"] == 0
