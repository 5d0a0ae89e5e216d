"""One Settings object: environment variables over the workspace config.yaml over defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

DEFAULT_WORKSPACE = "~/.vision_agent"

# env var -> dotted path in Settings. Env always wins over config.yaml.
ENV_MAP: dict[str, str] = {
    "ANTHROPIC_API_KEY": "llm.api_key",
    "ANTHROPIC_BASE_URL": "llm.base_url",
    "VISION_AGENT_MODEL": "llm.model",
    "VISION_AGENT_WORKSPACE": "workspace",
    "VISION_AGENT_BACKEND": "inference.backend",
    "INFERENCE_SERVER_URL": "inference.server_url",
    "ROBOFLOW_API_KEY": "inference.api_key",
    "VISION_AGENT_MEDIA_DIRS": "inference.media_dirs",
    "VISION_AGENT_HEARTBEAT_MINUTES": "heartbeat.interval_minutes",
    "VISION_AGENT_ALERT_CHANNEL": "slack.alert_channel",
    "SLACK_BOT_TOKEN": "slack.bot_token",
    "SLACK_APP_TOKEN": "slack.app_token",
    "SLACK_API_URL": "slack.api_url",
}


class SettingsError(Exception):
    """A setting has an invalid value; str() is one line naming it."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
            return [p for p in v.split(":") if p.strip()]
        return v


class HeartbeatConfig(_Section):
    enabled: bool = True
    interval_minutes: float = Field(15.0, ge=0)  # 0 = off; fractions allowed
    daily_llm_cap: int = Field(96, ge=0)  # tier-2 (LLM) heartbeat calls per day
    timezone: str = "UTC"
    active_hours: str | None = None  # e.g. "07:00-22:00"; outside them no tier-2 calls


class MonitoringConfig(_Section):
    escalation_confidence: float = Field(0.5, ge=0, le=1)
    max_results_per_consume: int = Field(10, ge=1)
    result_image_max_dimension: int = Field(640, ge=64)
    result_buffer_size: int = Field(64, ge=1)
    alert_cooldown_seconds: float = Field(300.0, ge=0)
    quiet_hours: str | None = None  # e.g. "22:00-06:00": alerts logged, not posted


class SlackConfig(_Section):
    bot_token: SecretStr | None = None
    app_token: SecretStr | None = None
    api_url: str = "https://slack.com/api/"
    alert_channel: str | None = None
    allowed_users: list[str] = []  # empty = everyone in the workspace may control pipelines
    allowed_channels: list[str] = []
    max_image_bytes: int = Field(20 * 1024 * 1024, ge=1)
    health_port: int | None = Field(None, ge=0, le=65535)


class WorkspaceSection(_Section):
    path: str | None = None


def _set_dotted(d: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for p in parents:
        d = d.setdefault(p, {})
    d[leaf] = value


def _deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in top.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def workspace_path(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("VISION_AGENT_WORKSPACE") or DEFAULT_WORKSPACE).expanduser()


class _MappedEnvSource(PydanticBaseSettingsSource):
    """Reads the documented env vars (flat names) into the nested settings, and config.yaml beneath them."""

    def __init__(self, settings_cls: type[BaseSettings], environ: dict[str, str] | None) -> None:
        super().__init__(settings_cls)
        self._environ = os.environ if environ is None else environ

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        ws = workspace_path(self._environ)
        data: dict[str, Any] = {}
        cfg_file = ws / "config.yaml"
        if cfg_file.is_file():
            try:
                loaded = yaml.safe_load(cfg_file.read_text(encoding="utf-8")) or {}
            except yaml.YAMLError as exc:
                raise SettingsError(f"{cfg_file}: not valid YAML ({exc.__class__.__name__}); fix or delete it") from exc
            if not isinstance(loaded, dict):
                raise SettingsError(f"{cfg_file}: must be a mapping of sections (llm:, inference:, ...)")
            ws_section = loaded.pop("workspace", None) or {}
            loaded.pop("interface", None)  # seed App. C key; the adapter is chosen by the command
            data = loaded
            if isinstance(ws_section, dict) and ws_section.get("path") and "VISION_AGENT_WORKSPACE" not in self._environ:
                ws = Path(str(ws_section["path"])).expanduser()
        env_data: dict[str, Any] = {}
        for var, dotted in ENV_MAP.items():
            val = self._environ.get(var)
            if val is not None and val != "":
                _set_dotted(env_data, dotted, val)
        merged = _deep_merge(data, env_data)
        merged.setdefault("workspace", str(ws))
        return merged


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
        return (init_settings, _MappedEnvSource(settings_cls, _ENVIRON_OVERRIDE.get("env")))


_ENVIRON_OVERRIDE: dict[str, dict[str, str] | None] = {"env": None}


def _setting_name(loc: tuple[Any, ...]) -> str:
    dotted = ".".join(str(p) for p in loc)
    for var, path in ENV_MAP.items():
        if dotted == path or dotted.startswith(path + "."):
            return f"{var} ({dotted})"
    return dotted


def load_settings(environ: dict[str, str] | None = None, **overrides: Any) -> Settings:
    """Load settings; raise SettingsError whose message is one line naming the bad setting."""
    _ENVIRON_OVERRIDE["env"] = environ
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise SettingsError(f"invalid setting {_setting_name(err['loc'])}: {err['msg']}") from None
    finally:
        _ENVIRON_OVERRIDE["env"] = None
