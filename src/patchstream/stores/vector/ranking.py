"""The arithmetic of ``TenantIndex``'s ranking, pure and array-shaped: BM25's parts, top-k
selection, and the spread that puts each file's first rows before any file's later ones."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

K1, B = 1.5, 0.75
_CELLS = 1 << 21  # (token, file) term counts file BM25 holds at once: 16 MiB of float64


@dataclass(frozen=True)
class Matches:
    """Kept rows holding a query token: row, term count, the token's ordinal; and by ordinal,
    the token's weight (its count in the query)."""

    rows: npt.NDArray[np.int64]
    tfs: npt.NDArray[np.float32]
    token: npt.NDArray[np.int64]
    weights: npt.NDArray[np.float64]


def spread(
    ordered: list[tuple[int, float]], paths: npt.NDArray[np.int32], per_file: int
) -> list[tuple[int, float]]:
    """``ordered`` with each file's rows past its first ``per_file`` moved after the rest
    (each part keeps its order); the order of files' first rows is unchanged."""
    if per_file <= 0:
        return ordered
    seen: Counter[int] = Counter()
    first: list[tuple[int, float]] = []
    later: list[tuple[int, float]] = []
    for item in ordered:
        code = int(paths[item[0]])
        seen[code] += 1
        (first if seen[code] <= per_file else later).append(item)
    return first + later


def idf(df: npt.NDArray[np.int64], n: int) -> npt.NDArray[np.float64]:
    """BM25's IDF of terms in ``df`` of ``n`` documents."""
    return np.log((n - df + 0.5) / (df + 0.5) + 1.0)


def length_norms(lengths: npt.NDArray[np.float64], average: float) -> npt.NDArray[np.float64]:
    """BM25's length part of each document: computed once per document, then read by each of
    its term counts (an issue's million matched postings gathered a length each)."""
    return K1 * (1.0 - B + B * lengths / average)


def saturated(
    tfs: npt.NDArray[np.float64], norms: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """BM25's term-frequency part for term counts ``tfs`` in documents of ``norms``."""
    return tfs * (K1 + 1.0) / (tfs + norms)


def positive_top(scores: npt.NDArray[np.float32], k: int) -> list[int]:
    """The best ``k`` rows among those scoring above 0."""
    positive = int((scores > 0).sum())
    return top(scores, min(k, positive)) if positive else []


def ranks_of(values: npt.NDArray[Any], at: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int64]:
    """The rank from 1 of ``values[at]`` among the positive ``values``, best first, ties in
    index order (as a stable sort of every value would rank them); 0 where not positive.
    Sorting only the positive values: a view of 30k files (a history's pages) made a stable
    argsort of every file's score, five a search, a sixth of a search's time."""
    wanted = values[at]
    ranks = np.zeros(len(at), np.int64)
    positive = wanted > 0
    if not positive.any():
        return ranks
    ordered = np.sort(values[values > 0])
    mine = wanted[positive]
    above = len(ordered) - np.searchsorted(ordered, mine, side="right")
    ties = np.searchsorted(ordered, mine, side="right") - np.searchsorted(ordered, mine)
    found = above + 1
    where = at[positive]
    for i in np.flatnonzero(ties > 1).tolist():  # rare: equal scores, the lower index first
        found[i] += int(np.count_nonzero(values[: where[i]] == mine[i]))
    ranks[positive] = found
    return ranks


def top(scores: npt.NDArray[np.float32], k: int) -> list[int]:
    if k <= 0:
        return []
    if k < len(scores):
        candidates = np.argpartition(-scores, k - 1)[:k]
    else:
        candidates = np.arange(len(scores))
    ordered = candidates[np.argsort(-scores[candidates], kind="stable")]
    return [int(i) for i in ordered]


def row_bm25(
    found: Matches, keep: npt.NDArray[np.bool_], lengths: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """BM25 of every row for the matched tokens, with the statistics of the ``keep`` rows."""
    n = len(lengths)
    count = int(np.count_nonzero(keep))
    if count == 0 or not len(found.rows):
        return np.zeros(n, np.float32)
    total = float(lengths[keep].sum())
    average = total / count if total > 0 else 1.0
    df = np.bincount(found.token, minlength=len(found.weights))
    term = (found.weights * idf(df, count))[found.token]
    norms = length_norms(lengths.astype(np.float64), average)[found.rows]
    scored = term * saturated(found.tfs.astype(np.float64), norms)
    return np.bincount(found.rows, weights=scored, minlength=n).astype(np.float32)


def file_bm25(
    found: Matches, keep: npt.NDArray[np.bool_], paths: npt.NDArray[np.int32],
    lengths: npt.NDArray[np.float32], files: int,
) -> npt.NDArray[np.float32]:  # fmt: skip
    """BM25 of every file (by path code): a file is its kept rows taken together, term counts
    and lengths summed over them."""
    file_lengths = np.bincount(paths[keep], weights=lengths[keep],
                               minlength=files).astype(np.float64, copy=False)  # fmt: skip
    scores = np.zeros(files, np.float64)
    count = int(np.count_nonzero(file_lengths))
    if count == 0 or not len(found.rows):
        return scores.astype(np.float32)
    norms = length_norms(file_lengths, float(file_lengths.sum()) / count)
    of_row = paths[found.rows].astype(np.int64)
    # Term counts per (token, file) as a dense matrix, a slice of tokens at a time so it
    # stays a few MiB however many files the view has.
    step = max(1, _CELLS // files)
    for first in range(0, len(found.weights), step):
        tokens = min(step, len(found.weights) - first)
        if tokens == len(found.weights):  # one slice: every match, no mask to apply
            cells = found.token * files + of_row
            counts = found.tfs
        else:
            at = (found.token >= first) & (found.token < first + tokens)
            cells = (found.token[at] - first) * files + of_row[at]
            counts = found.tfs[at]
        held, tfs = _summed_by_cell(cells, counts, tokens * files)
        which, file = np.divmod(held, files)
        df = np.bincount(which, minlength=tokens)
        term = (found.weights[first : first + tokens] * idf(df, count))[which]
        scored = term * saturated(tfs, norms[file])
        scores += np.bincount(file, weights=scored, minlength=files)
    return scores.astype(np.float32)


def _summed_by_cell(
    cells: npt.NDArray[np.int64], counts: npt.NDArray[np.float32], size: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The distinct values of ``cells`` (each in ``[0, size)``), in no order, and the sum of
    ``counts`` over each, in O(len(cells)): every match points to the last match written to
    its cell. Summing into, then scanning, a table of every cell was most of file BM25 once
    a view held 30k files (a large history's pages)."""
    at = np.arange(len(cells), dtype=np.int32)
    owner = np.empty(size, np.int32)
    owner[cells] = at
    first = owner[cells]
    summed = np.bincount(first, weights=counts, minlength=len(cells)).astype(np.float64, copy=False)
    kept = np.flatnonzero(first == at)
    return cells[kept], summed[kept]
