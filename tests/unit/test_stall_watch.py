"""The stall watch names a tier whose partition holds pending events with the same committed
offset for the tier's patience, and nothing else: not an idle tier, not a slow one that
commits, and a tier it restarted gets twice the time before the next restart."""

from __future__ import annotations

import pytest

from patchstream.embedded.stall_watch import StallTender, StallWatch
from patchstream.query.lag import GroupLag


def lag(pending: dict[int, int], committed: dict[int, int], tier: str = "parse") -> GroupLag:
    return GroupLag(f"g.{tier}", "t", sum(pending.values()), pending, committed)


def test_pending_events_and_no_commit_for_the_stall_period_name_the_tier() -> None:
    watch = StallWatch(60)
    assert watch.observe({"parse": lag({0: 3, 1: 0}, {0: 10, 1: 7})}, 0.0) == {}
    assert watch.observe({"parse": lag({0: 5, 1: 0}, {0: 10, 1: 7})}, 59.0) == {}
    assert watch.observe({"parse": lag({0: 5, 1: 0}, {0: 10, 1: 7})}, 60.0) == {"parse": [0]}


def test_a_tier_that_commits_or_has_nothing_pending_is_never_stalled() -> None:
    watch = StallWatch(60)
    for step in range(10):  # slow but moving: the committed offset advances every 50 s
        now = step * 50.0
        assert watch.observe({"graph": lag({0: 100}, {0: step}, "graph")}, now) == {}
    idle = StallWatch(60)
    for step in range(10):  # idle: nothing pending, the offset never moves
        assert idle.observe({"vector": lag({0: 0}, {0: 4}, "vector")}, step * 50.0) == {}


def test_each_restart_doubles_the_patience_until_the_tier_commits_again() -> None:
    watch = StallWatch(60)
    stuck = {"parse": lag({0: 2}, {0: 0})}
    watch.observe(stuck, 0.0)
    assert watch.observe(stuck, 60.0) == {"parse": [0]}
    watch.restarted("parse", 60.0)
    assert watch.observe(stuck, 179.0) == {}  # 120 s now
    assert watch.observe(stuck, 180.0) == {"parse": [0]}
    watch.restarted("parse", 180.0)
    assert watch.observe(stuck, 419.0) == {}  # 240 s
    watch.observe({"parse": lag({0: 2}, {0: 1})}, 420.0)  # it committed: patience is back
    assert watch.observe({"parse": lag({0: 2}, {0: 1})}, 480.0) == {"parse": [0]}


def test_a_broker_restart_that_resets_the_offsets_starts_the_period_over() -> None:
    watch = StallWatch(60)
    watch.observe({"parse": lag({0: 4}, {0: 90})}, 0.0)
    assert watch.observe({"parse": lag({0: 4}, {0: 0})}, 70.0) == {}  # a new, shorter log
    assert watch.observe({"parse": lag({0: 4}, {0: 0})}, 130.0) == {"parse": [0]}


def test_a_held_tier_is_not_restarted_and_keeps_its_patience(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The vector sink held for the start audit has events pending and commits nothing: that
    is the hold, not a stall. The tender skips it (it logged `consumer_stalled ... restarting
    it` for a sink that was not running) and its clock starts over at release."""
    from patchstream.config.settings import KafkaSettings
    from patchstream.embedded import stall_watch

    stuck = {"vector": lag({0: 9}, {0: 3}, "vector")}
    monkeypatch.setattr(stall_watch, "read_lags", lambda kafka: stuck)
    tender = StallTender(60)
    killed: list[str] = []
    for now in (0.0, 30.0, 60.0, 90.0):
        tender.next_check = 0.0
        tender.tend(now, KafkaSettings(), killed.append, held=frozenset({"vector-sink"}))
    assert killed == []
    assert tender.watch is not None
    assert tender.watch.observe(stuck, 119.0) == {}  # its 60 s started over at 60 s
    tender.next_check = 0.0
    tender.tend(150.0, KafkaSettings(), killed.append)  # released, and still stuck
    assert killed == ["vector-sink"]
