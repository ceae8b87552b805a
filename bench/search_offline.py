"""Search ranking without a stack: the query service's in-memory index (``TenantIndex``), fed
the chunks the parse stage makes, ranks each localization question; a plain file BM25 ranks
it too, in the same run. Minutes instead of an hour per lever, for measuring ranking changes;
``context_quality.py`` remains the end-to-end figure (HTTP, context, both embedders).

    python bench/search_offline.py [--sets scrapy pytest] [--embedder hashing]

Prints, per set: file accuracy@1/5/10 (the share of questions with a changed file among the
first k distinct files), test/doc files in the top 10, and the BM25 baseline's figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine
from context_quality import FileBM25, load_set
from patchstream.embedders.base import Embedder
from patchstream.embedders.factory import create_embedder
from patchstream.parsing.file_roles import is_auxiliary
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.query.question import named_files, named_in
from patchstream.settings import Settings
from patchstream.stores.vector.search_index import (
    AUXILIARY_WEIGHT,
    FILE_WEIGHT,
    NAMED_WEIGHT,
    ROWS_PER_FILE,
    IndexedRow,
    TenantIndex,
)

SCOPE = "t|set|main"


def build_index(
    sources: dict[str, str], embedder: Embedder
) -> tuple[TenantIndex, dict[str, set[str]]]:
    """The index, and name -> files defining it (what the graph's symbols_by_name answers)."""
    builder = FileStateBuilder()
    rows: list[tuple[str, str, str, str]] = []  # pk, kind, path, text
    definers: dict[str, set[str]] = {}
    for path, text in sources.items():
        state = builder.build(FileRef("t", "set", "main", path, 1), text.encode())
        rows += [(f"{path}#{c.id}", c.kind, path, c.text) for c in state.chunks]
        for symbol in state.symbols:
            for name in {symbol.name, symbol.qualified_name}:
                definers.setdefault(name, set()).add(path)
    index = TenantIndex(embedder.dim)
    index.reserve(len(rows))
    vectors = embedder.embed([text for _, _, _, text in rows])
    for (pk, kind, path, text), dense in zip(rows, vectors, strict=True):
        index.add(IndexedRow(pk, SCOPE, kind, path, text, np.asarray(dense, np.float32), path))
    return index, definers


def ranked_files(
    index: TenantIndex, vector: list[float], question: str, named: list[str], weight: float,
    auxiliary_weight: float = AUXILIARY_WEIGHT, file_weight: float = FILE_WEIGHT,
    named_explicit: int | None = None, rows_per_file: int = ROWS_PER_FILE,
) -> list[str]:  # fmt: skip
    files: list[str] = []
    found = index.search(question, vector, index.mask([SCOPE]), 60, named_files=named,
                         named_weight=weight, auxiliary_weight=auxiliary_weight,
                         file_weight=file_weight, named_explicit=named_explicit,
                         rows_per_file=rows_per_file)  # fmt: skip
    for pk, _ in found:
        path = str(index.payload(pk))
        if path not in files:
            files.append(path)
    return files


def definers_of(table: dict[str, set[str]]) -> Callable[[Sequence[str]], dict[str, set[str]]]:
    return lambda names: {name: table.get(name, set()) for name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", nargs="+", default=["scrapy", "pytest"])
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument(
        "--named-weight",
        type=float,
        default=NAMED_WEIGHT,
        help="weight of the files the question names (0: off)",
    )
    args = parser.parse_args()
    print(f"machine {machine()}; embedder {args.embedder}; named weight {args.named_weight}")
    for name in args.sets:
        chosen = load_set(name)
        with tempfile.TemporaryDirectory() as tmp:
            chosen.extract(Path(tmp))
        started = time.monotonic()
        embedder = create_embedder(Settings().embedding.model_copy(update={"kind": args.embedder}))
        index, definers = build_index(chosen.sources, embedder)
        baseline = FileBM25(chosen.sources)
        built = time.monotonic() - started
        ours = {1: 0, 5: 0, 10: 0}
        theirs = {1: 0, 5: 0, 10: 0}
        aux = 0
        for q in chosen.questions:
            pointed = named_files(named_in(q.question), definers_of(definers), chosen.sources)
            files = ranked_files(index, embedder.embed([q.question])[0], q.question,
                                 pointed.files, args.named_weight,
                                 named_explicit=pointed.explicit)  # fmt: skip
            base = baseline.rank(q.question)
            aux += sum(is_auxiliary(f) for f in files[:10])
            for k in ours:
                ours[k] += bool(set(files[:k]) & q.files)
                theirs[k] += bool(set(base[:k]) & q.files)
        n = len(chosen.questions)
        print(f"{name}: {n} questions, {len(chosen.sources)} files, index {built:.1f}s | "
              + "  ".join(f"acc@{k} {ours[k] / n:.3f}" for k in ours)
              + f"  tests/docs in top10 {aux / n:.2f} | BM25 "
              + "  ".join(f"acc@{k} {theirs[k] / n:.3f}" for k in theirs))  # fmt: skip


if __name__ == "__main__":
    main()
