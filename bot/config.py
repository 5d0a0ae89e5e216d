"""One Settings object: environment variables over the workspace config.yaml over defaults."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

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

    @field_validator("api_url")
    @classmethod
    def _api_url(cls, v: str) -> str:
        # slack_sdk joins method names onto base_url, so it must end with a slash.
        return (_http_url(v) or v).rstrip("/") + "/"


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


_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_UNSET = object()


def _resolve(node: Any, environ: dict[str, str] | os._Environ) -> Any:
    """Replace ${VAR} / ${VAR:-default} in config.yaml strings; a value naming an unset variable is dropped."""
    if isinstance(node, dict):
        out = {k: _resolve(v, environ) for k, v in node.items()}
        return {k: v for k, v in out.items() if v is not _UNSET}
    if isinstance(node, list):
        return [v for v in (_resolve(x, environ) for x in node) if v is not _UNSET]
    if not isinstance(node, str) or "${" not in node:
        return node
    missing = False

    def sub(m: re.Match[str]) -> str:
        nonlocal missing
        val = environ.get(m.group(1)) or m.group(2)
        if val is None:
            missing = True
            return ""
        return val

    text = _PLACEHOLDER.sub(sub, node)
    return _UNSET if missing else text


def _read_yaml(cfg_file: Path) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(cfg_file.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise SettingsError(f"{cfg_file}: not valid YAML{where}; fix it or delete the file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{cfg_file}: cannot be read ({exc.__class__.__name__}); check its permissions") from None
    if not isinstance(loaded, dict):
        raise SettingsError(f"{cfg_file}: must be a mapping of sections (llm:, inference:, heartbeat:, ...)")
    return loaded


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
            loaded = _resolve(_read_yaml(cfg_file), self._environ)
            ws_section = loaded.pop("workspace", None) or {}
            loaded.pop("interface", None)  # seed App. C key; the adapter is chosen by the command
            data = loaded
            ws_path = ws_section.get("path") if isinstance(ws_section, dict) else ws_section
            if ws_path and not self._environ.get("VISION_AGENT_WORKSPACE"):
                ws = Path(str(ws_path)).expanduser()
        env_data: dict[str, Any] = {}
        for var, dotted in ENV_MAP.items():
            val = self._environ.get(var)
            if val is not None and val.strip() != "":
                _set_dotted(env_data, dotted, val.strip())
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


_SECRET_HINTS = ("key", "token", "secret")


def _describe(err: dict[str, Any], environ: dict[str, str] | os._Environ) -> str:
    """'invalid setting VAR (dotted): why' — naming the env var only when the value came from it."""
    dotted = ".".join(str(p) for p in err["loc"])
    name = f"{dotted} (in {workspace_path(environ) / 'config.yaml'})"
    for var, path in ENV_MAP.items():
        if (dotted == path or dotted.startswith(path + ".")) and (environ.get(var) or "").strip():
            name = f"{var} ({dotted})"
            break
    if err["type"] == "extra_forbidden":
        return f"unknown setting {name}: remove it or fix its spelling"
    msg = str(err["msg"]).removeprefix("Value error, ")
    bad = err.get("input")
    secret = any(h in dotted for h in _SECRET_HINTS)
    if not secret and isinstance(bad, (str, int, float)) and "got " not in msg:
        msg += f" (got {str(bad)[:60]!r})"
    return f"invalid setting {name}: {msg}"


def load_settings(environ: dict[str, str] | None = None, **overrides: Any) -> Settings:
    """Load settings; raise SettingsError whose message is one line naming the bad setting."""
    _ENVIRON_OVERRIDE["env"] = environ
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError(_describe(exc.errors()[0], os.environ if environ is None else environ)) from None
    finally:
        _ENVIRON_OVERRIDE["env"] = None
