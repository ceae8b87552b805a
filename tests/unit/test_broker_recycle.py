"""When ``up`` restarts the memory-only broker to give its memory back: over its bound, and
only with nothing left unconsumed (a restart then loses no event a consumer still needs)."""

from __future__ import annotations

from dataclasses import dataclass

from patchstream.embedded.broker_recycle import RECHECK_S, BrokerRecycler


@dataclass
class Lag:
    pending: int


def test_over_the_bound_with_everything_consumed_it_is_due() -> None:
    asked = []

    def lags(pending: int) -> dict[str, Lag]:
        asked.append(pending)
        return {"parse": Lag(0), "graph": Lag(pending), "vector": Lag(0), "trace": Lag(0)}

    recycler = BrokerRecycler(bound_mib=512)
    assert not recycler.due(0.0, 300.0, lambda: lags(0))  # under the bound
    assert asked == []  # the bus is not asked then
    assert not recycler.due(1.0, 900.0, lambda: lags(0))  # over, but checked 30 s apart
    assert recycler.due(RECHECK_S, 900.0, lambda: lags(3)) is False  # a tier is behind
    assert recycler.due(2 * RECHECK_S, 900.0, lambda: lags(0)) is True
    assert asked == [3, 0]


def test_never_without_a_bound_an_answer_or_a_process() -> None:
    assert not BrokerRecycler(bound_mib=0).due(0.0, 1e6, lambda: {"parse": Lag(0)})
    assert not BrokerRecycler(bound_mib=1).due(0.0, 10.0, lambda: None)  # broker not answering
    assert not BrokerRecycler(bound_mib=1).due(0.0, 10.0, lambda: {})  # no groups read
    assert not BrokerRecycler(bound_mib=1).due(0.0, None, lambda: {"parse": Lag(0)})  # gone
