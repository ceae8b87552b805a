"""The learned file ranking: each candidate file of a search scored by a linear model over the
signals the index already has, so files, not rows, are what a question's answer orders.

The fusion by reciprocal rank (``TenantIndex.search``) sums each list's ranks with weights
chosen by hand; it cannot say that a file BM25 match counts for less in a test, or that a
file the question names by its module path (``django.db.models.sql.query``) should lead. A
logistic model learns those trade-offs from questions with known answers. Its features are
computed here, by the code that serves it, and ``bench/swebench_offline.py --features`` dumps
the same ones for ``bench/learn_ranker.py``, which trains it leave one repository out on
SWE-bench Lite's django, sympy, matplotlib, scikit-learn and sphinx issues (never on the seven
repositories kept for an independent check) and writes ``file_ranker.json``.

Every rank here is among the candidate files, and every aggregate over the kept rows of a
candidate: the cost is that of the candidates, not of the index.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Protocol

import numpy as np
import numpy.typing as npt

from patchstream.stores.vector.ranking import ranks_of

FEATURES = (
    "fused_rr",  # 1 / the file's rank by its best fused row (0: no fused row)
    "named_rr",  # 1 / its rank among the files the question names (graph, frames, paths)
    "named_explicit",  # a traceback frame or a path names it
    "dense_rr",  # 1 / its rank among the candidates by best dense row
    "dense_best",  # that row's cosine
    "lexical_rr",  # 1 / its rank by best BM25 row (0: no match)
    "lexical_share",  # that row's BM25 over the best candidate's
    "file_rr",  # 1 / its rank by file BM25 among all files of the view (0: no match)
    "file_share",  # its file BM25 over the best file's
    "name_rr",  # 1 / its rank by the file-name score (0: no match)
    "name_share",  # its name score over the best's
    "auxiliary",  # a test, doc, example or vendored file
    "log_rows",  # log(1 + its kept rows)
    "log_length",  # log(1 + its tokens)
    "matched_share",  # share of its rows with a BM25 match
    "definer_weight",  # sum over the question's names it defines of 1 / the name's definers
    "module_mention",  # 2: the question writes its module path; 1: the path's last two parts
    "title_rr",  # 1 / its rank by file BM25 of the question's first line alone (0: no match)
    "title_share",  # that score over the best file's
)
DEPTH = 30  # the best files of each file-level list that join the candidates
# A dotted or slashed name of two or more parts: ``django.db.models``, ``sympy/core/mul.py``.
_MODULE_LIKE = re.compile(r"(?<!\w)[A-Za-z_]\w{0,100}+(?:[./][A-Za-z_]\w{0,100}+){1,12}+")
MAX_MENTIONS = 64  # module-like names read from one question


@dataclass
class NamedFiles:
    """The files a question points at, best first (``query.question.named_files``); the
    first ``explicit`` of them it names itself (a traceback frame, a path), the rest define
    names it uses."""

    files: list[str]
    explicit: int
    # path -> the sum over the question's names it defines of 1 / that name's definers
    weights: dict[str, float] = field(default_factory=dict)


def title_of(question: str) -> str:
    """A question's first non-empty line (an issue's title), at most 300 characters."""
    for line in question.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def module_parts(path: str) -> tuple[str, ...]:
    """``django/db/models/sql/query.py`` -> its module's parts (a package's ``__init__`` is
    the package; any extension goes)."""
    stem = path.rsplit(".", 1)[0] if "." in path.rpartition("/")[2] else path
    parts = tuple(p for p in stem.split("/") if p)
    return parts[:-1] if parts and parts[-1] == "__init__" else parts


def mentioned_modules(question: str) -> dict[tuple[str, ...], int]:
    """Module part tuples the question writes (dotted or slashed) -> 2; their last two parts
    -> 1 (a mention of ``sql.query`` points at ``.../sql/query.py``). Bounded."""
    found: dict[tuple[str, ...], int] = {}
    for match in _MODULE_LIKE.findall(question)[:MAX_MENTIONS]:
        parts = tuple(re.split(r"[./]", match))
        if parts[-1] in ("py", "pyi"):
            parts = parts[:-1]
        for end in range(len(parts), 1, -1):  # ``a.b.C.method``: also ``a.b.C``, ``a.b``
            whole = parts[:end]
            found[whole] = 2
            found.setdefault(whole[-2:], 1)
    return found


def module_mention(parts: tuple[str, ...], mentions: dict[tuple[str, ...], int]) -> int:
    if len(parts) < 2 or not mentions:
        return 0
    for start in range(len(parts) - 1):  # the question may drop a leading ``src`` or package
        if mentions.get(parts[start:]) == 2:
            return 2
    return 1 if parts[-2:] in mentions else 0


@dataclass(frozen=True)
class Candidates:
    """The candidate files of one question (path codes) and their features (rows in order)."""

    codes: npt.NDArray[np.int64]
    features: npt.NDArray[np.float64]
    best_row: npt.NDArray[np.int64]  # each file's representative row: best fused, else BM25


def _reciprocal_ranks(values: npt.NDArray[np.float64], present: npt.NDArray[np.bool_]) -> (
    npt.NDArray[np.float64]
):  # fmt: skip
    """1 / rank (best first, ties in order) where ``present``, else 0."""
    ranks = np.empty(len(values), np.float64)
    ranks[np.argsort(-values, kind="stable")] = np.arange(1, len(values) + 1)
    return np.where(present, 1.0 / ranks, 0.0)


def _reciprocal(ranks: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """1 / rank where ranked (from 1), else 0."""
    return np.where(ranks > 0, 1.0 / np.maximum(ranks, 1), 0.0)


def _shares(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    positive = np.maximum(values, 0.0)
    top = float(positive.max(initial=0.0))
    return positive / top if top > 0 else positive


def _best_by_file(
    rows: npt.NDArray[np.int64], slots: npt.NDArray[np.int64], scores: npt.NDArray[np.float64],
    count: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:  # fmt: skip
    """Per slot: the best score of its rows and that row, the first of a tie (-inf and -1
    where none). No sort: two lexsorts of the candidates' rows were a tenth of a search."""
    best = np.full(count, -np.inf)
    np.maximum.at(best, slots, scores)
    row = np.full(count, -1, np.int64)
    tied = np.flatnonzero(scores == best[slots])[::-1]  # written last: the first of a tie
    row[slots[tied]] = rows[tied]
    return best, row


