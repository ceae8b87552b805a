"""The soaks' corpus keeps its size: a restart round mutates twice (a burst before the stop,
one in flight across it), and each added file had the round's name, so the second overwrote
the first while both deleted one. The restart soak's corpus of 100 modules shrank by one a
round until, at round 84, a round's 20 edits no longer fitted in it."""

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
    import time

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
