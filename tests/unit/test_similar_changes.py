"""Similar past changes: the commits whose messages read like a question vote for the files
they changed, only commits the view reaches count, and sweeping commits say nothing."""

from __future__ import annotations

from patchstream.query.similar_changes import ChangeHistory, PastChange, fuse

CHANGES = [
    PastChange("a" * 40, "Fix Matrix.det for empty matrices", ("sympy/matrices/dense.py",)),
    PastChange("b" * 40, "matrix determinant: use bareiss", ("sympy/matrices/determinant.py",
                                                             "sympy/matrices/dense.py")),
    PastChange("c" * 40, "Docs: typo in the printing guide", ("doc/printing.rst",)),
    PastChange("d" * 40, "Reformat every matrix file", tuple(f"m/{i}.py" for i in range(40))),
]  # fmt: skip


def test_the_files_of_similar_commits_score_by_shared_similarity() -> None:
    history = ChangeHistory(CHANGES)
    scores = history.file_scores("det() of an empty Matrix raises")
    assert max(scores, key=scores.__getitem__) == "sympy/matrices/dense.py"
    assert "doc/printing.rst" not in scores  # not like the question
    assert not any(path.startswith("m/") for path in scores)  # a 40-file sweep is no clue


def test_only_reachable_commits_count_and_only_present_files() -> None:
    history = ChangeHistory(CHANGES)
    older = history.mask({"c" * 40, "b" * 40, "unknown"})
    scores = history.file_scores("matrix determinant", older)
    assert set(scores) == {"sympy/matrices/determinant.py", "sympy/matrices/dense.py"}
    gone = history.file_scores("matrix determinant", older, present={"sympy/matrices/dense.py"})
    assert set(gone) == {"sympy/matrices/dense.py"}  # a file the snapshot lacks is no answer
    assert history.file_scores("matrix", history.mask(set())) == {}


def test_fusion_moves_a_history_file_up_by_its_weight_and_keeps_the_order_without() -> None:
    ranked = ["a.py", "b.py", "c.py", "d.py"]
    assert fuse(ranked, {"d.py": 3.0}, 0.0) == ranked
    assert fuse(ranked, {}, 2.0) == ranked
    assert fuse(ranked, {"d.py": 3.0}, 2.0)[0] == "d.py"
    assert fuse(ranked, {"z.py": 3.0}, 0.5)[-1] == "z.py"  # new files join after stronger ones
