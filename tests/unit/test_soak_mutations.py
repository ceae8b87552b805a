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
