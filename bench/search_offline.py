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
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine
from context_quality import FileBM25, load_set
from patchstream.embedders.base import Embedder
from patchstream.embedders.factory import create_embedder
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.settings import Settings
from patchstream.stores.vector.search_index import IndexedRow, TenantIndex, is_auxiliary

SCOPE = "t|set|main"


def build_index(sources: dict[str, str], embedder: Embedder) -> TenantIndex:
    builder = FileStateBuilder()
    rows: list[tuple[str, str, str, str]] = []  # pk, kind, path, text
    for path, text in sources.items():
        state = builder.build(FileRef("t", "set", "main", path, 1), text.encode())
        rows += [(f"{path}#{c.id}", c.kind, path, c.text) for c in state.chunks]
    index = TenantIndex(embedder.dim)
    index.reserve(len(rows))
    vectors = embedder.embed([text for _, _, _, text in rows])
    for (pk, kind, path, text), dense in zip(rows, vectors, strict=True):
        index.add(IndexedRow(pk, SCOPE, kind, path, text, np.asarray(dense, np.float32), path))
    return index


def ranked_files(index: TenantIndex, embedder_vector: list[float], question: str) -> list[str]:
    files: list[str] = []
    for pk, _ in index.search(question, embedder_vector, index.mask([SCOPE]), 60):
        path = str(index.payload(pk))
        if path not in files:
            files.append(path)
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", nargs="+", default=["scrapy", "pytest"])
    parser.add_argument("--embedder", default="hashing")
    args = parser.parse_args()
    print(f"machine {machine()}; embedder {args.embedder}")
    for name in args.sets:
        chosen = load_set(name)
        with tempfile.TemporaryDirectory() as tmp:
            chosen.extract(Path(tmp))
        started = time.monotonic()
        embedder = create_embedder(Settings().embedding.model_copy(update={"kind": args.embedder}))
        index = build_index(chosen.sources, embedder)
        baseline = FileBM25(chosen.sources)
        built = time.monotonic() - started
        ours = {1: 0, 5: 0, 10: 0}
        theirs = {1: 0, 5: 0, 10: 0}
        aux = 0
        for q in chosen.questions:
            files = ranked_files(index, embedder.embed([q.question])[0], q.question)
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
