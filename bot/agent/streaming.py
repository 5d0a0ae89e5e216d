"""One model call run beside its text stream: the loop yields TEXT_DELTA events while the answer is generated."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from bot.events import AgentEvent, EventType
from bot.llm.send import TextSink


class TextStream:
    """Starts `call(sink)` as a task; iterating yields its text as TEXT_DELTA events until it ends; `result()`
    then gives the call's value (or raises its exception). Closing the iteration early cancels the call."""

    def __init__(self, call: Callable[[TextSink], Awaitable[Any]]) -> None:
        self._pieces: asyncio.Queue[str | None] = asyncio.Queue()
        self._task = asyncio.ensure_future(call(self._pieces.put_nowait))

    async def __aiter__(self) -> AsyncIterator[AgentEvent]:
        try:
            while not self._task.done() or not self._pieces.empty():
                if self._pieces.empty():
                    getter = asyncio.ensure_future(self._pieces.get())
                    try:
                        await asyncio.wait({getter, self._task}, return_when=asyncio.FIRST_COMPLETED)
                    except asyncio.CancelledError:  # Stop or shutdown while waiting: no getter left pending
                        getter.cancel()
                        raise
                    if not getter.done():
                        getter.cancel()
                        continue
                    piece = getter.result()
                else:
                    piece = self._pieces.get_nowait()
                yield _delta(piece)
        finally:
            if not self._task.done():  # the turn was cancelled (Stop, shutdown): the call goes with it
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)

    def result(self) -> Any:
        return self._task.result()


def _delta(piece: str | None) -> AgentEvent:
    if piece is None:
        return AgentEvent(EventType.TEXT_DELTA, {"text": "", "restart": True})
    return AgentEvent(EventType.TEXT_DELTA, {"text": piece})
