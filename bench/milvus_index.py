"""Milvus Lite's dense index: HNSW over float32 vectors against HNSW_SQ over 8-bit codes.

Milvus Lite keeps every segment's vectors in memory twice: in the segment's Arrow table and
in the FAISS index built over it. HNSW_SQ stores a byte per dimension in the index instead of
four. Measured here on the chunks of a real corpus (scipy's source tree, as the parse stage
makes them), embedded by the default embedder, with FAISS as Milvus Lite builds its indexes
(cosine as inner product over unit vectors, M and efConstruction from the settings, SQ8
trained on the vectors): the index's bytes, the time to build it, and recall@10 and @100 of
each against the exact ranking, for 300 chunks and 100 SWE-bench issue texts as questions.
The stack-level figure (Milvus Lite's RSS through a cold index, both ways) comes from
``bench/pipeline.py`` run with ``PATCHSTREAM_VECTOR__DENSE_INDEX=HNSW`` and ``=HNSW_SQ``.

    python bench/milvus_index.py [--corpus medium]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import SOURCE_SUFFIXES, build_corpus, corpus_label, machine, print_rows
from patchstream.config.settings import Settings
from patchstream.embedders.factory import create_embedder
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.parsing.languages import language_for_path
from query import issue_queries


def chunk_texts(root: Path) -> list[str]:
    builder = FileStateBuilder()
    texts: list[str] = []
    for file in sorted(root.rglob("*")):
        if file.suffix in SOURCE_SUFFIXES and language_for_path(file.name):
            rel = file.relative_to(root).as_posix()
            state = builder.build(FileRef("b", "b", "main", rel, 1), file.read_bytes())
            texts.extend(chunk.text for chunk in state.chunks)
    return texts


def unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.where(norms > 0, norms, 1), np.float32)


def recall(exact: np.ndarray, found: np.ndarray, k: int) -> float:
    pairs = zip(exact, found, strict=True)
    hits = [len(set(e[:k].tolist()) & set(f[:k].tolist())) / k for e, f in pairs]
    return float(np.mean(hits))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="medium")
    args = parser.parse_args()
    settings = Settings()
    vector = settings.vector
    with tempfile.TemporaryDirectory() as tmp:
        root = build_corpus(args.corpus, Path(tmp))
        texts = chunk_texts(root)
    embedder = create_embedder(settings.embedding)
    started = time.perf_counter()
    rows = unit(np.asarray(embedder.embed(texts), np.float32))
    print(f"corpus {corpus_label(args.corpus)}: {len(texts)} chunks, dim {rows.shape[1]}; "
          f"embedder {settings.embedding.kind} ({time.perf_counter() - started:.0f} s); "
          f"M {vector.hnsw_m}, efConstruction {vector.hnsw_ef_construction}, "
          f"ef {vector.hnsw_ef}; machine {machine()}", flush=True)  # fmt: skip
    rng = random.Random(5)
    questions = {
        "chunks as questions (300)": rows[rng.sample(range(len(rows)), 300)],
        "issue texts (100)": unit(np.asarray(embedder.embed(issue_queries(100)), np.float32)),
    }
    exact = {name: np.argsort(-(q @ rows.T), axis=1)[:, :100] for name, q in questions.items()}
    report: dict[str, str] = {}
    for kind in ("HNSW", "HNSW_SQ"):
        dim = rows.shape[1]
        if kind == "HNSW":
            index = faiss.IndexHNSWFlat(dim, vector.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        else:
            index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, vector.hnsw_m,
                                      faiss.METRIC_INNER_PRODUCT)  # fmt: skip
        index.hnsw.efConstruction = vector.hnsw_ef_construction
        started = time.perf_counter()
        if kind == "HNSW_SQ":
            index.train(rows)
        index.add(rows)
        built = time.perf_counter() - started
        index.hnsw.efSearch = max(vector.hnsw_ef, 100)
        size = len(faiss.serialize_index(index))
        report[f"{kind}: index MiB, build s"] = f"{size / 2**20:.1f}, {built:.1f}"
        for name, q in questions.items():
            started = time.perf_counter()
            _, found = index.search(q, 100)
            ms = (time.perf_counter() - started) * 1000 / len(q)
            report[f"{kind}: recall@10 / @100, {name}"] = (
                f"{recall(exact[name], found, 10):.3f} / {recall(exact[name], found, 100):.3f} "
                f"({ms:.2f} ms a question)"
            )
    report["float32 vectors as the segment holds them, MiB"] = f"{rows.nbytes / 2**20:.1f}"
    print_rows(report)


if __name__ == "__main__":
    main()
