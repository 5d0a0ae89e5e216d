"""Settings: env vars over config.yaml over defaults; bad values fail with one line naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import ENV_MAP, SettingsError, load_settings


def _yaml(ws: Path, text: str) -> None:
    (ws / "config.yaml").write_text(text, encoding="utf-8")


def test_defaults(workspace_dir: Path) -> None:
    s = load_settings({"VISION_AGENT_WORKSPACE": str(workspace_dir)})
    assert s.workspace == workspace_dir
    assert s.llm.model == "claude-sonnet-4-5" and s.llm.api_key is None
    assert s.inference.backend == "direct" and s.heartbeat.interval_minutes == 15
    assert s.slack.api_url == "https://slack.com/api/"


def test_default_workspace_is_home_dot_vision_agent() -> None:
    assert load_settings({"HOME": "/nonexistent-home"}).workspace == Path("/nonexistent-home/.vision_agent")


def test_every_documented_env_var_is_honoured(workspace_dir: Path, tmp_path: Path) -> None:
    env = {
        "VISION_AGENT_WORKSPACE": str(workspace_dir),
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:1234",
        "VISION_AGENT_MODEL": "claude-haiku-4-5",
        "VISION_AGENT_LLM_TIMEOUT": "5",
        "VISION_AGENT_LLM_TURN_TIMEOUT": "90.5",
        "VISION_AGENT_BACKEND": "http",
        "INFERENCE_SERVER_URL": "http://127.0.0.1:9009/",
        "ROBOFLOW_API_KEY": "rf-test",
        "VISION_AGENT_MEDIA_DIRS": f"{tmp_path}/a:{tmp_path}/b",
        "VISION_AGENT_MAX_PIXELS": "12000000",
        "VISION_AGENT_HEARTBEAT_MINUTES": "0.5",
        "VISION_AGENT_ALERT_CHANNEL": "#alerts",
        "SLACK_BOT_TOKEN": "xoxb-test-token",
        "SLACK_APP_TOKEN": "xapp-test-token",
        "SLACK_API_URL": "http://127.0.0.1:5555/api",
        "VISION_AGENT_MCP_TOKEN": "mcp-test-token",
        "VISION_AGENT_WEBHOOK_URL": "https://hooks.example.com/vision",
        "VISION_AGENT_WEBHOOK_TOKEN": "hook-test-token",
        "VISION_AGENT_API_TOKEN": "api-test-token",
        "VISION_AGENT_STORAGE": "sqlite",
        "VISION_AGENT_STANDBY": "true",
    }
    assert set(env) == set(ENV_MAP)  # the test covers the whole documented list
    s = load_settings(env)
    assert s.llm.api_key.get_secret_value() == "sk-ant-test"
    assert s.llm.base_url == "http://127.0.0.1:1234"
    assert s.llm.model == "claude-haiku-4-5"
    assert s.llm.request_timeout == 5 and s.llm.turn_timeout == 90.5
    assert s.inference.backend == "http"
    assert s.inference.server_url == "http://127.0.0.1:9009"
    assert s.inference.api_key.get_secret_value() == "rf-test"
    assert s.media_dirs == [tmp_path / "a", tmp_path / "b"]
    assert s.media.max_pixels == 12_000_000
    assert s.heartbeat.interval_minutes == 0.5
    assert s.slack.alert_channel == "#alerts"
    assert s.slack.bot_token.get_secret_value() == "xoxb-test-token"
    assert s.mcp.token.get_secret_value() == "mcp-test-token"
    assert s.webhook.url == "https://hooks.example.com/vision"
    assert s.webhook.token.get_secret_value() == "hook-test-token"
    assert s.api.token.get_secret_value() == "api-test-token"
    assert s.storage.backend == "sqlite" and s.storage.standby is True
    assert s.slack.app_token.get_secret_value() == "xapp-test-token"
    assert s.slack.api_url == "http://127.0.0.1:5555/api/"  # slack_sdk needs the trailing slash


def test_media_dirs_split_skip_empty_and_expand_home() -> None:
    s = load_settings({"HOME": "/h", "VISION_AGENT_MEDIA_DIRS": "~/videos::/srv/cams: "})
    assert s.media_dirs == [Path("/h/videos"), Path("/srv/cams")]


def test_env_wins_over_config_yaml(workspace_dir: Path) -> None:
    _yaml(workspace_dir, "llm:\n  model: claude-from-yaml\n  max_tokens: 1000\nheartbeat:\n  interval_minutes: 30\n")
    env = {"VISION_AGENT_WORKSPACE": str(workspace_dir)}
    s = load_settings(env)
    assert (s.llm.model, s.llm.max_tokens, s.heartbeat.interval_minutes) == ("claude-from-yaml", 1000, 30)
    s = load_settings({**env, "VISION_AGENT_MODEL": "claude-from-env", "VISION_AGENT_HEARTBEAT_MINUTES": "0"})
    assert (s.llm.model, s.llm.max_tokens, s.heartbeat.interval_minutes) == ("claude-from-env", 1000, 0)


def test_several_inference_servers_from_env_or_config_yaml(workspace_dir: Path) -> None:
    env = {"VISION_AGENT_WORKSPACE": str(workspace_dir)}
    s = load_settings({**env, "INFERENCE_SERVER_URL": "http://a:9001, http://b:9001/,,http://a:9001"})
    assert (s.inference.server_url, s.inference.server_urls) == ("http://a:9001", ["http://a:9001", "http://b:9001"])
    _yaml(workspace_dir, "inference:\n  server_url: http://x:1\n  server_urls: [http://c:9001, http://d:9001]\n")
    s = load_settings(env)  # the list replaces the single server (the generated config.yaml sets server_url)
    assert (s.inference.server_url, s.inference.server_urls) == ("http://c:9001", ["http://c:9001", "http://d:9001"])
    with pytest.raises(SettingsError, match="inference.server_urls.*must be an http"):
        _yaml(workspace_dir, "inference:\n  server_urls: [http://c:9001, 'gpu:9001']\n")
        load_settings(env)


def test_empty_env_var_does_not_override_yaml(workspace_dir: Path) -> None:
    _yaml(workspace_dir, "inference:\n  backend: http\n")
    s = load_settings({"VISION_AGENT_WORKSPACE": str(workspace_dir), "VISION_AGENT_BACKEND": ""})
    assert s.inference.backend == "http"


def test_yaml_placeholders_resolved_from_env_or_ignored(workspace_dir: Path) -> None:
    _yaml(workspace_dir, (
        "llm:\n  api_key: ${MY_KEY}\n  model: ${MY_MODEL:-claude-fallback}\n"
        "inference:\n  server_url: http://${INF_HOST}:9001\n"
        "slack:\n  alert_channel: '#${TEAM}-alerts'\n"
    ))
    env = {"VISION_AGENT_WORKSPACE": str(workspace_dir), "MY_KEY": "sk-ant-from-placeholder", "TEAM": "ops"}
    s = load_settings(env)
    assert s.llm.api_key.get_secret_value() == "sk-ant-from-placeholder"
    assert s.llm.model == "claude-fallback"
    assert s.inference.server_url == "http://127.0.0.1:9001"  # INF_HOST unset: the key is ignored
    assert s.slack.alert_channel == "#ops-alerts"
    s = load_settings({"VISION_AGENT_WORKSPACE": str(workspace_dir)})
    assert s.llm.api_key is None and s.slack.alert_channel is None


def test_seed_appendix_c_config_loads(workspace_dir: Path) -> None:
    _yaml(workspace_dir, """
