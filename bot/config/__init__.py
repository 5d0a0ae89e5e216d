"""One Settings object: environment variables over the workspace config.yaml over defaults."""

from bot.config.settings import (
    ENV_MAP,
    HeartbeatConfig,
    InferenceConfig,
    LLMConfig,
    MonitoringConfig,
    Settings,
    SettingsError,
    SlackConfig,
    ThinkingConfig,
    load_settings,
)

__all__ = [
    "ENV_MAP", "HeartbeatConfig", "InferenceConfig", "LLMConfig", "MonitoringConfig", "Settings", "SettingsError",
    "SlackConfig", "ThinkingConfig", "load_settings",
]
