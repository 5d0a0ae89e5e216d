"""Decoding images off the event loop, with a time limit: one slow image never stalls everyone else's commands.

A 5 MB JPEG of 36 MP with many progressive scans took 30 s to decode on the loop, past Slack's 3 s ack for every
other user. Decodes run in threads of their own (a stuck one cannot take the loop's default executor), and a
caller waits at most `media.decode_timeout_seconds`, then gets `ImageRejected` (one line). Python cannot stop the
thread, so what one decode may cost is bounded before it starts: `check_image` refuses over `media.max_pixels` and
over `MAX_JPEG_SCANS` progressive scans; `DECODERS` bounds how many run at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from bot.media.sniff import ImageRejected

T = TypeVar("T")
DECODERS = 4  # decodes at once; more wait their turn (within their caller's time limit)
_SLOTS = threading.BoundedSemaphore(DECODERS)


async def off_loop(fn: Callable[..., T], *args: Any, timeout: float, what: str = "the image") -> T:
    """fn(*args) in a decode thread; ImageRejected (one line) when it has not finished within `timeout` seconds.

    A daemon thread per decode, not a pool: one that overruns is abandoned (it cannot be stopped) without holding
    a worker that process exit would wait for.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, exc: BaseException | None) -> None:
        if not future.done():
            future.set_exception(exc) if exc is not None else future.set_result(result)

    def work() -> None:
        with _SLOTS:
            if future.done():  # the caller gave up while this waited for a slot
                return
            result, error = None, None
            try:
                result = fn(*args)
            except BaseException as exc:  # handed to the caller as is
                error = exc
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody is waiting
                loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name="image-decode", daemon=True).start()
    try:
        return await asyncio.wait_for(future, timeout)
    except TimeoutError:
        raise ImageRejected(f"{what} took longer than {timeout:g}s to decode and was skipped; send a smaller image "
                            "or a baseline (non-progressive) JPEG.") from None
