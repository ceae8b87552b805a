"""The in-memory hybrid index the query service searches (``stores.vector.search_index``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from patchstream.stores.vector import ranking, search_index
from patchstream.stores.vector.dense_codes import cosine_scores, quantize
from patchstream.stores.vector.ranking import top
from patchstream.stores.vector.search_index import RRF_K, IndexedRow, TenantIndex
from patchstream.stores.vector.search_text import code_tokens, tokens


def _row(pk: str, text: str, dense: list[float], scope: str = "t|r|main", kind: str = "function",
         path: str = "a.py") -> IndexedRow:  # fmt: skip
    return IndexedRow(pk, scope, kind, path, text, dense)


def _index(*rows: IndexedRow) -> TenantIndex:
    index = TenantIndex(dim=3, capacity=2)  # small: the arrays grow on the way
    for row in rows:
        index.add(row)
    return index


def test_tokens_follow_the_standard_analyzer() -> None:
    assert tokens("def parse_Config(path): return Path(path)") == [
        "def", "parse_config", "path", "return", "path", "path"
    ]  # fmt: skip


def test_code_tokens_split_identifiers_and_strip_common_endings() -> None:
    assert code_tokens("def update_settings(self): return CaseInsensitiveDict()") == [
        "def", "update_sett", "updat", "sett", "self", "return",
        "caseinsensitivedict", "case", "insensitiv", "dict",
    ]  # fmt: skip
    assert code_tokens("HTTPServer parsed") == ["httpserver", "http", "server", "pars"]
    # Forms of one word meet: the question's wording finds the code's.
    assert len(set(code_tokens("settings setting"))) == 1
    assert len(set(code_tokens("parse parsed parses parsing"))) == 1
    assert code_tokens("is has bus") == ["is", "has", "bus"]  # short words keep their ending


def test_bm25_scores_are_the_formula_over_the_live_rows() -> None:
    # Each row's path (a.py: "a", "py") counts as its text: lengths 5, 3 and 6.
    index = _index(_row("a", "alpha beta beta", [1, 0, 0]), _row("b", "gamma", [0, 1, 0]),
                   _row("c", "beta gamma delta epsilon", [0, 0, 1]))  # fmt: skip
    keep = index.mask()
    assert index.bm25_top("beta", keep, 10) == [index.rows["a"], index.rows["c"]]
    # By hand: N = 3, df = 2, average length 14/3; a holds beta twice in 5 tokens.
    idf = math.log((3 - 2 + 0.5) / (2 + 0.5) + 1.0)
    expected_a = idf * 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 5 / (14 / 3)))
    expected_c = idf * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 6 / (14 / 3)))
    scores = index.bm25_scores("beta")
    assert math.isclose(scores[index.rows["a"]], expected_a, rel_tol=1e-5)
    assert math.isclose(scores[index.rows["c"]], expected_c, rel_tol=1e-5)
    assert scores[index.rows["b"]] == 0.0
    assert index.bm25_top("nothing here", keep, 10) == []
    # A removed row leaves the statistics: beta is now in one row of two.
    index.remove("c")
    idf = math.log((2 - 1 + 0.5) / (1 + 0.5) + 1.0)
    again = idf * 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 5 / 4))
    assert math.isclose(index.bm25_scores("beta")[index.rows["a"]], again, rel_tol=1e-5)


def test_file_scores_are_bm25_over_each_files_rows_taken_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = [("p1", "parse the config file", "src/config.py"),
            ("p2", "load config values", "src/config.py"),
            ("p3", "render a template", "src/render.py"),
            ("p4", "config for render", "src/render.py"),
            ("p5", "nothing relevant", "docs/readme.md")]  # fmt: skip
    index = _index(*(_row(pk, text, [1, 0, 0], path=path) for pk, text, path in rows))
    # The reference: one row per file holding its rows' text and paths (path tokens per row).
    reference = TenantIndex(dim=3)
    for path in ("src/config.py", "src/render.py", "docs/readme.md"):
        text = " ".join(f"{t} {p}" for _, t, p in rows if p == path)
        reference.add(IndexedRow(path, "s", "file", "", text, [1, 0, 0]))
    # Term counts are summed a slice of tokens at a time: here also one and two tokens a
    # slice (three files), so the later slices' offsets are exercised.
    for cells in (ranking._CELLS, 1, 6):
        monkeypatch.setattr(ranking, "_CELLS", cells)
        for query in (
            "config",
            "render config",
            "template src config src",
            "absent",
            "parse load render template config values",
        ):
            got = index.file_scores(query, index.mask())
            want = reference.bm25_scores(query)
            for path in ("src/config.py", "src/render.py", "docs/readme.md"):
                assert math.isclose(got[index.paths.ids[path]], want[reference.rows[path]],
                                    rel_tol=1e-5, abs_tol=1e-7)  # fmt: skip
    # Only kept rows count: without p1 and p2, config.py scores nothing.
    keep = index.mask()
    keep[[index.rows["p1"], index.rows["p2"]]] = False
    assert index.file_scores("config", keep)[index.paths.ids["src/config.py"]] == 0.0


def test_a_chunk_of_a_file_that_matches_as_a_whole_ranks_higher() -> None:
    index = _index(
        _row("lone", "retry the request", [1, 0, 0], path="src/misc.py"),
        _row("fits", "retry the request", [1, 0, 0], path="src/retry.py"),
        _row("more", "backoff between attempts", [0, 1, 0], path="src/retry.py"),
    )
    plain = index.search("retry backoff", [1, 0, 0], index.mask(), 2, file_weight=0,
                         name_weight=0)  # fmt: skip
    assert math.isclose(plain[0][1], plain[1][1])  # the same text: a tie without file lists
    ranked = dict(index.search("retry backoff", [1, 0, 0], index.mask(), 3))
    assert ranked["fits"] > ranked["lone"]  # retry.py also holds the backoff


def test_a_file_named_by_a_rare_word_of_the_question_ranks_higher() -> None:
    """ "Remove deprecated signals": many files talk about signals, one is ``signals.py``;
    ``__init__`` is named by its package, and a word every file name holds counts for
    nothing."""
    index = _index(
        _row("engine", "send the signals when the engine stops signals", [1, 0, 0],
             path="pkg/core/engine.py"),
        _row("named", "spider_opened = object()", [0, 1, 0], path="pkg/signals.py"),
        _row("package", "from pkg.http.request import Request", [0, 0, 1],
             path="pkg/http/__init__.py"),
    )  # fmt: skip
    query = "Remove deprecated signals"
    without = index.search(query, [1, 0, 0], index.mask(), 3, name_weight=0)
    assert without[0][0] == "engine"
    names = index.name_scores(query, index.mask())
    assert names[index.paths.ids["pkg/signals.py"]] > 0
    assert names[index.paths.ids["pkg/core/engine.py"]] == 0
    assert (
        index.name_scores("http request", index.mask())[index.paths.ids["pkg/http/__init__.py"]] > 0
    )
    ranked = dict(index.search(query, [1, 0, 0], index.mask(), 3, name_weight=3))
    assert ranked["named"] > ranked["engine"]
    only_signals = index.mask(path_prefix="pkg/signals")  # the only file: its name is common
    assert index.name_scores(query, only_signals).max() < 0.01


def test_dense_ranks_by_cosine_and_normalizes_what_it_stores() -> None:
    index = _index(_row("x", "", [10, 0, 0]), _row("y", "", [1, 1, 0]), _row("z", "", [0, 0, 3]))
    assert [index.pks[i] for i in index.dense_top([1, 0, 0], index.mask(), 2)] == ["x", "y"]
    decoded = index.by_dim[:, : index.size].astype(np.float32) * index.scale[: index.size]
    assert np.allclose(np.linalg.norm(decoded, axis=0), 1.0, atol=0.01)
    assert index.by_dim.dtype == np.int8  # a quarter of Milvus's float32 bytes


def test_int8_codes_keep_cosines_within_half_a_step_and_the_top_ten() -> None:
    """Each component is off by at most half its row's step, so a cosine with a unit query
    is off by at most ``step / 2 * |q|_1``; on 384-dimensional unit vectors the top ten by
    codes are the float32 top ten but for near ties (measured on code: bench/dense_codes.py)."""
    rng = np.random.default_rng(11)
    dim, n = 384, 4000
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    codes = np.empty((dim, n), np.int8)
    scales = np.empty(n, np.float32)
    for i in range(n):
        codes[:, i], scales[i] = quantize(unit[i])
    assert np.abs(codes.astype(np.float32) * scales - unit.T).max() <= scales.max() / 2 + 1e-7
    recalls = []
    for _ in range(20):
        query = rng.normal(size=dim).astype(np.float32)
        query /= np.linalg.norm(query)
        exact = unit @ query
        coded = cosine_scores(query, codes, scales)
        assert np.abs(coded - exact).max() <= scales.max() / 2 * np.abs(query).sum()
        recalls.append(len(set(top(exact, 10)) & set(top(coded, 10))) / 10)
    assert np.mean(recalls) >= 0.95
    assert quantize(np.zeros(4, np.float32))[1] == 0.0


def test_sparse_and_dense_queries_rank_like_brute_force_through_growth_and_compaction() -> None:
    """A query with few non-zero dimensions reads only those; the answer is the same as the
    cosine over whole vectors, also after the matrix grew and after a compaction moved rows."""
    rng = np.random.default_rng(7)
    dim, n = 32, 5000
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    vectors[::3, 8:] = 0  # some rows sparse too
    index = TenantIndex(dim, capacity=16)  # grows many times
    for i, vector in enumerate(vectors):
        index.add(_row(f"r{i}", "", vector.tolist()))
    for i in range(0, n, 5):  # 1000 dead rows, then enough more to force a compaction
        index.remove(f"r{i}")
    alive = [i for i in range(n) if i % 5]
    for i in alive[:3200]:
        index.remove(f"r{i}")
    assert index.size < n - 4000  # compacted: the surviving rows moved
    alive = alive[3200:]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    # What the index holds of each row: its int8 codes times its scale.
    held = [codes.astype(np.float32) * scale for codes, scale in map(quantize, unit)]
    for nonzero in (1, 3, dim):  # sparse queries, then a dense one
        query = np.zeros(dim, np.float32)
        query[rng.choice(dim, nonzero, replace=False)] = rng.normal(size=nonzero)
        expected = sorted(alive, key=lambda i: -float(held[i] @ query))[:10]
        found = [index.pks[i] for i in index.dense_top(query.tolist(), index.mask(), 10)]
        assert found == [f"r{i}" for i in expected]


def test_fusion_is_reciprocal_rank_with_the_milvus_constant() -> None:
    index = _index(_row("x", "parse config", [1, 0, 0]), _row("y", "unrelated words", [0, 1, 0]))
    fused = index.search("parse", [0, 1, 0], index.mask(), limit=2, file_weight=0)
    # x: first by BM25, second by dense; y: first by dense only.
    assert dict(fused) == {"x": 1 / (RRF_K + 1) + 1 / (RRF_K + 2), "y": 1 / (RRF_K + 1)}
    assert [pk for pk, _ in fused] == ["x", "y"]


def test_filters_scope_kind_path_and_a_views_shadows() -> None:
    index = _index(
        _row("base-a", "needle", [1, 0, 0], scope="t|r|main", path="src/a.py"),
        _row("base-b", "needle", [1, 0, 0], scope="t|r|main", path="src/b.py", kind="class"),
        _row("ws-a", "needle", [1, 0, 0], scope="t|r|main~w", path="src/a.py"),
        _row("doc", "needle", [1, 0, 0], scope="t|r|main", path="docs/x.md", kind="section"),
    )

    def found(**how: object) -> set[str]:
        keep = index.mask(**how)  # type: ignore[arg-type]
        return {pk for pk, _ in index.search("needle", [1, 0, 0], keep, 10)}

    assert found() == {"base-a", "base-b", "ws-a", "doc"}
    assert found(scopes=["t|r|main"]) == {"base-a", "base-b", "doc"}
    assert found(scopes=["t|r|other"]) == set()
    assert found(kind="class") == {"base-b"}
    assert found(path_prefix="src/") == {"base-a", "base-b", "ws-a"}
    # The workspace holds src/a.py: the base's copy is hidden in the view.
    view = found(scopes=["t|r|main~w", "t|r|main"], hidden=[("t|r|main", ["src/a.py"])])
    assert view == {"ws-a", "base-b", "doc"}


def test_replace_remove_and_compaction_keep_answers_exact() -> None:
    index = TenantIndex(dim=3)
    for i in range(9000):
        # Fifty letter-only words (wordaa .. wordbx): none splits into parts.
        word = "word" + chr(97 + i % 50 // 26) + chr(97 + i % 50 % 26)
        index.add(_row(f"r{i}", f"{word} common", [1.0, float(i % 7), 0.5]))
    index.add(_row("r7", "replaced needle", [0, 0, 1]))  # same key: the old row is gone
    assert index.live == 9000
    assert [pk for pk, _ in index.search("needle", [0, 0, 1], index.mask(), 1)] == ["r7"]
    for i in range(9000):
        if i % 3:
            index.remove(f"r{i}")
    assert index.live == 3000 and index.size < 9001  # compacted: the dead outnumbered the live
    assert all(pk in index.rows for pk in ("r0", "r8997")) and "r7" not in index.rows
    hits = index.search("wordad", [1, 3, 0.5], index.mask(), 100)
    assert len(hits) == 100 and all(int(pk[1:]) % 3 == 0 for pk, _ in hits)  # survivors only
    lexical = [index.pks[i] for i in index.bm25_top("wordad", index.mask(), 1000)]
    assert len(lexical) == 60 and all(int(pk[1:]) % 150 == 3 for pk in lexical)
    assert index.bm25_top("needle", index.mask(), 10) == []


def test_reserve_grows_once_to_the_size_a_load_needs_and_search_is_unchanged() -> None:
    rows = [IndexedRow(f"p{i}", "s", "function", f"m{i % 7}.py", f"def f{i}(): return {i}",
                       [float(i % 3), 1.0, float(i % 5)]) for i in range(300)]  # fmt: skip
    grown = TenantIndex(dim=3, capacity=4)
    for row in rows:
        grown.add(row)
    reserved = TenantIndex(dim=3, capacity=4)
    reserved.reserve(len(rows))
    assert len(reserved.alive) == 300 and reserved.by_dim.shape == (3, 300)
    for row in rows:
        reserved.add(row)
    assert len(reserved.alive) == 300  # no growth past what was reserved
    assert len(grown.alive) <= 300 * 5 // 4 + 16  # growth by a quarter (doubling: 512)
    query, vector = "def f42 return", [0.0, 1.0, 2.0]
    assert reserved.search(query, vector, reserved.mask(), 10) == grown.search(
        query, vector, grown.mask(), 10
    )
    reserved.reserve(0)
    assert len(reserved.alive) == 300


def test_small_reserves_grow_by_a_step_not_by_what_they_ask() -> None:
    index = TenantIndex(dim=3, capacity=4)
    index.reserve(1000)
    for i in range(1000):
        index.add(IndexedRow(f"p{i}", "s", "function", "m.py", "x", [1.0, 0.0, 0.0]))
    index.reserve(3)  # a sync of three rows on a full index: one step of a quarter
    assert len(index.alive) == 1250


def test_a_view_ranks_the_same_whatever_else_the_tenant_holds() -> None:
    """Issue #33: BM25's statistics were the tenant's, so the same question over the same
    repository ranked a file 6th, 10th or 5th with other repositories indexed beside it."""
    mine = [
        _row("m1", "parse the config file and retry", [1, 0, 0], path="app/config.py"),
        _row("m2", "retry with backoff on timeout", [0, 1, 0], path="app/retry.py"),
        _row("m3", "config loader defaults", [0, 0, 1], path="app/loader.py"),
    ]
    alone = _index(*mine)
    crowded = _index(*mine)
    for i in range(300):  # another repository where "retry" is everywhere and "config" rare
        crowded.add(_row(f"o{i}", "retry retry timeout", [1, 1, 0], scope="t|other|main",
                         path=f"other/m{i}.py"))  # fmt: skip
    crowded.add(_row("h", "parse config", [1, 0, 0], scope="t|r|feature", path="app/config.py"))
    question = "retry when the config file cannot be parsed"
    for index in (alone, crowded):
        keep = index.mask(["t|r|main"])
        ranked = index.search(question, [1.0, 0.5, 0.0], keep, 3)
        scores = index.bm25_scores(question, keep)
        assert [pk for pk, _ in ranked] == [pk for pk, _ in alone.search(
            question, [1.0, 0.5, 0.0], alone.mask(["t|r|main"]), 3)]  # fmt: skip
        assert [round(float(scores[index.rows[r.pk]]), 5) for r in mine] == [
            round(float(alone.bm25_scores(question, alone.mask())[alone.rows[r.pk]]), 5)
            for r in mine
        ]


def test_a_file_the_question_names_joins_the_results() -> None:
    """The graph's list (files defining what the question names) lifts a named file."""
    rows = [_row(f"s{i}", f"square area {i}", [1, 0, 0.1 * i], path=f"shapes/s{i}.py")
            for i in range(12)]  # fmt: skip
    rows.append(_row("c", "def compute(x): return x", [0, 0, 1], path="geometry/engine.py"))
    index = _index(*rows)
    keep = index.mask()
    named = index.search("area of a square", [1, 0, 0], keep, 20,
                         named_files=["geometry/engine.py", "nowhere.py",
                                      "shapes/s9.py"])  # fmt: skip
    before = [pk for pk, _ in index.search("area of a square", [1, 0, 0], keep, 20)]
    assert [pk for pk, _ in named].index("s9") < before.index("s9")


