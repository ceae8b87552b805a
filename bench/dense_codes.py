"""The search copy's int8 codes against float32, on real code with the MiniLM embedder.

    python bench/dense_codes.py [--sets scrapy pytest] [--embedder minilm]

Per localization set (a real project nobody here wrote, and its issues as questions): the
chunks the parse stage makes are embedded once; the same ``TenantIndex`` is built twice,
once as shipped (int8 codes, a scale per row) and once with the float32 matrix it used to
hold. Printed: the matrix's bytes; dense recall@10 and @100 of the codes against the float32
ranking, for the issues and for 200 chunks used as questions; the time of one dense
scoring of 150k rows (the set's tiled), both ways in the same run; and file acc@5/@10 of
the whole fused search both ways (what a user sees).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine
from context_quality import load_set
from patchstream.config.settings import Settings
from patchstream.embedders.factory import create_embedder
from patchstream.query.question import file_name_index, named_files, named_in
from patchstream.stores.vector.dense_codes import cosine_scores
from patchstream.stores.vector.ranking import top
from patchstream.stores.vector.search_index import NAMED_WEIGHT, TenantIndex
from search_offline import build_index, definers_of, ranked_files

TIMING_ROWS = 150_000  # about the rows of 6.5k Python files


class Float32Index(TenantIndex):
    """The index as it was before the codes: dense scores from float32 unit vectors."""

    def __init__(self, coded: TenantIndex, unit: npt.NDArray[np.float32]) -> None:
        self.__dict__.update(coded.__dict__)
        self.unit = unit  # dim x rows, in the coded index's row order

    def dense_top(self, query: list[float], keep: npt.NDArray[np.bool_], k: int) -> list[int]:
        if k <= 0 or not keep.any():
            return []
        scores = np.asarray(query, np.float32) @ self.unit[:, : self.size]
        scores[~keep] = -np.inf
        return top(scores, min(k, int(keep.sum())))


def _recall(exact: list[int], coded: list[int]) -> float:
    return len(set(exact) & set(coded)) / max(1, len(exact))


def _timed(run: object, repeat: int = 20) -> float:
    assert callable(run)
    run()
    started = time.perf_counter()
    for _ in range(repeat):
        run()
    return (time.perf_counter() - started) / repeat * 1000


def _scoring_times(
    query: npt.NDArray[np.float32], unit: npt.NDArray[np.float32], coded: TenantIndex
) -> tuple[float, float]:
    """Milliseconds of one dense scoring at a large tenant's size (the rows tiled to
    TIMING_ROWS): float32, then the int8 codes."""
    rows = coded.size
    times = -(-TIMING_ROWS // rows)
    big_unit = np.tile(unit[:, :rows], times)[:, :TIMING_ROWS]
    big_codes = np.tile(coded.by_dim[:, :rows], times)[:, :TIMING_ROWS]
    big_scales = np.tile(coded.scale[:rows], times)[:TIMING_ROWS]
    return (_timed(lambda: query @ big_unit),
            _timed(lambda: cosine_scores(query, big_codes, big_scales)))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", nargs="+", default=["scrapy", "pytest"])
    parser.add_argument("--embedder", default="minilm")
    args = parser.parse_args()
    print(f"machine {machine()}; embedder {args.embedder}")
    embedder = create_embedder(Settings().embedding.model_copy(update={"kind": args.embedder}))
    for name in args.sets:
        chosen = load_set(name)
        with tempfile.TemporaryDirectory() as tmp:
            chosen.extract(Path(tmp))
        coded, definers = build_index(chosen.sources, embedder)
        rows = coded.size
        texts = [coded.payload(pk).text for pk in coded.pks]  # type: ignore[attr-defined]
        vectors = np.asarray(embedder.embed(texts), np.float32)
        unit = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).T.copy()
        exact_index = Float32Index(coded, unit)
        keep = coded.mask()
        rng = np.random.default_rng(5)
        asked = {
            "issues": [q.question for q in chosen.questions],
            "chunks": [texts[i] for i in rng.choice(rows, min(200, rows), replace=False)],
        }
        for kind, questions in asked.items():
            query_vectors = embedder.embed(questions)
            r10, r100 = [], []
            for vector in query_vectors:
                exact = exact_index.dense_top(vector, keep, 100)
                found = coded.dense_top(vector, keep, 100)
                r10.append(_recall(exact[:10], found[:10]))
                r100.append(_recall(exact, found))
            print(f"{name}: {kind} ({len(questions)}) dense recall@10 {np.mean(r10):.3f} "
                  f"@100 {np.mean(r100):.3f} (min@10 {min(r10):.1f})")  # fmt: skip
        one = np.asarray(embedder.embed([chosen.questions[0].question])[0], np.float32)
        f32_ms, int8_ms = _scoring_times(one, unit, coded)
        accuracy = {}
        by_name = file_name_index(chosen.sources)
        for label, index in (("float32", exact_index), ("int8", coded)):
            hits = {5: 0, 10: 0}
            for q in chosen.questions:
                pointed = named_files(named_in(q.question), definers_of(definers), by_name)
                files = ranked_files(index, embedder.embed([q.question])[0], q.question,
                                     pointed.files, NAMED_WEIGHT,
                                     named_explicit=pointed.explicit)  # fmt: skip
                for k in hits:
                    hits[k] += bool(set(files[:k]) & q.files)
            n = len(chosen.questions)
            accuracy[label] = f"acc@5 {hits[5] / n:.3f} acc@10 {hits[10] / n:.3f}"
        print(f"{name}: {rows} rows x {coded.dim} dims; matrix float32 "
              f"{unit.nbytes / 2**20:.1f} MiB, int8 codes + scales "
              f"{(coded.by_dim[:, :rows].nbytes + rows * 4) / 2**20:.1f} MiB; dense scoring of "
              f"{TIMING_ROWS} rows float32 {f32_ms:.1f} ms, int8 {int8_ms:.1f} ms "
              f"({int8_ms / f32_ms:.2f}x); "
              f"files float32 {accuracy['float32']} | int8 {accuracy['int8']}")  # fmt: skip


if __name__ == "__main__":
    main()
