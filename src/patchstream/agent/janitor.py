"""Expiry of agent state: sessions and memories past their time to live are deleted (the
memories' vectors with them) every ``interval_s``, for each tenant this process has served.
A tenant not served since the process started is expired on its reads (an expired session
or memory is never returned) and at the first sweep after its next request."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from patchstream.agent.memory_service import MemoryService
from patchstream.agent.service import AgentStateService

log = logging.getLogger("patchstream.janitor")


class StateJanitor:
    def __init__(
        self,
        agent: Callable[[], AgentStateService | None],
        memory: Callable[[], MemoryService | None],
        interval_s: float = 300.0,
    ) -> None:
        self._agent = agent
        self._memory = memory
        self.interval_s = interval_s
        self.tenants: set[str] = set()

    def sweep(self, tenant: str) -> tuple[int, int]:
        """(sessions, memories) deleted for ``tenant``."""
        agent, memory = self._agent(), self._memory()
        sessions = agent.expire_sessions(tenant) if agent else 0
        memories = memory.purge_expired(tenant) if memory else 0
        if sessions or memories:
            log.info("event=expired tenant=%s sessions=%d memories=%d", tenant, sessions, memories)
        return sessions, memories

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            for tenant in sorted(self.tenants):
                try:
                    await asyncio.to_thread(self.sweep, tenant)
                except Exception as exc:  # a store that is down: the next sweep tries again
                    log.warning("event=expiry_failed tenant=%s error=%s", tenant, exc)
