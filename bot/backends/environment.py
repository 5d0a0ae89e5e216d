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
# inference registers these model families when its model table is imported (InferencePipeline imports it), and each
# one imports transformers, peft, timm or accelerate (~235 MB of the first camera's RSS) even for a pipeline of
# OpenCV detectors. Their weights come from Roboflow, so without an API key they could never load: off then, unless
# the operator turns them on (`inference.foundation_models`); an env var set by hand still wins (setdefault).
FOUNDATION_MODEL_GATES = (
    "CORE_MODEL_CLIP_ENABLED", "CORE_MODEL_PE_ENABLED", "CORE_MODEL_SAM_ENABLED", "CORE_MODEL_SAM2_ENABLED",
    "CORE_MODEL_SAM3_ENABLED", "CORE_MODEL_OWLV2_ENABLED", "CORE_MODEL_DOCTR_ENABLED", "CORE_MODEL_EASYOCR_ENABLED",
    "CORE_MODEL_TROCR_ENABLED", "CORE_MODEL_PPOCR_ENABLED", "CORE_MODEL_GROUNDINGDINO_ENABLED",
    "CORE_MODEL_YOLO_WORLD_ENABLED", "COSMOS3_ENABLED", "VJEPA2_1_ENABLED", "QWEN_2_5_ENABLED", "QWEN_3_ENABLED",
    "QWEN_3_5_ENABLED", "QWEN_3_8_ENABLED", "DEPTH_ESTIMATION_ENABLED", "SMOLVLM2_ENABLED", "MOONDREAM2_ENABLED",
    "PALIGEMMA_ENABLED", "FLORENCE2_ENABLED", "SAM3_3D_OBJECTS_ENABLED", "GLM_OCR_ENABLED",
)


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
    if inference is not None and not foundation_models(inference):
        for key in FOUNDATION_MODEL_GATES:
            os.environ.setdefault(key, "False")
    for key, allowed in engine_flags(inference).items():
        os.environ[key] = str(allowed)
    warnings.filterwarnings("ignore", module=r"inference(\..*)?")


def foundation_models(inference: InferenceConfig) -> bool:
    """Whether this process loads Roboflow's foundation models: the operator's choice, else whether a key is set."""
    if inference.foundation_models is not None:
        return inference.foundation_models
    return bool(inference.api_key and inference.api_key.get_secret_value())


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
