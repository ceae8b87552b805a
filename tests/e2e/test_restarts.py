"""Issue #32's restart soak, two rounds of it (``make bench-restarts`` runs 100): the whole
embedded stack stopped (SIGTERM, then SIGKILL of every process) and started again on its own
data while clients knock at every store; each start comes up, both stores equal a clean
rebuild, and the overlay dropped just before the stop stays dropped."""

from __future__ import annotations

from pathlib import Path

from patchstream.testing.faults import synthetic_corpus
from patchstream.testing.restarts import RestartSoak


def test_the_stack_restarts_on_its_own_data_equal_to_a_clean_rebuild(tmp_path: Path) -> None:
    synthetic_corpus(tmp_path / "corpus", 200, seed=5)
    with RestartSoak(tmp_path / "soak", tmp_path / "corpus", seed=5) as soak:
        results = [soak.restart_round(hard) for hard in (False, True)]
    for result in results:
        assert result.knocks > 0
        assert result.resurrected == 0, result
        equal = result.equal
        assert (equal.lost, equal.duplicated, equal.differences) == (0, 0, []), result
        assert equal.equal and equal.files >= 200, result
