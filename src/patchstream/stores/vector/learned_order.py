"""A search's rows ordered by the learned file ranker (``file_ranker``): the candidate files'
features gathered from the index's signals for the question, the files ordered by the model's
score, each file's rows by their fused score."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from patchstream.stores.vector.file_ranker import (
    Candidates,
    FileRanker,
    candidate_features,
    mentioned_modules,
    module_mention,
    title_of,
)
from patchstream.stores.vector.ranking import spread

if TYPE_CHECKING:
    from patchstream.stores.vector.search_index import TenantIndex


@dataclass(frozen=True)
class Signals:
    """What ``TenantIndex.search`` computed for one question, by row or by path code."""

    query: str
    keep: npt.NDArray[np.bool_]
    dense: npt.NDArray[np.float32]  # cosine by row (-inf where not kept)
    lexical: npt.NDArray[np.float32]  # BM25 by row
    fused: dict[int, float]  # row -> fused score (the fusion's candidates)
    file_scores: npt.NDArray[np.float32]  # file BM25 by path code
    names: npt.NDArray[np.float32]  # file-name score by path code
    named: dict[int, tuple[int, int]]  # path code -> (rank from 1, its best row)
    exempt: set[int | None]  # path codes the question names itself
    definer_weights: Mapping[str, float]  # path -> weight of the question's names it defines


def candidate_files(index: TenantIndex, signals: Signals) -> Candidates:
    """The learned ranker's candidate files of a question and their features."""
    n = index.size
    ids = index.paths.ids
    keep = signals.keep[:n]
    present = np.bincount(index.path[:n][keep], minlength=len(index.paths.names)) > 0
    modules = mentioned_modules(signals.query)
    mentions: dict[int, int] = {}
    for tail in {parts[-2:] for parts in modules}:
        for code in index.module_tails.get(tail, ()):
            level = module_mention(index.module_of[code], modules) if present[code] else 0
            if level:
                mentions[code] = level
    return candidate_features(
        paths=index.path[:n], lengths=index.length[:n], keep=keep,
        dense=signals.dense[:n], lexical=signals.lexical[:n], fused=signals.fused,
        file_scores=signals.file_scores, name_scores=signals.names,
        title_scores=index.file_scores(title_of(signals.query), keep),
        named={code: rank for code, (rank, _) in signals.named.items()},
        explicit={c for c in signals.exempt if c is not None and c in signals.named},
        definer_weights={ids[p]: w for p, w in signals.definer_weights.items()
                         if p in ids and present[ids[p]]},
        mentions=mentions, auxiliary=index.auxiliary,
    )  # fmt: skip


def learned_order(
    index: TenantIndex, ranker: FileRanker, signals: Signals, limit: int, rows_per_file: int
) -> list[tuple[str, float]]:
    """(pk, score) best first: files by the ranker's score, each file's fused rows in fused
    order (a file with none: its best BM25 row), then ``spread`` and cut to ``limit``. The
    score is the file's logistic probability, made non-increasing down the list."""
    found = candidate_files(index, signals)
    learned = ranker.score(found.features)
    probability = 1.0 / (1.0 + np.exp(-np.clip(learned, -50.0, 50.0)))
    by_file: dict[int, list[tuple[float, int]]] = {}
    for row, score in signals.fused.items():
        by_file.setdefault(int(index.path[row]), []).append((-score, row))
    codes = found.codes.tolist()
    order = sorted(range(len(codes)), key=lambda i: (-learned[i], codes[i]))
    ordered: list[tuple[int, float]] = []
    for i in order:
        rows = sorted(by_file.pop(codes[i], [])) or [(0.0, int(found.best_row[i]))]
        ordered += [(row, float(probability[i])) for _, row in rows if row >= 0]
    for rest in by_file.values():  # a fused row of a file with no kept rows: none expected
        ordered += [(row, 0.0) for _, row in sorted(rest)]
    winners = spread(ordered, index.path, rows_per_file)[:limit]
    out: list[tuple[str, float]] = []
    floor = 1.0
    for row, score in winners:
        floor = min(floor, score)
        out.append((index.pks[row], floor))
    return out
