"""The learned file ranker (``stores.vector.file_ranker``, ``learned_order``): its features,
the model file it loads, and the order it gives a search."""

from __future__ import annotations

import json

import numpy as np
import pytest

from patchstream.stores.vector.file_ranker import (
    FEATURES,
    BoostedRanker,
    LinearRanker,
    load_ranker,
    mentioned_modules,
    module_mention,
    module_parts,
    shipped_ranker,
)
from patchstream.stores.vector.learned_order import candidate_files
from patchstream.stores.vector.search_index import IndexedRow, TenantIndex

WIDTH = len(FEATURES)


def _ranker(**weights: float) -> LinearRanker:
    """A model that adds the named features (unscaled) and nothing else."""
    vector = np.zeros(WIDTH)
    for name, weight in weights.items():
        vector[FEATURES.index(name)] = weight
    return LinearRanker(np.zeros(WIDTH), np.ones(WIDTH), vector, 0.0)


def _index(files: dict[str, list[str]]) -> TenantIndex:
    index = TenantIndex(dim=3)
    for path, texts in files.items():
        for i, text in enumerate(texts):
            index.add(IndexedRow(f"{path}#{i}", "t|r|main", "function", path, text,
                                 [1.0, float(len(path) % 3), 0.5]))  # fmt: skip
    return index


def test_module_parts_and_mentions() -> None:
    assert module_parts("django/db/models/sql/query.py") == ("django", "db", "models", "sql",
                                                              "query")  # fmt: skip
    assert module_parts("sympy/core/__init__.py") == ("sympy", "core")
    mentions = mentioned_modules("see django.db.models.sql.query.Query.chain and core/mul.py")
    assert module_mention(module_parts("django/db/models/sql/query.py"), mentions) == 2
    # a leading source root the question leaves out still matches
    assert module_mention(module_parts("src/django/db/models/sql/query.py"), mentions) == 2
    assert module_mention(module_parts("sympy/core/mul.py"), mentions) == 2
    assert module_mention(module_parts("other/sql/query.py"), mentions) == 1  # last two parts
    assert module_mention(module_parts("django/db/models/query.py"), mentions) == 0
    assert module_mention(("query",), mentions) == 0  # a one-part module is never "named"


def test_mentions_are_bounded_on_hostile_text() -> None:
    question = " ".join(f"a{i}.b{i}.c{i}" for i in range(10_000))
    found = mentioned_modules(question)
    assert 0 < len(found) <= 64 * 3 * 2  # 64 names, each its prefixes and tails
    assert mentioned_modules("x" * 200_000 + ".y") == {}  # a part over 100 characters


def test_a_model_file_round_trips_and_malformed_ones_are_refused() -> None:
    model = _ranker(file_share=1.0)
    again = LinearRanker.from_json(json.loads(json.dumps(model.to_json())))
    x = np.random.default_rng(1).random((4, len(FEATURES)))
    assert np.allclose(again.score(x), model.score(x))
    good = model.to_json()
    for bad in ({**good, "features": ["other"]}, {**good, "weights": [1.0]},
                {**good, "mean": [float("nan")] * WIDTH}, {**good, "bias": "1"},
                {**good, "scale": "x" * WIDTH}, {**good, "scale": [0.0] * WIDTH},
                {k: v for k, v in good.items() if k != "mean"}):  # fmt: skip
        with pytest.raises(ValueError):
            LinearRanker.from_json(bad)


def _boosted() -> BoostedRanker:
    """Two stumps: file_share above 0.5 adds 1; auxiliary above 0.5 takes 2 away."""
    split = [FEATURES.index("file_share"), FEATURES.index("auxiliary")]
    return BoostedRanker(
        0.25, np.asarray([[split[0], 0, 0], [split[1], 0, 0]]),
        np.asarray([[0.5, 0, 0], [0.5, 0, 0]]), np.asarray([[1, 0, 0], [1, 0, 0]]),
        np.asarray([[2, 0, 0], [2, 0, 0]]),
        np.asarray([[False, True, True], [False, True, True]]),
        np.asarray([[0.0, 0.0, 1.0], [0.0, 0.0, -2.0]]), 2,
    )  # fmt: skip


