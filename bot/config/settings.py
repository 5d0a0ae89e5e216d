"""One Settings object: environment variables over the workspace config.yaml over defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from bot.config.sections import (  # re-exported: callers import the sections from here too
    ApiConfig,
    Cap,
    CapsConfig,
    ClipsConfig,
    HeartbeatConfig,
    InferenceConfig,
    LLMConfig,
    McpConfig,
    MediaConfig,
    MonitoringConfig,
    PipelinesConfig,
    ServersConfig,
    SlackConfig,
    StorageConfig,
    ThinkingConfig,
    WebhookConfig,
)
from bot.config.sources import (
    DEFAULT_WORKSPACE,
    ENV_MAP,
    SettingsError,
    deep_merge,
    describe_error,
    gather,
    workspace_path,
)

__all__ = [
    "DEFAULT_WORKSPACE", "ENV_MAP", "ApiConfig", "Cap", "CapsConfig", "ClipsConfig", "HeartbeatConfig", "InferenceConfig", "LLMConfig",
    "McpConfig", "MediaConfig", "MonitoringConfig", "PipelinesConfig", "ServersConfig", "Settings", "SettingsError", "SlackConfig", "StorageConfig",
    "ThinkingConfig",
    "WebhookConfig", "load_settings", "workspace_path",
]


class _MappedEnvSource(PydanticBaseSettingsSource):
    """Reads the documented env vars (flat names) into the nested settings, and config.yaml beneath them."""

    def __init__(self, settings_cls: type[BaseSettings], environ: dict[str, str] | None) -> None:
        super().__init__(settings_cls)
        self._environ = os.environ if environ is None else environ

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return gather(self._environ)


class Settings(BaseSettings):
    """All configuration. Build it with `load_settings()`; pass it down, never re-read the env."""

    model_config = SettingsConfigDict(extra="forbid")

    workspace: Path = Path(DEFAULT_WORKSPACE).expanduser()
    llm: LLMConfig = LLMConfig()
    inference: InferenceConfig = InferenceConfig()
    heartbeat: HeartbeatConfig = HeartbeatConfig()
    monitoring: MonitoringConfig = MonitoringConfig()
    slack: SlackConfig = SlackConfig()
    media: MediaConfig = MediaConfig()
    clips: ClipsConfig = ClipsConfig()
    pipelines: PipelinesConfig = PipelinesConfig()
    caps: CapsConfig = CapsConfig()
    mcp: McpConfig = McpConfig()
    webhook: WebhookConfig = WebhookConfig()
    api: ApiConfig = ApiConfig()
    servers: ServersConfig = ServersConfig()
    storage: StorageConfig = StorageConfig()

    @field_validator("workspace", mode="after")
    @classmethod
    def _expand(cls, v: Path) -> Path:
        return v.expanduser()

    @property
    def media_dirs(self) -> list[Path]:
        return [p.expanduser() for p in self.inference.media_dirs]

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings):
        # Only for a bare `Settings()`: the documented env vars and config.yaml instead of pydantic's own env rules.
        return (init_settings, _MappedEnvSource(settings_cls, None))


def load_settings(environ: dict[str, str] | None = None, **overrides: Any) -> Settings:
    """Load settings from `environ` (default os.environ) and config.yaml; `overrides` win (merged per section).

    Raises SettingsError whose message is one line naming the bad setting.
    """
    env = os.environ if environ is None else environ
    try:
        # model_validate, not Settings(): the environment is an argument, not process state, so concurrent
        # loads with different environments cannot see each other's.
        return Settings.model_validate(deep_merge(gather(env), overrides))
    except ValidationError as exc:
        raise SettingsError(describe_error(exc.errors()[0], env)) from None
