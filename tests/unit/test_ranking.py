"""The ranking arithmetic against plain definitions: ranks as a stable sort of every value
gives them, file BM25 as per-file sums of term counts, each file's best row."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from patchstream.stores.vector import ranking
from patchstream.stores.vector.file_ranker import _best_by_file
from patchstream.stores.vector.ranking import K1, B, Matches, file_bm25, ranks_of


def _stable_ranks(values: np.ndarray) -> np.ndarray:
    ranks = np.empty(len(values), np.int64)
    ranks[np.argsort(-values, kind="stable")] = np.arange(1, len(values) + 1)
    return np.where(values > 0, ranks, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ranks_are_a_stable_sorts_ties_in_index_order(dtype: type) -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        # few distinct values: many ties, zeros and negatives among them
        values = rng.integers(-3, 6, size=int(rng.integers(1, 300))).astype(dtype) / 2
        at = rng.choice(len(values), size=min(len(values), 40), replace=False)
        assert ranks_of(values, at).tolist() == _stable_ranks(values)[at].tolist()
    assert ranks_of(np.zeros(4, np.float32), np.arange(4)).tolist() == [0, 0, 0, 0]


def _plain_file_bm25(found: Matches, keep: np.ndarray, paths: np.ndarray,
                     lengths: np.ndarray, files: int) -> np.ndarray:  # fmt: skip
    file_length = defaultdict(float)
    for row in np.flatnonzero(keep):
        file_length[int(paths[row])] += float(lengths[row])
    held = {f: n for f, n in file_length.items() if n > 0}
    average = sum(held.values()) / len(held)
    tf: defaultdict[tuple[int, int], float] = defaultdict(float)
    for row, count, token in zip(found.rows, found.tfs, found.token, strict=True):
        tf[(int(token), int(paths[row]))] += float(count)
    df = defaultdict(int)
    for token, _ in tf:
        df[token] += 1
    scores = np.zeros(files)
    for (token, file), count in tf.items():
        idf = math.log((len(held) - df[token] + 0.5) / (df[token] + 0.5) + 1.0)
        norm = K1 * (1 - B + B * held[file] / average)
        scores[file] += found.weights[token] * idf * count * (K1 + 1) / (count + norm)
    return scores.astype(np.float32)


@pytest.mark.parametrize("cells", [1 << 21, 64])  # one slice of tokens; many slices
def test_file_bm25_sums_each_files_term_counts(monkeypatch: pytest.MonkeyPatch,
                                               cells: int) -> None:  # fmt: skip
    monkeypatch.setattr(ranking, "_CELLS", cells)
    rng = np.random.default_rng(8)
    rows_n, files, tokens = 400, 37, 9
    paths = rng.integers(0, files, rows_n).astype(np.int32)
    lengths = rng.integers(1, 50, rows_n).astype(np.float32)
    keep = rng.random(rows_n) < 0.8
    pairs = {
        (int(r), int(t))
        for r, t in zip(rng.integers(0, rows_n, 900), rng.integers(0, tokens, 900), strict=True)
    }
    pairs = {(r, t) for r, t in pairs if keep[r]}
    rows = np.array([r for r, _ in sorted(pairs)], np.int64)
    token = np.array([t for _, t in sorted(pairs)], np.int64)
    found = Matches(rows, rng.integers(1, 4, len(rows)).astype(np.float32), token,
                    rng.integers(1, 3, tokens).astype(np.float64))  # fmt: skip
    got = file_bm25(found, keep, paths, lengths, files)
    assert np.allclose(got, _plain_file_bm25(found, keep, paths, lengths, files), rtol=1e-5)
    assert (got > 0).sum() > files // 2  # the case is not empty


def test_each_files_best_row_is_the_first_of_a_tie() -> None:
    rng = np.random.default_rng(3)
    rows = np.sort(rng.choice(1000, size=200, replace=False)).astype(np.int64)
    slots = rng.integers(0, 30, 200).astype(np.int64)
    scores = rng.integers(0, 4, 200).astype(np.float64)  # ties
    best, row = _best_by_file(rows, slots, scores, 32)
    for slot in range(32):
        mine = [(s, r) for s, r, at in zip(scores, rows, slots, strict=True) if at == slot]
        if not mine:
            assert best[slot] == -np.inf and row[slot] == -1
            continue
        top = max(s for s, _ in mine)
        assert best[slot] == top and row[slot] == min(r for s, r in mine if s == top)
