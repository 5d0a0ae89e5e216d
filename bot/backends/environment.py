"""The process environment `inference` reads at import time: the offline-detector plugin and safe defaults."""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING

from bot.backends.policy.allowlist import NEEDS_ENV_ACCESS, NEEDS_LOCAL_STORAGE
from bot.backends.policy.check import extra_blocks

if TYPE_CHECKING:
    from bot.config import InferenceConfig

PLUGIN_MODULE = "bot.backends.builtin_blocks"
# The bot's own credentials (Claude, Slack): no inference process needs them, so the server drops them.
BOT_SECRETS = ("ANTHROPIC_API_KEY", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN")

# Set once, before inference's env module is imported (it reads these at import time).
_INFERENCE_ENV_DEFAULTS = {
    "DISABLE_VERSION_CHECK": "True",  # the check calls api.github.com: offline it only costs start-up time
    "CORE_MODEL_GAZE_ENABLED": "False",  # deprecated stub; silences a warning at import
    "ENABLE_PROMETHEUS": "False",
}


def ensure_inference_env(inference: InferenceConfig | None = None) -> None:
    """Register the offline-detector plugin and safe defaults in os.environ; idempotent.

    This is the one place WORKFLOWS_PLUGINS is set: inference's blocks loader reads it from the environment,
    so every path that loads blocks (direct backend, server, tests) calls this first. `inference` is the
    operator's config (None: the stand-alone server, which has none, so everything optional stays off).
    """
    plugins = [p for p in os.environ.get("WORKFLOWS_PLUGINS", "").split(",") if p]
    if PLUGIN_MODULE not in plugins:
        os.environ["WORKFLOWS_PLUGINS"] = ",".join([*plugins, PLUGIN_MODULE])
    for key, value in _INFERENCE_ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    for key, allowed in engine_flags(inference).items():
        os.environ[key] = str(allowed)
    warnings.filterwarnings("ignore", module=r"inference(\..*)?")


def engine_flags(inference: InferenceConfig | None) -> dict[str, bool]:
    """inference's process-wide gates, on only when the operator opted into a block that needs them.

    They back the block allowlist (bot/backends/policy): even a block that slipped past it could not read the
    environment (Slack and Anthropic keys live there) or the disk. Set, not defaulted: an inherited
    ALLOW_...=True must not switch them back on.
    """
    extras = extra_blocks(inference) if inference is not None else frozenset()
    return {
        # Custom Python blocks execute code from the spec.
        "ALLOW_CUSTOM_PYTHON_EXECUTION_IN_WORKFLOWS": bool(inference and inference.allow_custom_python),
        "ALLOW_WORKFLOW_BLOCKS_ACCESSING_ENVIRONMENTAL_VARIABLES": bool(extras & NEEDS_ENV_ACCESS),
        "ALLOW_WORKFLOW_BLOCKS_ACCESSING_LOCAL_STORAGE": bool(extras & NEEDS_LOCAL_STORAGE),
    }
