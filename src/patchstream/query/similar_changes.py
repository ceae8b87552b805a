"""Similar past changes: the commits whose messages read most like a question, and the files
they changed, as a file score (BugLocator's similar-report score: each similar commit gives
its similarity, shared among the files it changed).

Pure: the caller supplies the commits (sha, message, changed files) and which of them the
view can reach; nothing here reads a store. BM25 over the messages' code tokens
(``search_text.code_tokens``: identifiers split and stemmed, as the search copy reads code).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from patchstream.stores.vector.search_text import code_tokens

_K1, _B = 1.2, 0.75
MAX_FILES_PER_COMMIT = 20  # a commit touching more is a sweep (a rename, a reformat): no clue


@dataclass(frozen=True)
class PastChange:
    sha: str
    text: str  # the message (subject and body)
    files: tuple[str, ...]


class ChangeHistory:
    """A BM25 index of commit messages, with the files each commit changed."""

    def __init__(self, changes: Sequence[PastChange]) -> None:
        self.changes = list(changes)
        self.row = {change.sha: at for at, change in enumerate(self.changes)}
        counts = [Counter(code_tokens(change.text)) for change in self.changes]
        lengths = np.array([sum(c.values()) for c in counts], dtype=np.float32)
        average = float(lengths.mean()) if len(lengths) else 1.0
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for at, count in enumerate(counts):
            norm = _K1 * (1 - _B + _B * lengths[at] / max(average, 1.0))
            for term, tf in count.items():
                rows, weights = postings.setdefault(term, ([], []))
                rows.append(at)
                weights.append(tf * (_K1 + 1) / (tf + norm))
        size = max(1, len(self.changes))
        self.postings = {
            term: (np.array(rows, dtype=np.int32),
                   np.array(weights, dtype=np.float32)
                   * math.log(1 + (size - len(rows) + 0.5) / (len(rows) + 0.5)))
            for term, (rows, weights) in postings.items()
        }  # fmt: skip

    def mask(self, shas: Sequence[str] | set[str]) -> np.ndarray:
        """The rows of the commits named (the ones a view reaches)."""
        allowed = np.zeros(len(self.changes), dtype=bool)
        allowed[[self.row[sha] for sha in shas if sha in self.row]] = True
        return allowed

    def similar(
        self, question: str, allowed: np.ndarray | None = None, top: int = 50
    ) -> list[tuple[PastChange, float]]:
        """The ``top`` commits most like ``question`` among ``allowed``, best first."""
        scores = np.zeros(len(self.changes), dtype=np.float32)
        for term in set(code_tokens(question)):
            found = self.postings.get(term)
            if found is not None:
                np.add.at(scores, found[0], found[1])
        if allowed is not None:
            scores[~allowed] = 0.0
        best = np.argsort(-scores, kind="stable")[:top]
        return [(self.changes[i], float(scores[i])) for i in best if scores[i] > 0]

    def file_scores(
        self, question: str, allowed: np.ndarray | None = None, top: int = 50,
        present: set[str] | None = None,
    ) -> dict[str, float]:  # fmt: skip
        """Each file's share of the similar commits' similarity (files ``present`` only)."""
        scores: dict[str, float] = {}
        for change, similarity in self.similar(question, allowed, top):
            files = [f for f in change.files if present is None or f in present]
            if not files or len(change.files) > MAX_FILES_PER_COMMIT:
                continue
            for path in files:
                scores[path] = scores.get(path, 0.0) + similarity / len(files)
        return scores


def fuse(ranked: Sequence[str], history: dict[str, float], weight: float, k: int = 60) -> list[str]:
    """``ranked`` with the history's files fused in by reciprocal rank: a file's score is
    ``1 / (k + rank)`` in ``ranked`` plus ``weight / (k + rank)`` in the history's order."""
    if weight <= 0 or not history:
        return list(ranked)
    score: dict[str, float] = {path: 1.0 / (k + at) for at, path in enumerate(ranked, 1)}
    by_history = sorted(history, key=lambda p: (-history[p], p))
    for at, path in enumerate(by_history, 1):
        score[path] = score.get(path, 0.0) + weight / (k + at)
    return sorted(score, key=lambda p: (-score[p], p))
