"""A poll's wait that lengthens while the thing it polls stays quiet.

A poller that has seen nothing new for ``idle_after_s`` waits ``idle_ms`` between polls
instead of ``active_ms``; the first poll that finds something brings the short wait back.
The price is paid once per quiet spell: what arrives first after it waits up to ``idle_ms``.
Kafka consumers (``streams.fetch_pacing``) and the query service's search copy, which follows
Milvus, both poll this way, so an idle stack mostly sleeps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class FetchPacer:
    """The wait of a poller's next poll, from when a poll last found something."""

    active_ms: int
    idle_ms: int
    idle_after_s: float
    clock: Callable[[], float] = time.monotonic
    last_records_at: float = field(default=0.0)
    answers: int = 0  # polls answered
    wait_ms: int = 0  # the wait the next poll uses

    def __post_init__(self) -> None:
        self.last_records_at = self.clock()
        self.wait_ms = self.active_ms

    def next_wait_ms(self, received: bool) -> int:
        now = self.clock()
        self.answers += 1
        if received:
            self.last_records_at = now
        quiet = now - self.last_records_at >= self.idle_after_s
        self.wait_ms = self.idle_ms if quiet and self.idle_ms > self.active_ms else self.active_ms
        return self.wait_ms
