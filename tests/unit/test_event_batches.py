"""The parse stage's batches: full batches at once, a partial one ``within`` after its first
event, acks only after the caller is done with a batch, nothing lost or repeated whatever
the arrival times, no timer while the stream is quiet, a failed stream raises and a stopped
one ends them."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from patchstream.streams.event_batches import WhenQuiet, event_batches


class _Stream:
    """What ``event_batches`` uses of a Faust stream: ``events()``, ``ack`` and
    ``enable_acks``."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[Any] = asyncio.Queue()
        self.acked: list[int] = []
        self.enable_acks = True

    async def events(self) -> AsyncIterator[int]:
        while True:
            item = await self.incoming.get()
            if isinstance(item, BaseException):
                raise item
            if item is None:  # the stream stopped
                return
            yield item

    async def ack(self, event: int) -> bool:
        self.acked.append(event)
        return True


def test_full_batches_come_at_once_and_a_partial_one_after_its_wait() -> None:
    async def scenario() -> None:
        stream = _Stream()
        for i in range(10):
            stream.incoming.put_nowait(i)
        batches = event_batches(stream, 4, within_s=0.05)
        assert stream.enable_acks is True
        assert await anext(batches) == [0, 1, 2, 3]
        assert stream.enable_acks is False  # the stream's own acks are off while batching
        assert stream.acked == []  # nothing acked while the caller holds the batch
        assert await anext(batches) == [4, 5, 6, 7]
        assert stream.acked == [0, 1, 2, 3]
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await anext(batches) == [8, 9]
        assert loop.time() - started >= 0.04  # waited to fill
        await batches.aclose()
        assert stream.enable_acks is True

    asyncio.run(scenario())


def test_every_event_once_in_order_whatever_the_arrival_times() -> None:
    async def scenario(seed: int) -> None:
        rng = random.Random(seed)
        stream = _Stream()
        total = 200

        async def feed() -> None:
            for i in range(total):
                stream.incoming.put_nowait(i)
                if rng.random() < 0.3:
                    await asyncio.sleep(rng.choice([0.0, 0.001, 0.004, 0.012]))

        feeder = asyncio.ensure_future(feed())
        seen: list[int] = []
        size = rng.randint(1, 9)
        async for batch in event_batches(stream, size, within_s=0.005):
            assert 1 <= len(batch) <= size
            seen.extend(batch)
            if rng.random() < 0.2:
                await asyncio.sleep(0.003)  # a slow batch: arrivals queue up meanwhile
            if len(seen) == total:
                break
        await feeder
        assert seen == list(range(total))
        assert stream.acked == list(range(total - len(batch)))  # the last batch is the caller's

    for seed in range(20):
        asyncio.run(scenario(seed))


def test_a_quiet_stream_sets_no_timer() -> None:
    async def scenario() -> None:
        stream = _Stream()
        batches = event_batches(stream, 8, within_s=0.02)
        waiting = asyncio.ensure_future(anext(batches))
        await asyncio.sleep(0.1)
        loop: Any = asyncio.get_running_loop()
        assert not waiting.done()
        assert [h for h in loop._scheduled if not h.cancelled()] == []  # no timer pending
        stream.incoming.put_nowait(1)
        assert await waiting == [1]
        await batches.aclose()

    asyncio.run(scenario())


def test_a_failed_stream_raises_instead_of_waiting_for_ever() -> None:
    async def scenario() -> None:
        stream = _Stream()
        stream.incoming.put_nowait(RuntimeError("broker gone"))
        with pytest.raises(RuntimeError, match="broker gone"):
            async for _ in event_batches(stream, 8, within_s=0.02):
                pass

    asyncio.run(scenario())


def test_a_stopped_stream_ends_the_batches_after_what_it_delivered() -> None:
    """As Faust's ``take_events``: a stream that stops (its service stopping) ends the
    batches; what it delivered first is still handed out."""

    async def scenario() -> list[list[int]]:
        stream = _Stream()
        for item in (1, 2, 3, None):
            stream.incoming.put_nowait(item)
        return [batch async for batch in event_batches(stream, 2, within_s=0.02)]

    assert asyncio.run(scenario()) == [[1, 2], [3]]


def test_a_read_cancelled_by_faust_cancels_the_agent_so_that_faust_restarts_it() -> None:
    """Faust restarts an agent that ends cancelled ("Restarting on rebalance"); one that
    returns is not restarted. A stream read cancelled by someone else is passed on as that."""

    async def scenario() -> None:
        stream = _Stream()
        stream.incoming.put_nowait(asyncio.CancelledError())
        async for _ in event_batches(stream, 8, within_s=0.02):
            pass

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(scenario())


def test_when_quiet_runs_once_after_the_last_touch_and_then_sets_no_timer() -> None:
    async def scenario() -> tuple[list[float], list[float], object]:
        loop = asyncio.get_running_loop()
        ran: list[float] = []
        done = asyncio.Event()

        def action() -> None:
            ran.append(loop.time())
            loop.call_soon_threadsafe(done.set)

        quiet = WhenQuiet(0.2, action)
        touched = []
        for _ in range(5):  # a busy stage: touched more often than the delay
            quiet.touch()
            touched.append(loop.time())
            await asyncio.sleep(0.05)
        await asyncio.wait_for(done.wait(), 5)
        await asyncio.sleep(0)
        return ran, touched, quiet._timer

    ran, touched, timer = asyncio.run(scenario())
    assert len(ran) == 1 and ran[0] >= touched[-1] + 0.2
    assert timer is None  # quiet afterwards: nothing scheduled


def test_when_quiet_cancelled_never_runs() -> None:
    async def scenario() -> list[int]:
        ran: list[int] = []
        quiet = WhenQuiet(0.05, lambda: ran.append(1))
        quiet.touch()
        quiet.cancel()
        assert quiet._timer is None
        await asyncio.sleep(0.2)  # four times the delay
        return ran

    assert asyncio.run(scenario()) == []
