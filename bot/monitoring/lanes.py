"""Send lanes: one FIFO per key (a channel), so writes for one channel leave in the order they were asked for."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class Lanes:
    """One send lane per key (a channel): writers holding a lane go out one at a time, in the order they asked.

    A writer that takes its lane before its first await keeps its place, whatever its later awaits (a thread hop
    to store a frame, an upload, a 429's wait) take: asyncio.Lock wakes waiters first come, first served, and a
    newcomer never jumps a queue that has waiters. Idle lanes are dropped.
    """

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[key] -= 1
            if not self._users[key]:
                del self._users[key], self._locks[key]

    def __len__(self) -> int:
        return len(self._locks)