def test_boosted_trees_score_by_their_leaves_and_round_trip() -> None:
    model = _boosted()
    x = np.zeros((3, len(FEATURES)))
    x[1, FEATURES.index("file_share")] = 0.9
    x[2, FEATURES.index("file_share")], x[2, FEATURES.index("auxiliary")] = 0.9, 1.0
    assert np.allclose(model.score(x), [0.25, 1.25, -0.75])
    again = load_ranker(json.loads(json.dumps(model.to_json())))
    assert isinstance(again, BoostedRanker) and np.allclose(again.score(x), model.score(x))
    good = model.to_json()
    for bad in ({**good, "left": [[9, 0, 0], [1, 0, 0]]},  # a child past the nodes
                {**good, "feature": [[99, 0, 0], [0, 0, 0]]},  # a feature past the width
                {**good, "feature": []}, {**good, "depth": 0},
                {**good, "value": [[0.0, 0.0, float("inf")], [0.0, 0.0, 0.0]]},
                {**good, "features": list(FEATURES)[:-1]}):  # fmt: skip
        with pytest.raises(ValueError):
            load_ranker(bad)


def test_the_shipped_model_loads_for_its_embedder_only() -> None:
    shipped = shipped_ranker()
    assert shipped is not None
    assert shipped_ranker("minilm") is None  # trained on the hashing embedder's scores
    # what it learned in the large: a file the fusion ranks first beats one it ranks tenth
    first, tenth = np.zeros((1, len(FEATURES))), np.zeros((1, len(FEATURES)))
    first[0, FEATURES.index("fused_rr")], tenth[0, FEATURES.index("fused_rr")] = 1.0, 0.1
    assert shipped.score(first)[0] > shipped.score(tenth)[0]


def test_the_ranker_orders_files_and_a_file_named_by_module_path_leads() -> None:
    index = _index({
        "pkg/parsing/reader.py": ["def read_config(path): parse config file", "def other()"],
        "pkg/parsing/writer.py": ["def write_config(path): config config config"],
        "tests/test_reader.py": ["def test_read_config(): read config config"],
    })  # fmt: skip
    question = "read_config: parse config file fails (read from pkg.parsing.writer)"
    vector = [1.0, 0.0, 0.5]
    keep = index.mask()
    fused = [pk for pk, _ in index.search(question, vector, keep, 10)]
    signals = index.signals(question, vector, keep, 60)
    found = candidate_files(index, signals)
    paths = [index.paths.names[c] for c in found.codes.tolist()]
    assert set(paths) == {"pkg/parsing/reader.py", "pkg/parsing/writer.py",
                          "tests/test_reader.py"}  # fmt: skip
    mention = dict(zip(paths, found.features[:, FEATURES.index("module_mention")], strict=True))
    assert mention == {"pkg/parsing/reader.py": 0.0, "pkg/parsing/writer.py": 2.0,
                       "tests/test_reader.py": 0.0}  # fmt: skip
    aux = dict(zip(paths, found.features[:, FEATURES.index("auxiliary")], strict=True))
    assert aux["tests/test_reader.py"] == 1.0 and aux["pkg/parsing/reader.py"] == 0.0
    learned = index.search(question, vector, keep, 10, ranker=_ranker(module_mention=5.0))
    assert learned[0][0] == "pkg/parsing/writer.py#0"
    # the model decides: one that favours tests puts the test first, which the fusion
    # (auxiliary rows scaled down) never does
    favours_tests = index.search(question, vector, keep, 10, ranker=_ranker(auxiliary=5.0))
    assert favours_tests[0][0] == "tests/test_reader.py#0"
    assert not fused[0].startswith("tests/")
    # each file's first row before any file's second; scores never rise down the list
    files = [pk.split("#")[0] for pk, _ in learned]
    assert files[:3] == list(dict.fromkeys(files))[:3]
    scores = [score for _, score in learned]
    assert scores == sorted(scores, reverse=True) and 0.0 <= scores[-1] <= scores[0] <= 1.0
    assert {pk for pk, _ in learned} == {pk for pk in index.rows}  # every row, once


def test_the_ranker_reads_the_fusion_at_one_depth_whatever_the_limit() -> None:
    index = _index({f"m{i}/f{i}.py": [f"alpha beta gamma{i}"] for i in range(40)})
    ranker = shipped_ranker()
    keep = index.mask()
    three = index.search("alpha gamma7 beta", [1.0, 0.0, 0.0], keep, 3, ranker=ranker)
    thirty = index.search("alpha gamma7 beta", [1.0, 0.0, 0.0], keep, 30, ranker=ranker)
    assert [pk for pk, _ in three] == [pk for pk, _ in thirty][:3]
    assert three[0][0] == "m7/f7.py#0"
