"""Batches of a Faust stream's events that sleep while the stream is quiet.

Faust's ``take_events(max, within)`` wakes every ``within`` whether or not anything arrived:
at the parse stage's 20 ms, 50 wake-ups a second for nothing, 0.85% of a core per idle
worker. Here the first event of a batch is awaited without a timer, and only then does the
batch wait up to ``within`` to fill. Acks are as ``take_events`` gives them: the stream's own
acking is off, and each event is acked after the caller is done with its batch, so offsets
are committed only for processed events (at-least-once, as one event at a time).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

log = logging.getLogger(__name__)


async def event_batches(stream: Any, max_events: int, within_s: float) -> AsyncIterator[list[Any]]:
    """Lists of at most ``max_events`` events of ``stream`` (a Faust stream): each as soon as
    it is full, or ``within_s`` after its first event arrived."""
    loop = asyncio.get_running_loop()
    # Bounded: the stream is pulled at most one batch ahead of what is being processed.
    arrived: asyncio.Queue[Any] = asyncio.Queue(maxsize=max_events)
    acking = stream.enable_acks
    stream.enable_acks = False

    async def pull() -> None:
        async for event in stream.events():
            await arrived.put(event)

    puller = asyncio.ensure_future(pull())
    try:
        ended = False
        while not ended:
            first = await _next(arrived, puller, None)
            if first is _ENDED:
                return
            batch = [first]
            deadline = loop.time() + within_s
            while len(batch) < max_events:
                event = await _next(arrived, puller, max(0.0, deadline - loop.time()))
                if event is _TIMED_OUT or event is _ENDED:
                    ended = event is _ENDED
                    break
                batch.append(event)
            yield batch
            for event in batch:
                await stream.ack(event)
    finally:
        puller.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await puller
        stream.enable_acks = acking


_TIMED_OUT = object()
_ENDED = object()  # the stream stopped (its service is stopping): the batches end, as take's


async def _next(arrived: asyncio.Queue[Any], puller: asyncio.Future[None],
                timeout: float | None) -> Any:  # fmt: skip
    """The next event, ``_TIMED_OUT`` after ``timeout`` (None: no limit), ``_ENDED`` once the
    stream has stopped and nothing is left, or the puller's error if it failed (a wait on the
    queue alone would then never end). No event is lost to the timeout: a get still pending
    is cancelled before it takes one from the queue."""
    if not arrived.empty():
        return arrived.get_nowait()
    if timeout == 0.0:
        return _TIMED_OUT
    getting = asyncio.ensure_future(arrived.get())
    try:
        await asyncio.wait({getting, puller}, timeout=timeout,
                           return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
    finally:
        if not getting.done():
            getting.cancel()
    if getting.done() and not getting.cancelled():
        return getting.result()
    if puller.done():
        if puller.cancelled():  # not by us: Faust restarts an agent whose read it cancels
            raise asyncio.CancelledError("the stream's read was cancelled")
        exc = puller.exception()
        if exc is not None:
            raise exc
        return _ENDED
    return _TIMED_OUT


class WhenQuiet:
    """Runs ``action`` (blocking: in a thread) once ``touch`` has not been called for
    ``delay_s``: one timer, moved on by each batch, so a quiet stage wakes for it once and
    then sleeps. The parse stage gives a burst's memory back this way (``StateBuilder.quiet``)."""

    def __init__(self, delay_s: float, action: Callable[[], object]) -> None:
        self.delay_s = delay_s
        self.action = action
        self._timer: asyncio.TimerHandle | None = None
        self._running: asyncio.Future[object] | None = None  # held until it is done

    def touch(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(self.delay_s, self._fire)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        if self._running is not None and not self._running.done():
            return  # the last one is still at work
        self._running = asyncio.ensure_future(asyncio.to_thread(self.action))
        self._running.add_done_callback(_log_failure)


def _log_failure(done: asyncio.Future[object]) -> None:
    if not done.cancelled() and (exc := done.exception()) is not None:
        log.warning("event=when_quiet_failed error=%s: %s", type(exc).__name__, exc)
