"""Where settings come from: the documented env vars, config.yaml with ${VAR} placeholders; one-line errors."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

DEFAULT_WORKSPACE = "~/.vision_agent"

# env var -> dotted path in Settings. Env always wins over config.yaml.
ENV_MAP: dict[str, str] = {
    "ANTHROPIC_API_KEY": "llm.api_key",
    "ANTHROPIC_BASE_URL": "llm.base_url",
    "VISION_AGENT_MODEL": "llm.model",
    "VISION_AGENT_LLM_TIMEOUT": "llm.request_timeout",
    "VISION_AGENT_LLM_TURN_TIMEOUT": "llm.turn_timeout",
    "VISION_AGENT_WORKSPACE": "workspace",
    "VISION_AGENT_BACKEND": "inference.backend",
    "INFERENCE_SERVER_URL": "inference.server_url",
    "ROBOFLOW_API_KEY": "inference.api_key",
    "VISION_AGENT_MEDIA_DIRS": "inference.media_dirs",
    "VISION_AGENT_MAX_PIXELS": "media.max_pixels",
    "VISION_AGENT_HEARTBEAT_MINUTES": "heartbeat.interval_minutes",
    "VISION_AGENT_ALERT_CHANNEL": "slack.alert_channel",
    "SLACK_BOT_TOKEN": "slack.bot_token",
    "SLACK_APP_TOKEN": "slack.app_token",
    "SLACK_API_URL": "slack.api_url",
    "VISION_AGENT_MCP_TOKEN": "mcp.token",
    "VISION_AGENT_WEBHOOK_URL": "webhook.url",
    "VISION_AGENT_WEBHOOK_TOKEN": "webhook.token",
    "VISION_AGENT_API_TOKEN": "api.token",
    "VISION_AGENT_STORAGE": "storage.backend",
    "VISION_AGENT_STANDBY": "storage.standby",
}


class SettingsError(Exception):
    """A setting has an invalid value; str() is one line naming it."""


def _set_dotted(d: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for p in parents:
        d = d.setdefault(p, {})
    d[leaf] = value


def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in top.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _expand_user(path: str, environ: Mapping[str, str]) -> str:
    """'~' from the given environment's HOME (load_settings(environ) must not read the real one)."""
    if path == "~" or path.startswith("~/"):
        home = environ.get("HOME") or os.path.expanduser("~")
        return home.rstrip("/") + path[1:]
    return os.path.expanduser(path)


def workspace_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(_expand_user(env.get("VISION_AGENT_WORKSPACE") or DEFAULT_WORKSPACE, env))


_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_UNSET = object()


# Settings that restrict who may do what. Written as ${VAR} with VAR unset, dropping them would fall back to the open
# default (an empty allowlist lets everyone in, read_only off gives MCP clients write tools): start-up stops instead.
FAIL_CLOSED = frozenset({"slack.allowed_users", "slack.allowed_channels", "mcp.read_only", "mcp.token", "api.token",
                         "webhook.token"})


def _resolve(node: Any, environ: Mapping[str, str], path: tuple[str, ...] = ()) -> Any:
    """Replace ${VAR} / ${VAR:-default} in config.yaml strings; a value naming an unset variable is dropped, except
    in a FAIL_CLOSED setting, where it is a SettingsError naming the setting and the variable."""
    if isinstance(node, dict):
        out = {k: _resolve(v, environ, (*path, str(k))) for k, v in node.items()}
        return {k: v for k, v in out.items() if v is not _UNSET}
    if isinstance(node, list):
        return [v for v in (_resolve(x, environ, path) for x in node) if v is not _UNSET]
    if not isinstance(node, str) or "${" not in node:
        return node
    unset: list[str] = []

    def sub(m: re.Match[str]) -> str:
        val = environ.get(m.group(1)) or m.group(2)
        if val is None:
            unset.append(m.group(1))
            return ""
        return val

    text = _PLACEHOLDER.sub(sub, node)
    # In a restriction, a value of only spaces or commas (BOSSES=" ", ${BOSSES:-}) is as bad as an unset one: an
    # allowlist of nobody reads as everyone.
    if ".".join(path) in FAIL_CLOSED and (unset or not re.search(r"[A-Za-z0-9]", text)):
        var = unset[0] if unset else ((m := _PLACEHOLDER.search(node)) and m[1]) or node
        raise SettingsError(f"config.yaml: {'.'.join(path)} uses ${{{var}}}, which is not set (or empty); set "
                            f"{var} or write the value itself (a restriction left unset would not fall back to open)")
    return _UNSET if unset else text


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


def gather(environ: Mapping[str, str]) -> dict[str, Any]:
    """Raw nested settings: config.yaml (placeholders resolved) with the env vars merged over it."""
    ws = workspace_path(environ)
    data: dict[str, Any] = {}
    cfg_file = ws / "config.yaml"
    if cfg_file.is_file():
        data = _resolve(_read_yaml(cfg_file), environ)
        ws_section = data.pop("workspace", None) or {}
        data.pop("interface", None)  # accepted and ignored: the adapter (Slack, CLI, MCP) is chosen by the command
        ws_path = ws_section.get("path") if isinstance(ws_section, dict) else ws_section
        if ws_path and not environ.get("VISION_AGENT_WORKSPACE"):
            ws = Path(_expand_user(str(ws_path), environ))
    env_data: dict[str, Any] = {}
    for var, dotted in ENV_MAP.items():
        val = environ.get(var)
        if val is not None and val.strip() != "":
            _set_dotted(env_data, dotted, val.strip())
    merged = deep_merge(data, env_data)
    merged.setdefault("workspace", str(ws))
    inf = merged.get("inference")
    if isinstance(inf, dict) and isinstance(inf.get("media_dirs"), (str, list)):
        dirs = inf["media_dirs"].split(":") if isinstance(inf["media_dirs"], str) else inf["media_dirs"]
        inf["media_dirs"] = [_expand_user(str(d).strip(), environ) for d in dirs if str(d).strip()]
    return merged


_SECRET_HINTS = ("key", "token", "secret")


def describe_error(err: Mapping[str, Any], environ: Mapping[str, str]) -> str:
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
