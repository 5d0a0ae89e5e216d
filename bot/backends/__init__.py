"""Inference backends: pick one from Settings; prepare the process environment before `inference` is imported."""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.backends.base import InferenceBackend
    from bot.config import Settings

PLUGIN_MODULE = "bot.backends.builtin_blocks"

# Set once, before inference's env module is imported (it reads these at import time).
_INFERENCE_ENV_DEFAULTS = {
    "DISABLE_VERSION_CHECK": "True",  # the check calls api.github.com: offline it only costs start-up time
    "CORE_MODEL_GAZE_ENABLED": "False",  # deprecated stub; silences a warning at import
    "ENABLE_PROMETHEUS": "False",
}


def ensure_inference_env(allow_custom_python: bool = False) -> None:
    """Register the offline-detector plugin and safe defaults in os.environ; idempotent.

    This is the one place WORKFLOWS_PLUGINS is set: inference's blocks loader reads it from the environment,
    so every path that loads blocks (direct backend, server, tests) calls this first.
    """
    plugins = [p for p in os.environ.get("WORKFLOWS_PLUGINS", "").split(",") if p]
    if PLUGIN_MODULE not in plugins:
        os.environ["WORKFLOWS_PLUGINS"] = ",".join([*plugins, PLUGIN_MODULE])
    for key, value in _INFERENCE_ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    # Custom Python blocks execute code from the spec; off unless the user opted in (config).
    os.environ["ALLOW_CUSTOM_PYTHON_EXECUTION_IN_WORKFLOWS"] = str(bool(allow_custom_python))
    warnings.filterwarnings("ignore", module=r"inference(\..*)?")


def make_backend(settings: Settings) -> InferenceBackend:
    """The backend named by settings.inference.backend ("direct" in-process, or "http" to an inference server)."""
    if settings.inference.backend == "http":
        from bot.backends.http import HttpBackend

        return HttpBackend(settings)
    from bot.backends.direct import DirectBackend

    return DirectBackend(settings)
