"""A consumer that holds pending events and commits nothing for too long is restarted.

A live process is not a working consumer: a stream that stopped after a rebalance, or a
message skipped and never acknowledged (the commit cannot pass it), leaves the process
running and its partitions unconsumed for good, and nothing in it logs why. The lag says
it from outside: a partition with events pending whose committed offset has not moved for
``stall_s`` seconds. Restarting the group's processes costs at most a redelivered batch
(at-least-once, idempotent sinks); a batch that is merely slow (a large embedding batch on
a busy machine) would be restarted again and again, so each consecutive stall of a tier
doubles the time it is given, until it commits again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from patchstream.config.settings import KafkaSettings
from patchstream.query.lag import GroupLag, LagProbe

log = logging.getLogger("patchstream.up")

# The processes of each tier LagProbe reports, by the supervisor's service names.
TIER_SERVICES = {"parse": "parse", "graph": "graph-sink", "vector": "vector-sink"}


@dataclass
class _Seen:
    committed: int
    since: float


class StallWatch:
    """Pure: fed lag snapshots with their times, it names the tiers that stalled."""

    def __init__(self, stall_s: float) -> None:
        self.stall_s = stall_s
        self._seen: dict[tuple[str, int], _Seen] = {}
        self._patience: dict[str, float] = {}  # per tier: doubled after each stall

    def observe(self, lags: Mapping[str, GroupLag], now: float) -> dict[str, list[int]]:
        """Tier -> its partitions that had events pending and the same committed offset for
        the tier's patience. A partition with nothing pending, or whose offset moved, starts
        over; a tier that committed anywhere gets its patience back."""
        stalled: dict[str, list[int]] = {}
        for tier, lag in lags.items():
            patience = self._patience.get(tier, self.stall_s)
            for partition, pending in sorted(lag.by_partition.items()):
                committed = lag.committed.get(partition, 0)
                seen = self._seen.get((tier, partition))
                if pending == 0 or seen is None or seen.committed != committed:
                    if seen is not None and seen.committed != committed:
                        self._patience.pop(tier, None)
                    self._seen[(tier, partition)] = _Seen(committed, now)
                elif now - seen.since >= patience:
                    stalled.setdefault(tier, []).append(partition)
        return stalled

    def restarted(self, tier: str, now: float) -> None:
        """The tier's processes were restarted: they get twice the time before the next."""
        self._patience[tier] = 2 * self._patience.get(tier, self.stall_s)
        self.held(tier, now)

    def held(self, tier: str, now: float) -> None:
        """The tier is not running on purpose (its sink waits for an audit): its clock starts
        over, its patience stays."""
        for key, seen in self._seen.items():
            if key[0] == tier:
                seen.since = now


def read_lags(
    kafka: KafkaSettings, timeout_s: float = 10.0, runtime_edges: bool = False
) -> dict[str, GroupLag] | None:
    """One lag snapshot of the pipeline's groups (and, with ``runtime_edges``, the trace
    sink's, as ``trace``); None while the broker does not answer."""
    probe = LagProbe(kafka)
    if runtime_edges:
        probe.groups["trace"] = (f"{kafka.topic_prefix}trace-sink", probe.topics.trace_events)

    async def read() -> dict[str, GroupLag]:
        return await asyncio.wait_for(probe.lags(), timeout_s)

    try:
        return asyncio.run(read())
    except Exception as exc:  # restarting broker: the next check reads again
        log.info("event=lag_unavailable error=%s", type(exc).__name__)
        return None


class StallTender:
    """The supervisor's side: reads the lag a few times per stall period and has a stalled
    tier's processes killed (``kill`` takes the supervisor's service name)."""

    def __init__(self, stall_s: float) -> None:
        self.watch = StallWatch(stall_s) if stall_s else None
        self.next_check = 0.0

    def tend(self, now: float, kafka: KafkaSettings, kill: Callable[[str], None],
             held: frozenset[str] = frozenset()) -> None:  # fmt: skip
        """Restart (``kill``) the services of a tier that stalled, except ``held`` ones."""
        watch = self.watch
        if watch is None or now < self.next_check:
            return
        self.next_check = now + min(15.0, watch.stall_s / 4)
        lags = read_lags(kafka)
        if lags is None:
            return
        for tier, partitions in watch.observe(lags, now).items():
            if TIER_SERVICES[tier] in held:
                watch.held(tier, now)
                continue
            log.warning("event=consumer_stalled tier=%s partitions=%s pending=%d; restarting it",
                        tier, partitions, lags[tier].pending)  # fmt: skip
            kill(TIER_SERVICES[tier])
            watch.restarted(tier, now)