llm:
  provider: anthropic
  model: claude-sonnet-4-5
  api_key: ${ANTHROPIC_API_KEY}
  max_tokens: 4096
  thinking:
    enabled: false
    budget_tokens: 4096
  cost_limit_daily: 10.00
inference:
  backend: http
  server_url: http://localhost:9001
  api_key: ${ROBOFLOW_API_KEY}
workspace:
  path: WS_PATH
heartbeat:
  enabled: true
  interval_minutes: 15
monitoring:
  escalation_confidence: 0.5
  max_results_per_consume: 10
  result_image_max_dimension: 640
interface:
  type: cli
""".replace("WS_PATH", str(workspace_dir)))
    s = load_settings({"VISION_AGENT_WORKSPACE": str(workspace_dir), "ANTHROPIC_API_KEY": "sk-ant-x"})
    assert s.inference.backend == "http" and s.llm.api_key.get_secret_value() == "sk-ant-x"
    assert s.inference.api_key is None


@pytest.mark.parametrize(
    ("var", "value", "expected"),
    [
        ("VISION_AGENT_HEARTBEAT_MINUTES", "soon", "invalid setting VISION_AGENT_HEARTBEAT_MINUTES (heartbeat.interval_minutes): "),
        ("VISION_AGENT_HEARTBEAT_MINUTES", "-5", "greater than or equal to 0"),
        ("VISION_AGENT_BACKEND", "grpc", "invalid setting VISION_AGENT_BACKEND (inference.backend): "),
        ("INFERENCE_SERVER_URL", "localhost:9001", "INFERENCE_SERVER_URL (inference.server_url): must be an http"),
        ("INFERENCE_SERVER_URL", "http://a:1,b:2", "INFERENCE_SERVER_URL (inference.server_url): must be an http"),
        ("ANTHROPIC_BASE_URL", "ftp://x", "ANTHROPIC_BASE_URL (llm.base_url)"),
        ("SLACK_API_URL", "slack.com", "SLACK_API_URL (slack.api_url)"),
    ],
)
def test_invalid_env_value_is_one_line_naming_it(workspace_dir: Path, var: str, value: str, expected: str) -> None:
    with pytest.raises(SettingsError) as exc:
        load_settings({"VISION_AGENT_WORKSPACE": str(workspace_dir), var: value})
    msg = str(exc.value)
    assert "\n" not in msg and expected in msg


def test_invalid_yaml_value_names_the_file(workspace_dir: Path) -> None:
    _yaml(workspace_dir, "heartbeat:\n  interval_minutes: often\n  timezone: Mars/Olympus\n")
    with pytest.raises(SettingsError) as exc:
        load_settings({"VISION_AGENT_WORKSPACE": str(workspace_dir)})
    msg = str(exc.value)
    assert msg.startswith("invalid setting heartbeat.interval_minutes (in ") and "config.yaml" in msg
    assert "VISION_AGENT_HEARTBEAT_MINUTES" not in msg  # the bad value came from the file, not the env


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("llm:\n  modle: x\n", "unknown setting llm.modle"),
        ("heartbeat:\n  timezone: Mars/Olympus\n", "unknown time zone 'Mars/Olympus'"),
        ("monitoring:\n  quiet_hours: '22-06'\n", "must look like 22:00-06:00"),
        ("llm: [unclosed\n", "not valid YAML at line"),
        ("- just\n- a list\n", "must be a mapping of sections"),
    ],
)
def test_bad_config_yaml_is_one_clear_line(workspace_dir: Path, yaml_text: str, expected: str) -> None:
    _yaml(workspace_dir, yaml_text)
    with pytest.raises(SettingsError) as exc:
        load_settings({"VISION_AGENT_WORKSPACE": str(workspace_dir)})
    assert expected in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize(("yaml_text", "env", "setting"), [
    ("slack:\n  allowed_users: ${BOSSES}\n", {"BOSSES": " "}, "slack.allowed_users"),
    ("slack:\n  allowed_users: ${BOSSES}\n", {"BOSSES": " , "}, "slack.allowed_users"),
    ("slack:\n  allowed_users: ${BOSSES:-}\n", {}, "slack.allowed_users"),
    ("slack:\n  allowed_channels: ['${ROOM}']\n", {"ROOM": "\t"}, "slack.allowed_channels"),
    ("mcp:\n  token: ${MCP_T}\n", {"MCP_T": "  "}, "mcp.token"),
    ("api:\n  token: ${API_T}\n", {"API_T": " "}, "api.token"),
])
def test_a_restriction_whose_variable_holds_only_blanks_stops_start_up(workspace_dir: Path, yaml_text: str,
                                                                       env: dict[str, str], setting: str) -> None:
    """A variable set to spaces or commas gives an allowlist of nobody, which reads as everyone: refused like unset."""
    _yaml(workspace_dir, yaml_text)
    with pytest.raises(SettingsError) as err:
        load_settings({"VISION_AGENT_WORKSPACE": str(workspace_dir), **env})
    assert setting in str(err.value) and "not set (or empty)" in str(err.value) and "\n" not in str(err.value)


def test_secrets_never_appear_in_errors(workspace_dir: Path) -> None:
    _yaml(workspace_dir, "slack:\n  bot_token: [xoxb-secret-value]\n")
    with pytest.raises(SettingsError) as exc:
        load_settings({"VISION_AGENT_WORKSPACE": str(workspace_dir)})
    assert "slack.bot_token" in str(exc.value) and "xoxb-secret-value" not in str(exc.value)


@pytest.mark.parametrize(("yaml_text", "setting"), [
    ("slack:\n  allowed_users: ['${BOSS_ID}']\n", "slack.allowed_users"),
    ("slack:\n  allowed_users: ${BOSSES}\n", "slack.allowed_users"),
    ("slack:\n  allowed_channels: ['C0OPS', '${SECOND_ROOM}']\n", "slack.allowed_channels"),
    ("mcp:\n  read_only: ${MCP_READ_ONLY}\n", "mcp.read_only"),
])
def test_a_restriction_naming_an_unset_variable_stops_start_up(workspace_dir: Path, yaml_text: str,
                                                                setting: str) -> None:
    _yaml(workspace_dir, yaml_text)
    with pytest.raises(SettingsError) as err:
        load_settings({"VISION_AGENT_WORKSPACE": str(workspace_dir)})
    line = str(err.value)
    assert setting in line and "not set" in line and "\n" not in line
    set_env = {"BOSS_ID": "U0BOSS", "BOSSES": "U0BOSS", "SECOND_ROOM": "C0TWO", "MCP_READ_ONLY": "true"}
    s = load_settings({"VISION_AGENT_WORKSPACE": str(workspace_dir), **set_env})  # set, it loads as written
    assert s.slack.allowed_users in ([], ["U0BOSS"]) and (s.mcp.read_only or setting != "mcp.read_only")
    if setting == "slack.allowed_users":
        assert s.slack.allowed_users == ["U0BOSS"]
