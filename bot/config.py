"""One Settings object: environment variables over the workspace config.yaml over defaults."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from bot.config_sources import (
    DEFAULT_WORKSPACE,
    ENV_MAP,
    SettingsError,
    deep_merge,
    describe_error,
    gather,
    workspace_path,
)

__all__ = ["DEFAULT_WORKSPACE", "ENV_MAP", "Settings", "SettingsError", "load_settings", "workspace_path"]

class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


_WINDOW = re.compile(r"^([01]?\d|2[0-3]):[0-5]\d\s*-\s*([01]?\d|2[0-3]):[0-5]\d$")


def _http_url(v: str | None) -> str | None:
    if v is not None and not re.match(r"^https?://[^/\s]+", v):
        raise ValueError(f"must be an http:// or https:// URL, got {v!r}")
    return v


def _window(v: str | None) -> str | None:
    if v is not None and not _WINDOW.match(v.strip()):
        raise ValueError(f"must look like 22:00-06:00 (HH:MM-HH:MM), got {v!r}")
    return v.strip() if v else v


class ThinkingConfig(_Section):
    enabled: bool = False
    budget_tokens: int = Field(4096, ge=1024)


class LLMConfig(_Section):
    provider: Literal["anthropic"] = "anthropic"
    model: str = "claude-sonnet-4-5"
    api_key: SecretStr | None = None
    base_url: str | None = None
    max_tokens: int = Field(4096, ge=1)
    thinking: ThinkingConfig = ThinkingConfig()
    cost_limit_daily: float = Field(10.0, ge=0)  # USD; 0 disables LLM calls
    max_iterations: int = Field(20, ge=1)
    context_window: int = Field(200_000, ge=1000)
    max_retries: int = Field(4, ge=0)

    @field_validator("model")
    @classmethod
    def _model_named(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must name a Claude model, e.g. claude-sonnet-4-5")
        return v.strip()

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, v: str | None) -> str | None:
        return _http_url(v)


class InferenceConfig(_Section):
    backend: Literal["direct", "http"] = "direct"
    server_url: str = "http://127.0.0.1:9001"
    api_key: SecretStr | None = None
    media_dirs: list[Path] = []
    allow_custom_python: bool = False  # custom Python blocks in workflow specs run code: off by default
    request_timeout: float = Field(30.0, gt=0)

    @field_validator("media_dirs", mode="before")
    @classmethod
    def _split_dirs(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [p.strip() for p in v.split(":") if p.strip()]
        return v

    @field_validator("media_dirs", mode="after")
    @classmethod
    def _expand_dirs(cls, v: list[Path]) -> list[Path]:
        return [p.expanduser() for p in v]

    @field_validator("server_url")
    @classmethod
    def _server_url(cls, v: str) -> str:
        return _http_url(v.rstrip("/")) or v


class HeartbeatConfig(_Section):
    enabled: bool = True
    interval_minutes: float = Field(15.0, ge=0)  # 0 = off; fractions allowed
    daily_llm_cap: int = Field(96, ge=0)  # tier-2 (LLM) heartbeat calls per day
    timezone: str = "UTC"
    active_hours: str | None = None  # e.g. "07:00-22:00"; outside them no tier-2 calls

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {v!r}; use an IANA name such as UTC or Europe/Berlin") from None
        return v

    @field_validator("active_hours")
    @classmethod
    def _active(cls, v: str | None) -> str | None:
        return _window(v)


class MonitoringConfig(_Section):
    escalation_confidence: float = Field(0.5, ge=0, le=1)
    max_results_per_consume: int = Field(10, ge=1)
    result_image_max_dimension: int = Field(640, ge=64)
    result_buffer_size: int = Field(64, ge=1)
    alert_cooldown_seconds: float = Field(300.0, ge=0)
    quiet_hours: str | None = None  # e.g. "22:00-06:00": alerts logged, not posted

    @field_validator("quiet_hours")
    @classmethod
    def _quiet(cls, v: str | None) -> str | None:
        return _window(v)


class SlackConfig(_Section):
    bot_token: SecretStr | None = None
    app_token: SecretStr | None = None
    api_url: str = "https://slack.com/api/"
    alert_channel: str | None = None
    allowed_users: list[str] = []  # empty = everyone in the workspace may control pipelines
    allowed_channels: list[str] = []
    max_image_bytes: int = Field(20 * 1024 * 1024, ge=1)
    health_port: int | None = Field(None, ge=0, le=65535)
    health_host: str = "127.0.0.1"  # "0.0.0.0" in a container whose orchestrator probes from outside

    @field_validator("api_url")
    @classmethod
    def _api_url(cls, v: str) -> str:
        # slack_sdk joins method names onto base_url, so it must end with a slash.
        return (_http_url(v) or v).rstrip("/") + "/"


class WorkspaceSection(_Section):
    path: str | None = None


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
