"""Faults under load (issue #52): two minutes of agents writing, pushes arriving and queries
running while every kind of process of the stack is killed or paused; nothing acknowledged
is lost, nothing deleted comes back, the stores equal a clean rebuild, and every query either
answered or failed with a retryable error. ``bench/chaos.py`` runs the same for 30 minutes."""

from __future__ import annotations

from pathlib import Path

from patchstream.testing.chaos import ChaosRun
from patchstream.testing.faults import FaultSoak, synthetic_corpus


def test_two_minutes_of_kills_and_pauses_under_load_lose_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    synthetic_corpus(corpus, 60, seed=3)
    soak = FaultSoak(tmp_path / "work", corpus, seed=3)
    chaos = ChaosRun(soak, seed=3, writers=3, write_rate=3.0, push_every_s=10.0, push_files=4,
                     query_rate=2.0, kill_every_s=(6.0, 10.0), pause_every_s=40.0,
                     pause_s=(5.0, 10.0))  # fmt: skip
    with soak:
        # Past two minutes while a loaded machine has not yet killed every kind of process
        # once nor answered 51 queries (each `up` restart took ~60 s beside three stacks).
        report = chaos.run(seconds=120, converge_s=420, min_answered=51, max_seconds=420)
    summary = (f"kills {dict(report.kills)}, pauses {dict(report.pauses)}, writes "
               f"{report.writes} ({report.retries} retried), queries {dict(report.queries)}, "
               f"drained in {report.drain_s}s, leftover rows waited {report.leftovers_waited_s}s, "
               f"{report.differences}, "
               f"{report.stale_answers}\ntimeline: {'; '.join(report.timeline)}")  # fmt: skip
    assert sum(report.kills.values()) >= 8 and len(report.kills) >= 8, summary
    assert report.pauses, summary
    assert report.writes >= 100 and report.deletes >= 1, summary
    assert (report.lost, report.resurrected, report.duplicated) == (0, 0, 0), summary
    assert report.equal, summary  # the stores equal a clean rebuild of the acknowledged tree
    assert report.queries["answered"] > 50, summary
    assert report.queries["stale"] == 0 and report.queries["unclear"] == 0, summary
