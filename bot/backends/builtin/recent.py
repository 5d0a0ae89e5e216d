"""State a builtin block keeps per video, for the most recently seen videos only (memory stays bounded)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(Generic[K, V]):
    """Values by key (a video id): `get` makes a missing one and marks it the newest; beyond `limit` the least
    recently seen is dropped. Thread-safe (a block serves several pipelines' threads)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, make: Callable[[], V]) -> V:
        with self._lock:
            value = self._values.pop(key) if key in self._values else make()
            self._values[key] = value
            while len(self._values) > self._limit:
                self._values.popitem(last=False)
            return value

    def __getitem__(self, key: K) -> V:
        """The value kept for `key`, without marking it seen (KeyError if none is kept)."""
        with self._lock:
            return self._values[key]

    def __len__(self) -> int:
        return len(self._values)
