"""Puts stored run events on the ``run-events`` topic (audit and replay), after the fact.

The store is canonical: a run write commits its snapshot and events together, then the relay
sends what is unpublished and marks it. A bus that is down delays the topic, never a run;
the loop retries every ``interval_s`` for each tenant this process has written. Consumers
may see an event twice (sent, then the mark lost): ``(run_id, seq)`` identifies it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from aiokafka import AIOKafkaProducer

from patchstream.agent.service import AgentStateService, dumps

log = logging.getLogger("patchstream.runs")


class RunEventRelay:
    def __init__(
        self,
        service: Callable[[], AgentStateService],
        producer: Callable[[], AIOKafkaProducer],
        topic: str,
        interval_s: float = 5.0,
    ) -> None:
        self._service = service
        self._make_producer = producer
        self.topic = topic
        self.interval_s = interval_s
        self.tenants: set[str] = set()
        self._producer: AIOKafkaProducer | None = None
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[int]] = set()

    def soon(self, tenant: str) -> None:
        """Drain the tenant in the background: a run write never waits for the bus (with the
        broker down, its producer would wait out the request timeout)."""
        task = asyncio.create_task(self.drain(tenant))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self, tenant: str) -> int:
        """Send the tenant's unpublished events; how many. Errors are logged and retried later."""
        self.tenants.add(tenant)
        async with self._lock:  # one drain at a time keeps each run's events in order
            try:
                return await self._drain(tenant)
            except Exception as exc:  # the bus or the store: the loop tries again
                log.warning("event=run_events_unpublished tenant=%s error=%s", tenant, exc)
                await self._reset()
                return 0

    async def _drain(self, tenant: str) -> int:
        service = self._service()
        pending = await asyncio.to_thread(service.unpublished, tenant)
        if not pending:
            return 0
        if self._producer is None:
            producer = self._make_producer()
            await producer.start()
            self._producer = producer
        futures = [
            await self._producer.send(self.topic, key=event.run_id.encode(), value=dumps(event))
            for _uid, event in pending
        ]
        for future in futures:
            await future
        await asyncio.to_thread(service.mark_published, tenant, [uid for uid, _ in pending])
        return len(pending)

    async def _reset(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                await producer.stop()
            except Exception as exc:  # closing a broken client must not raise
                log.debug("event=producer_stop_failed error=%s", exc)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            for tenant in sorted(self.tenants):
                await self.drain(tenant)

    async def close(self) -> None:
        await self._reset()
