"""Work done once per long text: the system prompt's files and skills and the tool definitions are the same at every
call, and masking or counting them again each turn cost ~10-12 ms of the event loop's CPU a turn (50 turns deep when
50 threads ask at once). Short texts (chat messages, log lines) are worked out each time: they rarely repeat."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import TypeVar

LONG = 2048  # characters from which a text's result is remembered
REMEMBERED = 64  # long texts remembered, the least recently used forgotten first

R = TypeVar("R")


def once_per_long_text(key: Callable[[], Hashable] | None = None) -> Callable[[Callable[[str], R]], Callable[[str], R]]:
    """Remember what `fn(text)` gave for a long text. `key()` is what else the result depends on (the secrets masked:
    one added later is masked in a text masked before it); it is asked only for a long text."""

    def wrap(fn: Callable[[str], R]) -> Callable[[str], R]:
        @functools.lru_cache(maxsize=REMEMBERED)
        def remembered(text: str, depends: Hashable) -> R:
            return fn(text)

        @functools.wraps(fn)
        def call(text: str) -> R:
            if len(text) < LONG:
                return fn(text)
            return remembered(text, key() if key is not None else None)

        return call

    return wrap
