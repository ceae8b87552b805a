"""Expiry of agent state: sessions and memories past their time to live are deleted (the
memories' vectors with them), and agent workspaces idle past theirs are dropped, every
``interval_s``, for each tenant this process has served.
A tenant not served since the process started is expired on its reads (an expired session
or memory is never returned) and at the first sweep after its next request."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from patchstream.agent.memory_service import MemoryService
from patchstream.agent.service import AgentStateService
from patchstream.stores.overlay_service import OverlayService
from patchstream.stores.overlays import OverlayInfo

log = logging.getLogger("patchstream.janitor")


class StateJanitor:
    def __init__(
        self,
        agent: Callable[[], AgentStateService | None],
        memory: Callable[[], MemoryService | None],
        interval_s: float = 300.0,
        overlays: Callable[[], OverlayService | None] = lambda: None,
        on_overlays: Callable[[list[OverlayInfo]], None] = lambda _kept: None,
    ) -> None:
        self._agent = agent
        self._memory = memory
        self._overlays = overlays
        self.on_overlays = on_overlays  # the overlays left after a sweep (metrics)
        self.interval_s = interval_s
        self.tenants: set[str] = set()

    def sweep(self, tenant: str) -> tuple[int, int, list[OverlayInfo]]:
        """(sessions, memories) deleted for ``tenant``, and the overlays it still has."""
        agent, memory, overlays = self._agent(), self._memory(), self._overlays()
        sessions = agent.expire_sessions(tenant) if agent else 0
        memories = memory.purge_expired(tenant) if memory else 0
        dropped, kept = overlays.expire(tenant) if overlays else ([], [])
        if sessions or memories or dropped:
            log.info("event=expired tenant=%s sessions=%d memories=%d workspaces=%s", tenant,
                     sessions, memories, ",".join(dropped) or "-")  # fmt: skip
        return sessions, memories, kept

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            kept: list[OverlayInfo] = []
            for tenant in sorted(self.tenants):
                try:
                    kept += (await asyncio.to_thread(self.sweep, tenant))[2]
                except Exception as exc:  # a store that is down: the next sweep tries again
                    log.warning("event=expiry_failed tenant=%s error=%s", tenant, exc)
            self.on_overlays(kept)
