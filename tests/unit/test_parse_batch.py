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
        self.reads = 0

    def live_files(self, tenant: str, file_uids: list[str]) -> set[str]:
        return {uid for uid in file_uids if uid.rsplit("|", 1)[-1] in self.held}

    def file_state(
        self, tenant: str, repo: str, ref: str, path: str, workspace: object
    ) -> FileState | None:
        self.reads += 1
        return self.held.get(path)


def test_a_redelivery_sends_the_complete_state_again_and_older_versions_stay_stale() -> None:
    """The broker died with a.py@1's delta before the vector tier applied it (the graph may
    have it, or not): the outbox replays a.py@1. Whatever the worker or the graph holds at
    that version, the complete state goes out again (base: nothing); the tier that has it
    drops it at its fence."""
    graph = GraphAt()
    states = PreviousStates(graph, capacity=16)  # type: ignore[arg-type]
    stage = ParseStage(FileStateBuilder(), BlobReader(""))
    event = _event("a.py", 1)
    (first,) = parse_batch(stage, states, [event])
    assert first.output is not None and first.output.state is not None
    (again,) = parse_batch(stage, states, [event])  # from the worker's memory
    assert again.output is not None and not again.output.stale
    resent = again.output.deltas[0]
    assert resent.base_version is None and resent.version == 1
    assert resent.chunks == first.output.deltas[0].chunks  # complete, chunks included
    assert {s.id for s in resent.symbols} == {s.id for s in first.output.deltas[0].symbols}
    # A fresh worker: the graph holds version 1 (without chunks); the content is parsed again.
    graph.held["a.py"] = first.output.state.model_copy(update={"chunks": ()})
    fresh = PreviousStates(graph, capacity=16)  # type: ignore[arg-type]
    (replayed,) = parse_batch(stage, fresh, [event])
    assert graph.reads == 1  # the previous state came from the graph
    assert replayed.output is not None and not replayed.output.stale
    assert replayed.output.deltas[0].base_version is None
    assert replayed.output.deltas[0].chunks == resent.chunks
    # An older version than what is held stays stale: nothing is sent.
    newer = _event("a.py", 2, "def g():\n    pass\n")
    parse_batch(stage, states, [newer])
    (old,) = parse_batch(stage, states, [event])
    assert old.output is not None and old.output.stale and not old.output.deltas


def test_recent_states_are_kept_encoded_and_bounded_by_bytes() -> None:
    graph = FlakyGraph(outages=0)
    builder = FileStateBuilder()
    stage = ParseStage(builder, BlobReader(""))
    body = "".join(f"def f{i}(x):\n    return g(x) + {i}\n\n\n" for i in range(40))
    outcomes = parse_batch(stage, PreviousStates(graph, capacity=16), [_event("one.py", 1, body)])  # type: ignore[arg-type]
    one = outcomes[0].output
    assert one is not None and one.state is not None
    size = len(one.state.model_dump_json().encode())
    # Room for two such states: the third evicts the oldest, whatever the count allows.
    states = PreviousStates(graph, capacity=100, max_bytes=2 * size + size // 2)  # type: ignore[arg-type]
    events = [_event(f"f{i}.py", 1, body) for i in range(3)]
    parse_batch(stage, states, events)
    assert list(states.recent) == [e.key for e in events[1:]]
    assert (
        states.held_bytes == sum(len(v or b"") for v in states.recent.values()) <= states.max_bytes
    )
    # What comes back is the state that went in (chunks too: a resend reuses them).
    kept = states.get(events[2])
    assert (
        kept is not None
        and kept.chunks
        and kept
        == parse_batch(
            ParseStage(FileStateBuilder(), BlobReader("")),
            PreviousStates(graph, capacity=4),  # type: ignore[arg-type]
            [events[2]],
        )[0].output.state
    )  # type: ignore[union-attr]
    # Evicted: the graph is asked (an empty store here) instead.
    calls = graph.calls
    assert states.get(events[0]) is None and graph.calls == calls + 1
    # A state over the whole bound is never kept; a delete's None is, at no cost.
    tiny = PreviousStates(graph, capacity=100, max_bytes=size // 2)  # type: ignore[arg-type]
    parse_batch(stage, tiny, [events[0]])
    assert not tiny.recent and tiny.held_bytes == 0
    tiny.put(events[1], None)
    assert tiny.recent == {events[1].key: None} and tiny.get(events[1]) is None
