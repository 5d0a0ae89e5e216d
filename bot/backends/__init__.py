"""Inference backends: pick one from Settings (the protocol is in base.py, each backend in its own folder)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.backends.base import InferenceBackend
    from bot.config import Settings


def make_backend(settings: Settings) -> InferenceBackend:
    """The backend named by settings.inference.backend ("direct" in-process, or "http" to an inference server)."""
    # Imported here, not at the top: importing either backend module is cheap, but this package is imported by
    # everything that names a result type, and only the chosen backend should load.
    if settings.inference.backend == "webrtc":
        from bot.backends.webrtc.backend import WebRtcBackend

        return WebRtcBackend(settings)
    if settings.inference.backend == "http":
        from bot.backends.http.backend import HttpBackend

        return HttpBackend(settings)
    from bot.backends.direct.backend import DirectBackend

    return DirectBackend(settings)