def test_tests_and_docs_are_demoted_unless_the_question_names_them() -> None:
    """Issue #33: a test restates every name of the code it tests, so it matches a question
    as well as the code does; scaled by ``auxiliary_weight`` the code comes first."""
    from patchstream.parsing.file_roles import is_auxiliary

    text = "def retry_with_backoff(attempts): return schedule(attempts)"
    restated = (
        "def test_retry_with_backoff(): attempts = 3; assert retry_with_backoff(attempts)"
        " == retry_with_backoff(attempts)  # retry backoff"
    )
    index = _index(_row("test", restated, [1, 0, 0], path="tests/test_retry.py"),
                   _row("code", text, [1, 0, 0], path="pkg/retry.py"),
                   _row("doc", text, [1, 0, 0], path="docs/retry.rst"))  # fmt: skip
    keep = index.mask()
    query = "retry with backoff attempts"
    vector = [1.0, 0.0, 0.0]
    plain = [pk for pk, _ in index.search(query, vector, keep, 3, auxiliary_weight=1.0)]
    demoted = [pk for pk, _ in index.search(query, vector, keep, 3, auxiliary_weight=0.5)]
    assert plain[0] != "code" and demoted[0] == "code"
    # A test the question names (a traceback, a path) is not demoted.
    named = [pk for pk, _ in index.search(query, vector, keep, 3, auxiliary_weight=0.5,
                                          named_files=["tests/test_retry.py"])]  # fmt: skip
    assert named[0] == "test"
    # A test that merely defines a name the question uses (the graph's definers, after the
    # explicit files) is demoted like any other: on django, tests defining the models an
    # issue names outranked the fixed file.
    defines = [pk for pk, _ in index.search(query, vector, keep, 3, auxiliary_weight=0.5,
                                            named_files=["tests/test_retry.py"],
                                            named_explicit=0)]  # fmt: skip
    assert defines[0] == "code"
    assert is_auxiliary("tests/test_retry.py") and is_auxiliary("docs/retry.rst")
    assert is_auxiliary("sympy/core/tests/test_basic.py") and is_auxiliary("conftest.py")
    assert not is_auxiliary("pkg/retry.py") and not is_auxiliary("src/attestation/latest.py")
    # Text no grammar parses (sphinx's .po catalogs and CHANGES filled its top 10 once they
    # were indexed as plain text) and vendored code are auxiliary too; C++ is code.
    assert is_auxiliary("sphinx/locale/de/LC_MESSAGES/sphinx.po") and is_auxiliary("CHANGES")
    assert is_auxiliary("sphinx/themes/basic/static/jquery-3.5.1.js")
    assert is_auxiliary("web/app.min.js") and is_auxiliary("third_party/zlib/inflate.c")
    assert not is_auxiliary("db/db_impl.cc") and not is_auxiliary("web/app.js")