def candidate_features(
    *,
    paths: npt.NDArray[np.int32],
    lengths: npt.NDArray[np.float32],
    keep: npt.NDArray[np.bool_],
    dense: npt.NDArray[np.float32],
    lexical: npt.NDArray[np.float32],
    fused: dict[int, float],
    file_scores: npt.NDArray[np.float32],
    name_scores: npt.NDArray[np.float32],
    title_scores: npt.NDArray[np.float32],
    named: dict[int, int],
    explicit: set[int],
    definer_weights: dict[int, float],
    mentions: dict[int, int],
    auxiliary: list[bool],
) -> Candidates:
    """The features of each candidate file. Row arrays (``paths`` .. ``lexical``) are by row
    over the index's used rows; ``file_scores``, ``name_scores`` by path code; ``fused`` maps
    rows to their fused score; ``named`` path codes to their rank from 1."""
    fused_best: dict[int, tuple[float, int]] = {}
    for row, score in fused.items():
        code = int(paths[row])
        held = fused_best.get(code)
        if held is None or score > held[0] or (score == held[0] and row < held[1]):
            fused_best[code] = (score, row)
    chosen = set(fused_best) | set(named) | set(mentions) | set(definer_weights)
    for scores in (file_scores, name_scores, title_scores):
        positive = int((scores > 0).sum())
        if positive:
            take = min(DEPTH, positive)
            chosen.update(np.argpartition(-scores, take - 1)[:take].tolist())
    codes = np.asarray(sorted(chosen), np.int64)
    slot_of = np.full(len(file_scores), -1, np.int64)
    slot_of[codes] = np.arange(len(codes))
    rows = np.flatnonzero(keep & (slot_of[paths] >= 0))
    slots = slot_of[paths[rows]]
    count = len(codes)
    row_count = np.bincount(slots, minlength=count).astype(np.float64)
    has_rows = row_count > 0
    codes, slot_of_kept = codes[has_rows], np.cumsum(has_rows) - 1
    rows_slots = slot_of_kept[slots]
    count = len(codes)
    row_count = row_count[has_rows]
    token_count = np.bincount(rows_slots, weights=lengths[rows].astype(np.float64),
                              minlength=count)  # fmt: skip
    row_lexical = lexical[rows].astype(np.float64)
    matched = np.bincount(rows_slots, weights=(row_lexical > 0).astype(np.float64),
                          minlength=count)  # fmt: skip
    best_dense, _ = _best_by_file(rows, rows_slots, dense[rows].astype(np.float64), count)
    best_lexical, lexical_row = _best_by_file(rows, rows_slots, row_lexical, count)
    fused_score = np.asarray([fused_best[c][0] if c in fused_best else -1.0
                              for c in codes.tolist()])  # fmt: skip
    file_rr = _reciprocal(ranks_of(file_scores, codes))
    name_rr = _reciprocal(ranks_of(name_scores, codes))
    title_rr = _reciprocal(ranks_of(title_scores, codes))
    code_list = codes.tolist()
    features = np.column_stack([
        _reciprocal_ranks(fused_score, fused_score >= 0),
        np.asarray([1.0 / named[c] if c in named else 0.0 for c in code_list]),
        np.asarray([float(c in explicit) for c in code_list]),
        _reciprocal_ranks(best_dense, np.ones(count, bool)),
        best_dense,
        _reciprocal_ranks(best_lexical, best_lexical > 0),
        _shares(best_lexical),
        file_rr,
        _shares(file_scores[codes].astype(np.float64)),
        name_rr,
        _shares(name_scores[codes].astype(np.float64)),
        np.asarray([float(auxiliary[c]) for c in code_list]),
        np.log1p(row_count),
        np.log1p(token_count),
        matched / np.maximum(row_count, 1.0),
        np.asarray([definer_weights.get(c, 0.0) for c in code_list]),
        np.asarray([float(mentions.get(c, 0)) for c in code_list]),
        title_rr,
        _shares(title_scores[codes].astype(np.float64)),
    ]) if count else np.zeros((0, len(FEATURES)))  # fmt: skip
    best_row = np.asarray([fused_best[c][1] if c in fused_best else int(lexical_row[i])
                           for i, c in enumerate(code_list)], np.int64)  # fmt: skip
    return Candidates(codes, features, best_row)


