"""The soaks' corpus keeps its size: a restart round mutates twice (a burst before the stop,
one in flight across it), and each added file had the round's name, so the second overwrote
the first while both deleted one. The restart soak's corpus of 100 modules shrank by one a
round until, at round 84, a round's 20 edits no longer fitted in it."""

import time
from pathlib import Path

from patchstream.testing.faults import FaultSoak, synthetic_corpus


def test_mutations_keep_the_corpus_size(tmp_path: Path) -> None:
    synthetic_corpus(tmp_path / "corpus", 60, seed=1)
    soak = FaultSoak(tmp_path / "soak", tmp_path / "corpus", seed=1)

    def modules() -> int:
        return sum(1 for p in soak.source.rglob("*.py") if p.name != "__init__.py")

    before = modules()
    for _ in range(30):  # fifteen rounds of two bursts each
        soak.rounds += 1
        soak.mutate()
        soak.mutate()
    assert modules() == before


def test_a_kill_of_an_up_already_replaced_restarts_nothing(tmp_path: Path) -> None:
    """The chaos soak killed ``up`` while an earlier kill's restart was still retrying; the
    retry started the ``up`` now running, and the second restart then waited 30 s on that
    healthy one and failed the run. A kill is of one pid: once it is replaced, nothing to do."""
    import subprocess

    synthetic_corpus(tmp_path / "corpus", 5, seed=1)
    soak = FaultSoak(tmp_path / "soak", tmp_path / "corpus", seed=1)
    running = subprocess.Popen(["sleep", "60"])  # the `up` now running
    try:
        soak.up = running
        started = time.monotonic()
        soak.restart_up(set(), killed=running.pid + 100_000)  # an earlier `up`'s pid
        assert time.monotonic() - started < 5
        assert running.poll() is None and soak.up is running  # left as it was
    finally:
        running.kill()
        running.wait()


def test_a_pause_goes_to_a_running_process_and_is_only_due_again_once_it_happened(
    tmp_path: Path,
) -> None:
    """A 2-minute chaos run paused nothing: each pause picked, at random, a process that was
    being restarted (often the one just killed), was dropped, and the next was due 40 s on."""
    import subprocess

    from patchstream.testing.chaos import ChaosRun

    synthetic_corpus(tmp_path / "corpus", 5, seed=1)
    chaos = ChaosRun(FaultSoak(tmp_path / "soak", tmp_path / "corpus", seed=1),
                     pause_s=(0.01, 0.02))  # fmt: skip
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        running = {"milvus"}  # the rest are being restarted
        chaos.pid_of = lambda v: sleeper.pid if v in running else None  # type: ignore[method-assign]
        for _ in range(20):  # the random choice never falls on a process that is down
            assert chaos.pause_one(exclude="tansu")
        assert chaos.report.pauses == {"milvus": 20}
        assert not chaos.pause_one(exclude="milvus")  # the one just killed is never paused
        running.clear()
        assert not chaos.pause_one(exclude="tansu")
        assert sum(chaos.report.pauses.values()) == 20
        assert sleeper.poll() is None  # continued after each pause
    finally:
        sleeper.kill()
        sleeper.wait()


def test_an_old_answer_that_says_it_is_old_is_behind_not_stale(tmp_path: Path) -> None:
    """A CI run counted a context stale that hit a file deleted 88 s before while its own
    freshness said the vector tier was 89 s behind: the judge read the lag beside it, and
    that read met the query service just killed. The answer's own freshness counts first."""
    from patchstream.testing.chaos import ChaosRun

    synthetic_corpus(tmp_path / "corpus", 5, seed=1)
    chaos = ChaosRun(FaultSoak(tmp_path / "soak", tmp_path / "corpus", seed=1))
    chaos.lag = lambda: None  # type: ignore[method-assign]  # the query service is down
    chaos.deleted_at["pkg0/gone.py"] = time.monotonic() - 88.0
    hit = {"blocks": [{"provenance": {"path": "pkg0/gone.py"}}]}

    def freshness(vector_lag: float) -> dict[str, object]:
        return {"graph": {"lag_s": 0.5}, "vector": {"lag_s": vector_lag}}

    assert chaos._judged("/v1/context", {**hit, "freshness": freshness(89.4)}) == "behind"
    assert chaos.report.stale_answers == []
    assert chaos._judged("/v1/context", {**hit, "freshness": freshness(0.2)}) == "stale"
    assert chaos._judged("/v1/context", hit) == "stale"  # nothing said, nothing read
    assert len(chaos.report.stale_answers) == 2
    assert chaos._judged("/v1/context", {"blocks": []}) == "answered"
    # A search's freshness names the tier it read, the vector tier, alone.
    chaos.deleted_at["pkg0/gone.py"] = time.monotonic() - 88.0  # the read above waited 20 s
    searched = {"hits": [{"path": "pkg0/gone.py"}], "freshness": {"repo": "r", "vector": {}}}
    searched["freshness"]["vector"] = {"lag_s": 89.4}  # type: ignore[index]
    assert chaos._judged("/v1/search", searched) == "behind"
    searched["freshness"]["vector"] = {"lag_s": 0.2}  # type: ignore[index]
    assert chaos._judged("/v1/search", searched) == "stale"
    assert len(chaos.report.stale_answers) == 3
