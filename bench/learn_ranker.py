"""Learn the file ranker from ranking features (``swebench_offline.py --features``), leave one
repository out: for each of the five repositories, a model trained on the other four ranks
the fifth's candidate files, and the held-out figures are the ones reported.

    python bench/learn_ranker.py FEATURES.jsonl [...] [--write-model PATH]

Prints, per held-out repository and pooled: acc@1/5/10 of the fused ranking (the features'
``fused_rr``: what search answers today) and of each model, on the same candidates. With
``--write-model`` the chosen model, trained on all five, is written as JSON (feature means
and scales, weights, bias: a linear score a numpy dot evaluates).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _rank_features import EXTRA
from patchstream.stores.vector import file_ranker
from patchstream.stores.vector.file_ranker import FEATURES, BoostedRanker, FileRanker, LinearRanker

Array = npt.NDArray[np.float64]


@dataclass
class Question:
    id: str
    repo: str
    paths: list[str]
    x: Array
    y: Array


def load(files: list[Path]) -> list[Question]:
    questions = []
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            paths = list(row["candidates"])
            if not paths:
                continue
            x = np.asarray([row["candidates"][p] for p in paths], np.float64)
            y = np.asarray([p in set(row["files"]) for p in paths], np.float64)
            questions.append(Question(row["id"], row["repo"], paths, x, y))
    return questions


def accuracy(questions: list[Question], score: Callable[[Array], Array]) -> dict[int, float]:
    hits = {1: 0, 5: 0, 10: 0}
    for q in questions:
        order = np.argsort(-score(q.x), kind="stable")
        for k in hits:
            hits[k] += bool(q.y[order[:k]].any())
    return {k: v / max(1, len(questions)) for k, v in hits.items()}


def fused(x: Array) -> Array:
    return x[:, FEATURES.index("fused_rr")]


COLUMNS = (*FEATURES, *EXTRA)
USED = len(FEATURES)  # the columns a shipped model reads; the extras are for analysis


def expand(x: Array) -> Array:
    return file_ranker.expand(x[:, :USED])


class Model:
    """A trained model as the service runs it (``file_ranker``), on dumped feature rows."""

    def __init__(self, shipped: FileRanker) -> None:
        self.shipped = shipped

    def __call__(self, x: Array) -> Array:
        return self.shipped.score(x[:, :USED])


def train_pointwise(questions: list[Question], c: float) -> Model:
    from sklearn.linear_model import LogisticRegression

    x = expand(np.vstack([q.x for q in questions]))
    y = np.concatenate([q.y for q in questions])
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    model = LogisticRegression(C=c, max_iter=2000, class_weight="balanced")
    model.fit((x - mean) / scale, y)
    return Model(LinearRanker(mean, scale, model.coef_[0], float(model.intercept_[0])))


def train_pairwise(questions: list[Question], c: float) -> Model:
    """Logistic regression on differences: each changed file against each other candidate
    of its question (RankNet's objective with a linear scorer), each question weighing the
    same."""
    from sklearn.linear_model import LogisticRegression

    x_all = expand(np.vstack([q.x for q in questions]))
    mean, scale = x_all.mean(axis=0), x_all.std(axis=0) + 1e-9
    diffs, weights = [], []
    for q in questions:
        x = (expand(q.x) - mean) / scale
        pos, neg = x[q.y > 0], x[q.y == 0]
        if len(pos) and len(neg):
            d = (pos[:, None, :] - neg[None, :, :]).reshape(-1, x.shape[1])
            diffs.append(d)
            weights.append(np.full(len(d), 1.0 / len(d)))
    d, w = np.vstack(diffs), np.concatenate(weights)
    model = LogisticRegression(C=c, max_iter=4000, fit_intercept=False)
    model.fit(np.vstack([d, -d]), np.concatenate([np.ones(len(d)), np.zeros(len(d))]),
              sample_weight=np.concatenate([w, w]) * len(questions))  # fmt: skip
    return Model(LinearRanker(mean, scale, model.coef_[0], 0.0))


def train_boosted(questions: list[Question], depth: float) -> Model:
    """Histogram gradient boosting, exported to the service's ``BoostedRanker``."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    x = expand(np.vstack([q.x for q in questions]))
    y = np.concatenate([q.y for q in questions])
    model = HistGradientBoostingClassifier(max_depth=int(depth), max_iter=200,
                                           learning_rate=0.05, l2_regularization=1.0,
                                           class_weight="balanced", random_state=0)  # fmt: skip
    model.fit(x, y)
    trees = [predictors[0].nodes for predictors in model._predictors]
    width = max(len(t) for t in trees)

    def padded(field: str, fill: float) -> Array:
        rows = [np.concatenate([t[field].astype(np.float64), np.full(width - len(t), fill)])
                for t in trees]  # fmt: skip
        return np.asarray(rows)

    shipped = BoostedRanker(
        float(np.ravel(model._baseline_prediction)[0]),
        padded("feature_idx", 0).astype(np.int64), padded("num_threshold", 0.0),
        padded("left", 0).astype(np.int64), padded("right", 0).astype(np.int64),
        padded("is_leaf", 1).astype(bool), padded("value", 0.0),
        int(max(t["depth"].max() for t in trees)) + 1,
    )  # fmt: skip
    check = x[: min(len(x), 500)]
    assert np.allclose(shipped.score(check[:, :USED]), model.decision_function(check)), (
        "the exported trees score differently from scikit-learn's"
    )
    return Model(shipped)


def train_either(questions: list[Question], setting: tuple[str, float]) -> Model:
    family, value = setting
    return TRAINERS[family][0](questions, value)  # type: ignore[operator]


TRAINERS: dict[str, tuple[Callable[..., Model], tuple[object, ...]]] = {
    "pointwise": (train_pointwise, (0.01, 0.1, 1.0)),
    "pairwise": (train_pairwise, (0.01, 0.1, 1.0)),
    "boosted": (train_boosted, (2, 3)),
}
# The family too is a setting, chosen by the inner folds like the rest: what ships.
TRAINERS["either"] = (train_either, (("pointwise", 0.01), ("pointwise", 0.1), ("pointwise", 1.0),
                                     ("boosted", 2), ("boosted", 3)))  # fmt: skip


def objective(acc: dict[int, float]) -> float:
    return acc[5] + acc[10]


def held_out(
    questions: list[Question], name: str, inner: bool = True
) -> dict[str, dict[int, float]]:
    """For each repository: the trainer's setting chosen by leave one repository out *within*
    the other four (nested), trained on the four, measured on the fifth."""
    trainer, settings = TRAINERS[name]
    repos = sorted({q.repo for q in questions})
    out = {}
    for held in repos:
        train = [q for q in questions if q.repo != held]
        test = [q for q in questions if q.repo == held]
        best = settings[0]
        if inner and len(settings) > 1:
            scores = {}
            for setting in settings:
                inner_hits = []
                for inner_held in sorted({q.repo for q in train}):
                    fit = trainer([q for q in train if q.repo != inner_held], setting)
                    part = [q for q in train if q.repo == inner_held]
                    inner_hits.append((len(part), accuracy(part, fit)))
                total = sum(n for n, _ in inner_hits)
                scores[setting] = sum(n * objective(a) for n, a in inner_hits) / total
            best = max(settings, key=lambda s: scores[s])
        model = trainer(train, best)
        acc = accuracy(test, model)
        out[held] = acc | {0: best}  # type: ignore[dict-item]
    return out


def report(questions: list[Question], names: list[str]) -> None:
    repos = sorted({q.repo for q in questions})
    count = {r: sum(q.repo == r for q in questions) for r in repos}
    recall = np.mean([q.y.any() for q in questions])
    print(f"{len(questions)} questions; a changed file among the candidates: {recall:.3f}")
    base = {r: accuracy([q for q in questions if q.repo == r], fused) for r in repos}
    results = {"fused (today)": base}
    for name in names:
        results[name] = held_out(questions, name)
    for name, by_repo in results.items():
        pooled = {k: sum(by_repo[r][k] * count[r] for r in repos) / len(questions)
                  for k in (1, 5, 10)}  # fmt: skip
        folds = {k: float(np.mean([by_repo[r][k] for r in repos])) for k in (1, 5, 10)}
        print(f"{name}:")
        for r in repos:
            chosen = f" (chose {by_repo[r][0]})" if 0 in by_repo[r] else ""
            figures = " / ".join(f"{by_repo[r][k]:.3f}" for k in (1, 5, 10))
            print(f"  {r:<28} {count[r]:>4} {figures}{chosen}")
        print("  pooled " + " / ".join(f"{pooled[k]:.3f}" for k in (1, 5, 10))
              + "; mean of folds " + " / ".join(f"{folds[k]:.3f}" for k in (1, 5, 10)))  # fmt: skip


def write_model(questions: list[Question], target: Path) -> None:
    """The family and setting chosen leave one repository out over all five, trained on all
    five, written as the service loads it."""
    trainer, settings = TRAINERS["either"]
    repos = sorted({q.repo for q in questions})
    scores = {}
    for setting in settings:
        hits = []
        for held in repos:
            fit = trainer([q for q in questions if q.repo != held], setting)
            part = [q for q in questions if q.repo == held]
            hits.append((len(part), accuracy(part, fit)))
        scores[setting] = sum(n * objective(a) for n, a in hits) / len(questions)
    best = max(settings, key=lambda s: scores[s])
    model = trainer(questions, best)
    assert isinstance(model.shipped, LinearRanker | BoostedRanker)
    data = {**model.shipped.to_json(), "embedder": "hashing",
            "trained": f"{best} on {len(questions)} SWE-bench Lite issues of "
                       + ", ".join(repos) + " (bench/learn_ranker.py)"}  # fmt: skip
    target.write_text(json.dumps(data) + "\n", encoding="utf-8")
    print(f"wrote {target}: {best}, chosen over {settings} ({len(questions)} questions)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("features", type=Path, nargs="+")
    parser.add_argument("--models", nargs="+", default=["pointwise", "boosted", "either"])
    parser.add_argument("--write-model", type=Path, default=None)
    args = parser.parse_args()
    questions = load(args.features)
    report(questions, args.models)
    if args.write_model is not None:
        write_model(questions, args.write_model)


if __name__ == "__main__":
    main()