def expand(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """What a model reads of ``FEATURES``: all of them, as they are. (Products of the
    auxiliary flag with the match scores were tried: the same held-out accuracy, and they
    learned to rank a test or doc *lower* the better it matched, since none is ever the
    answer on the training issues; a doc that is the question's own sentence fell below
    commit messages.)"""
    return x


WIDTH = len(FEATURES)  # columns of ``expand``


class FileRanker(Protocol):
    def score(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """A score per row of ``x`` (``FEATURES``), higher first; a logit."""
        ...


def _floats(data: dict[str, object], key: str, shape: tuple[int, ...]) -> npt.NDArray[np.float64]:
    try:
        raw = np.asarray(data[key])
        if raw.dtype.kind not in "biuf":  # numbers only: "1" is not a weight
            raise TypeError(key)
        values = raw.astype(np.float64)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"the model's {key} is malformed") from exc
    if values.shape != shape or not np.all(np.isfinite(values)):
        raise ValueError(f"the model's {key} is malformed")
    return values


@dataclass(frozen=True)
class LinearRanker:
    """score = ((expand(x) - mean) / scale) . weights + bias: a logistic regression."""

    mean: npt.NDArray[np.float64]
    scale: npt.NDArray[np.float64]
    weights: npt.NDArray[np.float64]
    bias: float

    expand = staticmethod(expand)

    def score(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if not len(x):
            return np.zeros(0)
        return np.asarray(((expand(x) - self.mean) / self.scale) @ self.weights + self.bias)

    def to_json(self) -> dict[str, object]:
        return {"kind": "linear", "features": list(FEATURES), "mean": self.mean.tolist(),
                "scale": self.scale.tolist(), "weights": self.weights.tolist(),
                "bias": self.bias}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, object]) -> LinearRanker:
        _check_header(data, "linear")
        mean, scale, weights = (_floats(data, k, (WIDTH,)) for k in ("mean", "scale", "weights"))
        if np.any(scale <= 0):
            raise ValueError("the model's scale is malformed")
        return cls(mean, scale, weights, float(_floats(data, "bias", ())))


