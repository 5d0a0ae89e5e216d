"""Per-session serial queues: turns of one thread run in arrival order, different threads in parallel."""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass(order=True)
class Job:
    """One accepted message waiting for its turn. Ordered by Slack ts (monotonic within a channel)."""

    sort_key: tuple[float, int]
    session: str = field(compare=False)
    payload: Any = field(compare=False)


class SessionQueues:
    """`submit` is synchronous (call it before any await, so arrival order is kept); one worker per busy session."""

    def __init__(self, run: Callable[[Job], Awaitable[None]]) -> None:
        self._run = run
        self._pending: dict[str, list[Job]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._seq = 0

    def submit(self, session: str, ts: str, payload: Any) -> Job:
        self._seq += 1
        try:
            when = float(ts)
        except (TypeError, ValueError):
            when = float("inf")
        job = Job((when, self._seq), session, payload)
        # Two deliveries can race through the SDK; Slack's ts puts them back in the order people sent them.
        bisect.insort(self._pending.setdefault(session, []), job)
        if session not in self._workers:
            self._workers[session] = asyncio.get_running_loop().create_task(self._work(session))
        return job

    async def _work(self, session: str) -> None:
        try:
            await asyncio.sleep(0)  # let messages delivered in the same instant line up first
            while self._pending.get(session):
                job = self._pending[session].pop(0)
                try:
                    await self._run(job)
                except Exception:  # one failed turn must not stop the thread's queue
                    log.exception("turn for %s failed", session)
        finally:
            self._pending.pop(session, None)
            self._workers.pop(session, None)

    def idle(self, session: str) -> bool:
        """No turn of this session is running or queued: a message submitted now starts at once."""
        return session not in self._workers

    @property
    def busy_sessions(self) -> int:
        return len(self._workers)

    def queued(self, session: str) -> int:
        return len(self._pending.get(session, []))

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for every queued turn to finish (shutdown, tests)."""
        async def all_done() -> None:
            while self._workers:
                await asyncio.gather(*list(self._workers.values()), return_exceptions=True)

        await asyncio.wait_for(all_done(), timeout)

    async def cancel(self) -> None:
        for task in list(self._workers.values()):
            task.cancel()
        await asyncio.gather(*list(self._workers.values()), return_exceptions=True)
