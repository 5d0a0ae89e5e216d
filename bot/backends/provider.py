"""The one lazy backend: built on first use (importing `inference` takes seconds), closed once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from bot.backends.base import InferenceBackend


class BackendProvider:
    """Holds the process's inference backend. `get()` builds it once (thread-safe); `close()` closes and forgets it.

    Everything that needs the backend (the pipeline manager, tools) goes through one provider, so `--help`, the
    CLI banner and the Slack connect never import `inference`.
    """

    def __init__(self, factory: Callable[[], InferenceBackend]) -> None:
        self._factory = factory
        self._backend: InferenceBackend | None = None
        self._lock = threading.Lock()
        self._loading = False

    @classmethod
    def of(cls, backend: InferenceBackend) -> BackendProvider:
        """A provider for a backend that already exists (tests, a backend shared between processes' parts)."""
        provider = cls(lambda: backend)
        provider._backend = backend
        return provider

    @property
    def built(self) -> bool:
        return self._backend is not None

    @property
    def loading(self) -> bool:
        """True while the backend is being built or loads `inference` and its detectors (10-30 s, once: the direct
        backend's `loading`), so a terminal can say what the wait is."""
        return self._loading or bool(getattr(self._backend, "loading", False))

    def get(self) -> InferenceBackend:
        if self._backend is None:
            with self._lock:
                if self._backend is None:
                    self._loading = True
                    try:
                        self._backend = self._factory()
                    finally:
                        self._loading = False
        return self._backend

    async def aget(self) -> InferenceBackend:
        """`get()` for coroutines: the first build runs on a worker thread, so the event loop (Slack acks, other
        turns) never stalls for the seconds importing `inference` takes."""
        if self._backend is not None:
            return self._backend
        return await asyncio.to_thread(self.get)

    async def close(self) -> None:
        """Close the backend if it was built; the next `get()` builds a fresh one. Safe to call twice."""
        with self._lock:
            backend, self._backend = self._backend, None
        if backend is not None:
            await backend.close()
