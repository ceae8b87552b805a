"""Fetch waits that lengthen when a consumer's topics are quiet.

The embedded broker (Tansu) answers a fetch only when its wait expires, even when records
arrive meanwhile, so the wait bounds each hop's latency and also sets how often every idle
consumer asks: at 50 ms, an idle stack's broker used 14% of a core answering empty fetches.
A consumer that has had no records for ``idle_after_s`` asks every ``idle_ms`` instead; its
first record brings the short wait back. The price is paid once per quiet spell: the first
event after it waits up to ``idle_ms`` longer per hop.

``FetchPacer`` (``patchstream.pacing``) is the rule, pure; ``pace`` fits it to a started
aiokafka consumer (``PacedConsumer`` does that when it starts), whose fetcher reads its wait from
``_fetch_max_wait_ms`` each time it builds a request. That attribute is private: where a
future aiokafka lacks it, the consumer keeps its fixed wait and one warning says so.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka import AIOKafkaConsumer

from patchstream.config.settings import KafkaSettings
from patchstream.pacing import FetchPacer

__all__ = ["FetchPacer", "PacedConsumer", "pace", "pacer_for"]

log = logging.getLogger("patchstream.fetch")


def pacer_for(kafka: KafkaSettings) -> FetchPacer:
    return FetchPacer(kafka.fetch_max_wait_ms, kafka.idle_fetch_wait_ms, kafka.idle_after_s)


def pace(consumer: Any, pacer: FetchPacer) -> bool:
    """Make a started aiokafka consumer's fetch wait follow ``pacer``; False (and the fixed
    wait kept) where its fetcher is not the one this was written against."""
    fetcher: Any = getattr(consumer, "_fetcher", None)
    fetch: Callable[..., Awaitable[bool]] | None = getattr(fetcher, "_proc_fetch_request", None)
    if fetch is None or not hasattr(fetcher, "_fetch_max_wait_ms"):
        log.warning("event=fetch_pacing_unavailable reason=unknown_aiokafka_fetcher")
        return False
    original = fetch

    async def paced(*args: Any, **kwargs: Any) -> bool:
        received = await original(*args, **kwargs)
        fetcher._fetch_max_wait_ms = pacer.next_wait_ms(bool(received))
        return received

    fetcher._proc_fetch_request = paced
    pacer.last_records_at = pacer.clock()  # a consumer starts short: a backlog may wait
    return True


class PacedConsumer(AIOKafkaConsumer):  # type: ignore[misc]
    """An aiokafka consumer whose fetch wait follows ``pacer`` once started."""

    def __init__(self, *topics: str, pacer: FetchPacer, **kwargs: Any) -> None:
        super().__init__(*topics, **kwargs)
        self._pacer = pacer

    async def start(self) -> None:
        await super().start()
        pace(self, self._pacer)