def test_one_long_file_does_not_fill_the_answer_alone() -> None:
    # Ten chunks of one file match better than anything else; two other files match too.
    rows = [_row(f"big{i}", "parse config parse config", [1, 0, 0], path="big.py")
            for i in range(10)]  # fmt: skip
    rows += [_row("small", "parse config", [1, 0, 0], path="small.py"),
             _row("other", "parse", [0, 1, 0], path="other.py")]  # fmt: skip
    index = _index(*rows)
    keep = index.mask()
    spread = [pk for pk, _ in index.search("parse config", [1, 0, 0], keep, 6, rows_per_file=3)]
    # Three rows of big.py, then the other files, then big.py's next rows.
    assert [pk[:3] for pk in spread] == ["big", "big", "big", "sma", "oth", "big"]
    # Without the cap, the first six are all big.py's: the other files are gone.
    flat = [pk for pk, _ in index.search("parse config", [1, 0, 0], keep, 6, rows_per_file=0)]
    assert {pk[:3] for pk in flat} == {"big"}
    # The files' order of first appearance is the same either way.
    assert spread[:3] == flat[:3]


def test_words_in_most_rows_of_a_large_index_are_left_out_of_lexical_scores() -> None:
    """An issue's common words ("return", "self") were most of the postings a search read;
    past MAX_DF_SHARE of the rows (and MIN_PRUNED_DF rows) a word does not count lexically.
    A small index leaves nothing out."""
    rows = search_index.MIN_PRUNED_DF * 2
    index = _index(*[_row(f"r{i}", f"return value{i}" + (" ledger" if i % 500 == 0 else ""),
                          [1.0, 0.0, 0.0], path=f"m{i}.py") for i in range(rows)])  # fmt: skip
    keep = index.mask()
    pruned = index._matches("return ledger", keep, max_df_share=0.1)
    assert pruned.weights.tolist() == [1.0] and len(pruned.rows) == rows // 500  # ledger only
    whole = index._matches("return ledger", keep, max_df_share=1.0)
    assert len(whole.rows) == rows + rows // 500
    # Search ranks the ledger rows first either way: the common word never told them apart.
    found = index.search("return ledger", [0.0, 1.0, 0.0], keep, 4)
    assert {pk for pk, _ in found} == {f"r{i}" for i in range(0, rows, 500)}
    small = _index(*[_row(f"s{i}", "return x", [1.0, 0.0, 0.0]) for i in range(50)])
    assert len(small._matches("return", small.mask(), max_df_share=0.1).rows) == 50


def test_paths_are_kept_by_file_name_once_each_for_a_questions_paths() -> None:
    """A question's paths match by file name; the index keeps that map as it learns paths
    (rebuilt for each search, it cost 30 ms with 30k commit files)."""
    from patchstream.query.question import file_name_index, named_files, named_in

    index = _index(_row("a", "x", [1, 0, 0], path="pkg/core/expr.py"),
                   _row("b", "y", [1, 0, 0], path="pkg/core/expr.py"),
                   _row("c", "z", [1, 0, 0], path="other/expr.py"),
                   _row("d", "w", [1, 0, 0], path="_commits/abc.md"))  # fmt: skip
    assert index.file_names == {"expr.py": ["pkg/core/expr.py", "other/expr.py"],
                                "abc.md": ["_commits/abc.md"]}  # fmt: skip
    assert index.file_names == file_name_index(index.paths.names)
    question = 'Traceback:\n  File "/site/pkg/core/expr.py", line 3, in run'
    assert named_files(named_in(question), lambda ns: {}, index.file_names).files == [
        "pkg/core/expr.py"
    ]