@dataclass(frozen=True)
class BoostedRanker:
    """Gradient-boosted trees (scikit-learn's histogram boosting, exported): the logit is
    ``baseline`` plus, for each tree, the value of the leaf ``expand(x)`` reaches, going left
    where a feature is at most the node's threshold. Nodes are padded to one width: arrays
    of shape (trees, nodes)."""

    baseline: float
    feature: npt.NDArray[np.int64]
    threshold: npt.NDArray[np.float64]
    left: npt.NDArray[np.int64]
    right: npt.NDArray[np.int64]
    leaf: npt.NDArray[np.bool_]
    value: npt.NDArray[np.float64]
    depth: int

    def score(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if not len(x):
            return np.zeros(0)
        z = expand(x)
        trees = np.arange(len(self.feature))[:, None]
        node = np.zeros((len(self.feature), len(z)), np.int64)
        samples = np.arange(len(z))[None, :]
        for _ in range(self.depth):
            feature = self.feature[trees, node]
            go_left = z[samples, feature] <= self.threshold[trees, node]
            step = np.where(go_left, self.left[trees, node], self.right[trees, node])
            node = np.where(self.leaf[trees, node], node, step)
        return np.asarray(self.baseline + self.value[trees, node].sum(axis=0))

    def to_json(self) -> dict[str, object]:
        return {"kind": "boosted", "features": list(FEATURES), "baseline": self.baseline,
                "depth": self.depth, "feature": self.feature.tolist(),
                "threshold": self.threshold.tolist(), "left": self.left.tolist(),
                "right": self.right.tolist(), "leaf": self.leaf.astype(int).tolist(),
                "value": self.value.tolist()}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, object]) -> BoostedRanker:
        _check_header(data, "boosted")
        raw = data.get("feature")
        trees = len(raw) if isinstance(raw, list) else 0
        nodes = len(raw[0]) if trees and isinstance(raw, list) and isinstance(raw[0], list) else 0
        if not (0 < trees <= 10_000 and 0 < nodes <= 1024):
            raise ValueError("the model's trees are malformed")
        shape = (trees, nodes)
        feature = _floats(data, "feature", shape).astype(np.int64)
        left = _floats(data, "left", shape).astype(np.int64)
        right = _floats(data, "right", shape).astype(np.int64)
        if feature.min() < 0 or feature.max() >= WIDTH or min(left.min(), right.min()) < 0 or (
            max(left.max(), right.max()) >= nodes
        ):  # fmt: skip
            raise ValueError("the model's trees are malformed")
        depth = int(_floats(data, "depth", ()))
        if not 0 < depth <= 64:
            raise ValueError("the model's depth is malformed")
        return cls(float(_floats(data, "baseline", ())), feature,
                   _floats(data, "threshold", shape), left, right,
                   _floats(data, "leaf", shape).astype(bool), _floats(data, "value", shape),
                   depth)  # fmt: skip


def _check_header(data: dict[str, object], kind: str) -> None:
    if data.get("kind") != kind:
        raise ValueError(f"not a {kind} model")
    if data.get("features") != list(FEATURES):
        raise ValueError("the model's features are not this version's")


def load_ranker(data: dict[str, object]) -> FileRanker:
    """A model from its JSON form (``kind``: linear or boosted); ValueError if malformed."""
    if data.get("kind") == "boosted":
        return BoostedRanker.from_json(data)
    return LinearRanker.from_json(data)


@lru_cache(maxsize=4)
def shipped_ranker(embedder: str = "hashing") -> FileRanker | None:
    """The model shipped with the package (``file_ranker.json``) when it was trained on the
    scores of ``embedder``'s vectors (its dense features mean something else under another
    embedder); None otherwise or when it is absent."""
    source = resources.files("patchstream.stores.vector").joinpath("file_ranker.json")
    if not source.is_file():
        return None
    data = json.loads(source.read_text(encoding="utf-8"))
    if data.get("embedder") != embedder:
        return None
    return load_ranker(data)
