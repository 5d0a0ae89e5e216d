"""Alerts decided but not yet delivered, so a tier-2 summary about one waits for it instead of overtaking it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable

MAX_WAIT = 30.0  # seconds a summary waits for the alerts it is about (a delivery that never comes: posted alone)


class InFlight:
    """Alert ids between the router's decision (any thread) and the end of their delivery to the sinks (the loop)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()  # decide() runs on pipeline threads
        self._ids: dict[str, float] = {}
        self._done = asyncio.Condition()

    def expect(self, alert_id: str) -> None:
        """An alert was let through and will be delivered (any thread)."""
        now = self._clock()
        with self._lock:
            for stale in [k for k, t in self._ids.items() if now - t > MAX_WAIT]:
                del self._ids[stale]  # decided, then never delivered (the loop was gone): no one waits for it
            self._ids[alert_id] = now

    async def delivered(self, alert_id: str) -> None:
        """Its sinks have all run (the loop)."""
        with self._lock:
            self._ids.pop(alert_id, None)
        async with self._done:
            self._done.notify_all()

    def pending(self, alert_ids: Iterable[str]) -> bool:
        with self._lock:
            return any(a in self._ids for a in alert_ids)

    async def wait(self, alert_ids: tuple[str, ...], timeout: float = MAX_WAIT) -> bool:
        """Wait until none of these alerts is still being delivered; False if one still is after `timeout`."""
        if not self.pending(alert_ids):
            return True
        try:
            async with self._done:
                await asyncio.wait_for(self._done.wait_for(lambda: not self.pending(alert_ids)), timeout)
        except TimeoutError:
            return False
        return True
