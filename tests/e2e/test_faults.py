"""SIGKILL of each process of the embedded stack at a random moment of an index of 300 files:
afterwards the stores equal a clean rebuild of the same files, with nothing lost or duplicated.
(``bench/faults.py`` runs the same rounds 100 times with random victims.)"""

from __future__ import annotations

from pathlib import Path

from patchstream.testing.faults import VICTIMS, FaultSoak, synthetic_corpus


def test_each_process_killed_mid_index_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    synthetic_corpus(tmp_path / "corpus", 300, seed=3)
    with FaultSoak(tmp_path / "soak", tmp_path / "corpus", seed=3) as soak:
        results = [soak.round(victim) for victim in VICTIMS]
    for result in results:
        assert result.files >= 300
        assert (result.lost, result.duplicated, result.differences) == (0, 0, []), result
        assert result.equal, result
