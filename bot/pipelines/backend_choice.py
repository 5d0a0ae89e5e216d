"""Which backend runs each pipeline: the configured one, or another named at start (`backend=webrtc`), built lazily."""

from __future__ import annotations

import threading

from bot.backends import make_backend
from bot.backends.base import BackendError, InferenceBackend
from bot.backends.provider import BackendProvider
from bot.config import Settings

NAMES = ("direct", "http", "webrtc")


class BackendChoice:
    """The process's default backend plus, on demand, one of each other kind; remembers each pipeline's."""

    def __init__(self, default: BackendProvider, settings: Settings) -> None:
        self.default, self.settings = default, settings
        self._others: dict[str, BackendProvider] = {}
        self._of: dict[str, str] = {}  # pipeline id -> backend name, for pipelines not on the default
        self._lock = threading.Lock()

    def check(self, name: str | None) -> str | None:
        """The name if it is a backend (None: the default); BackendError with the choices otherwise."""
        if name is None or name == self.settings.inference.backend:
            return None
        if name not in NAMES:
            raise BackendError(f"unknown backend {name[:40]!r}: use one of {', '.join(NAMES)}")
        return name

    def named(self, name: str | None) -> InferenceBackend:
        if self.check(name) is None:
            return self.default.get()
        with self._lock:
            provider = self._others.get(name or "")
            if provider is None:
                inference = self.settings.inference.model_copy(update={"backend": name})
                other = self.settings.model_copy(update={"inference": inference})
                provider = self._others[name or ""] = BackendProvider(lambda: make_backend(other))
        return provider.get()

    def assign(self, pipeline_id: str, name: str | None) -> None:
        with self._lock:
            if self.check(name) is None:
                self._of.pop(pipeline_id, None)
            else:
                self._of[pipeline_id] = name or ""

    def of(self, pipeline_id: str) -> InferenceBackend:
        """The backend a pipeline runs on."""
        with self._lock:
            name = self._of.get(pipeline_id)
        return self.named(name)

    @property
    def built(self) -> bool:
        """Whether any backend besides the default one was built."""
        with self._lock:
            return any(p.built for p in self._others.values())

    async def close(self) -> None:
        with self._lock:
            others = list(self._others.values())
        for provider in others:
            await provider.close()
