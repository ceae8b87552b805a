"""The arithmetic of ``TenantIndex``'s ranking, pure and array-shaped: BM25's parts, top-k
selection, and the spread that puts each file's first rows before any file's later ones."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

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
        summed = np.bincount(cells, weights=counts, minlength=tokens * files).astype(
            np.float64, copy=False
        )
        held = np.flatnonzero(summed)
        tfs: npt.NDArray[np.float64] = summed[held]
        which, file = np.divmod(held, files)
        df = np.bincount(which, minlength=tokens)
        term = (found.weights[first : first + tokens] * idf(df, count))[which]
        scored = term * saturated(tfs, norms[file])
        scores += np.bincount(file, weights=scored, minlength=files)
    return scores.astype(np.float32)
