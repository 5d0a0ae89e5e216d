"""A count of things owed (acks, first steps) and a bounded wait until none is: what feedback waits behind."""

from __future__ import annotations

import asyncio


class Owed:
    """`owe()` / `paid()` count what is owed; `wait()` returns once nothing is, or after WAIT (or at `deadline`, a
    loop time). `POLL`: re-check this often too, for owing a subclass sees without being told (None: only when
    told)."""

    WAIT = 0.25  # seconds a wait lasts at most
    POLL: float | None = None

    def __init__(self) -> None:
        self.count = 0
        self._none: asyncio.Event | None = None

    def owe(self) -> None:
        self.count += 1

    def paid(self) -> None:
        self.count = max(0, self.count - 1)
        if not self.count and self._none is not None:
            self._none.set()

    def waiting(self) -> bool:
        return bool(self.count)

    async def wait(self, deadline: float | None = None) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.WAIT if deadline is None else deadline
        while self.waiting() and (left := deadline - loop.time()) > 0:
            self._none = self._none or asyncio.Event()
            self._none.clear()
            try:
                await asyncio.wait_for(self._none.wait(), left if self.POLL is None else min(left, self.POLL))
            except TimeoutError:
                pass
