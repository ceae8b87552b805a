"""When ``up`` restarts the memory-only broker to give its memory back: over its bound, only
with nothing left unconsumed (a restart then loses no event a consumer still needs), and at a
quiet moment unless the broker is at twice its bound."""

from __future__ import annotations

from dataclasses import dataclass, field

from patchstream.embedded.broker_recycle import RECHECK_S, BrokerRecycler


@dataclass
class Lag:
    pending: int
    committed: dict[int, int] = field(default_factory=dict)


def test_over_the_bound_with_everything_consumed_at_a_quiet_moment_it_is_due() -> None:
    asked = []

    def lags(pending: int, consumed: int = 10) -> dict[str, Lag]:
        asked.append(pending)
        return {"parse": Lag(0, {0: consumed}), "graph": Lag(pending, {0: consumed}),
                "vector": Lag(0, {0: consumed}), "trace": Lag(0)}  # fmt: skip

    recycler = BrokerRecycler(bound_mib=512)
    assert not recycler.due(0.0, 300.0, lambda: lags(0))  # under the bound
    assert asked == []  # the bus is not asked then
    assert not recycler.due(1.0, 900.0, lambda: lags(0))  # over, but checked 30 s apart
    assert recycler.due(RECHECK_S, 900.0, lambda: lags(3)) is False  # a tier is behind
    # Caught up, but writes were consumed since the last look: not a quiet moment yet.
    assert recycler.due(2 * RECHECK_S, 900.0, lambda: lags(0, consumed=10)) is False
    assert recycler.due(3 * RECHECK_S, 900.0, lambda: lags(0, consumed=14)) is False
    assert recycler.due(4 * RECHECK_S, 900.0, lambda: lags(0, consumed=14)) is True  # quiet
    assert asked == [3, 0, 0, 0]


def test_at_twice_its_bound_any_moment_with_nothing_pending_will_do() -> None:
    recycler = BrokerRecycler(bound_mib=512)
    busy = {"parse": Lag(0, {0: 1}), "graph": Lag(0, {0: 1})}
    assert recycler.due(0.0, 1025.0, lambda: busy) is True
    behind = {"parse": Lag(1, {0: 1})}
    assert recycler.due(RECHECK_S, 5000.0, lambda: behind) is False  # never with one behind


def test_never_without_a_bound_an_answer_or_a_process() -> None:
    assert not BrokerRecycler(bound_mib=0).due(0.0, 1e6, lambda: {"parse": Lag(0)})
    assert not BrokerRecycler(bound_mib=1).due(0.0, 10.0, lambda: None)  # broker not answering
    assert not BrokerRecycler(bound_mib=1).due(0.0, 10.0, lambda: {})  # no groups read
    assert not BrokerRecycler(bound_mib=1).due(0.0, None, lambda: {"parse": Lag(0)})  # gone
