"""The parse stage's batch logic with an in-memory graph view: outages wait, never dead-letter."""

from __future__ import annotations

import pytest

from patchstream.errors import StoreUnavailable
from patchstream.parsing.filestate import FileStateBuilder
from patchstream.schemas.events import PatchEvent
from patchstream.schemas.state import FileState
from patchstream.streams.blobs import BlobReader
from patchstream.streams.parse_batch import PreviousStates, parse_batch
from patchstream.streams.parse_stage import ParseStage


class FlakyGraph:
    """Answers ``live_files``/``file_state`` like an empty store after ``outages`` failures."""

    def __init__(self, outages: int) -> None:
        self.outages = outages
        self.calls = 0

    def _maybe_fail(self) -> None:
        self.calls += 1
        if self.outages > 0:
            self.outages -= 1
            raise StoreUnavailable("FalkorDB read: not answering")

    def live_files(self, tenant: str, file_uids: list[str]) -> set[str]:
        self._maybe_fail()
        return set()

    def file_state(self, *args: object) -> FileState | None:
        self._maybe_fail()
        return None


def _event(path: str, version: int, content: str = "def f():\n    return 1\n") -> PatchEvent:
    return PatchEvent(tenant="t", repo="r", path=path, op="upsert", content=content,
                      version=version, source="agent")  # fmt: skip


def test_an_outage_leaves_the_worker_untouched_and_the_same_batch_succeeds_after() -> None:
    graph = FlakyGraph(outages=2)
    states = PreviousStates(graph, capacity=16)  # type: ignore[arg-type]
    stage = ParseStage(FileStateBuilder(), BlobReader(""))
    batch = [_event("a.py", 1), _event("b.py", 1), _event("a.py", 2, "def g():\n    pass\n")]
    for _ in range(2):
        with pytest.raises(StoreUnavailable):
            parse_batch(stage, states, batch)
        assert not states.recent  # nothing remembered from a batch that did not run
    outcomes = parse_batch(stage, states, batch)
    assert [o.error for o in outcomes] == [None, None, None]
    outputs = [o.output for o in outcomes]
    assert all(o is not None and not o.stale for o in outputs)
    # The second event of a.py saw the first one's state as its previous state.
    second = outputs[2]
    assert second is not None and second.deltas[0].base_version == 1
    assert {s.name for s in second.deltas[0].symbols if s.kind.value == "function"} == {"g"}


class GraphAt:
    """A graph that holds one stored state per file key (or nothing)."""

    def __init__(self) -> None:
        self.held: dict[str, FileState] = {}

    def live_files(self, tenant: str, file_uids: list[str]) -> set[str]:
        return set()

    def file_state(
        self, tenant: str, repo: str, ref: str, path: str, workspace: object
    ) -> FileState | None:
        return self.held.get(path)


def test_a_redelivery_whose_delta_was_lost_sends_the_delta_again() -> None:
    """The broker died with the delta of a.py@1 after the worker parsed it: the outbox
    replays a.py@1, the LRU is at version 1, the graph has nothing. The delta comes again."""
    graph = GraphAt()
    states = PreviousStates(graph, capacity=16)  # type: ignore[arg-type]
    stage = ParseStage(FileStateBuilder(), BlobReader(""))
    event = _event("a.py", 1)
    (first,) = parse_batch(stage, states, [event])
    assert first.output is not None and first.output.deltas
    (again,) = parse_batch(stage, states, [event])
    assert again.output is not None and not again.output.stale
    assert again.output.deltas[0].model_dump() == first.output.deltas[0].model_dump()
    # Once the graph holds version 1, the same redelivery is the ordinary stale one.
    assert first.output.state is not None
    graph.held["a.py"] = first.output.state
    (stale,) = parse_batch(stage, states, [event])
    assert stale.output is not None and stale.output.stale and not stale.output.deltas
