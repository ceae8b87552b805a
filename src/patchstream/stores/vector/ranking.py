"""The arithmetic of ``TenantIndex``'s ranking, pure and array-shaped: BM25's parts, top-k
selection, and the spread that puts each file's first rows before any file's later ones."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

K1, B = 1.5, 0.75


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
