"""The embedded broker (Tansu, memory only) keeps every record it is sent: it applies neither
``retention.ms`` nor DeleteRecords (both tried: the log still began at offset 0, and a
DeleteRecords request closed the connection). Under a sustained load of agent writes it held
1,018 MiB after 9,000 writes. So once it is over ``embedded.broker_recycle_mb`` and every
consumer group has consumed everything it holds (nothing left to lose: each tier applied it,
and the outbox still holds whatever it owes), ``up`` restarts it empty by the path a crashed
broker takes: consumers reset, topics created again, the outbox's owed entries republished.
What goes with it is history no consumer reads: the dead-letter and run-event topics.

A restart resets every consumer, a pause of some seconds in applying writes, so it waits for
a quiet moment: nothing consumed between two checks 30 s apart. Under a load that never
pauses, it takes the first moment with nothing pending once the broker is at twice its bound.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

RECHECK_S = 30.0  # how often the broker's memory is looked at


class _Lag(Protocol):
    @property
    def pending(self) -> int: ...

    @property
    def committed(self) -> dict[int, int]: ...


@dataclass
class BrokerRecycler:
    bound_mib: int  # 0: never
    next_check: float = 0.0
    consumed: int | None = None  # every group's committed offsets, summed, at the last check

    def due(
        self, now: float, rss_mib: float | None, lags: Callable[[], Mapping[str, _Lag] | None]
    ) -> bool:
        """Whether to restart the broker now; ``lags`` is asked only when it is over bound."""
        if not self.bound_mib or now < self.next_check:
            return False
        self.next_check = now + RECHECK_S
        if rss_mib is None or rss_mib <= self.bound_mib:
            return False
        found = lags()
        if not found or any(g.pending for g in found.values()):
            self.consumed = None
            return False
        consumed = sum(sum(g.committed.values()) for g in found.values())
        quiet, self.consumed = consumed == self.consumed, consumed
        return quiet or rss_mib > 2 * self.bound_mib
