"""The sections of Settings, one pydantic model per section of config.yaml (llm, inference, ..., storage)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from bot.config.net import is_loopback
from bot.storage.base import Backend


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
    # Shares of it (bot/llm/budget.py): one Slack person, one channel; the last part only the heartbeat may use.
    user_share: float = Field(0.25, gt=0, le=1)
    channel_share: float = Field(0.5, gt=0, le=1)
    heartbeat_reserve: float = Field(0.1, ge=0, lt=1)
    max_iterations: int = Field(20, ge=1)
    context_window: int = Field(200_000, ge=1000)
    max_retries: int = Field(4, ge=0)
    # Seconds the API may stay silent in one attempt (no reply headers, or no stream event): then it is retried.
    request_timeout: float = Field(60.0, gt=0)
    # Seconds one turn may wait for the model in all (every attempt, retry wait and summary); then one line.
    turn_timeout: float = Field(180.0, gt=0)
    # One message (or tool result) larger than this is cut to its head and tail before it reaches the history.
    max_message_tokens: int = Field(30_000, ge=100)

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
    backend: Literal["direct", "http", "webrtc"] = "direct"
    server_url: str = "http://127.0.0.1:9001"  # the first server; "a,b" (INFERENCE_SERVER_URL) names several
    # Every inference server the http backend places pipelines on (bot/backends/http/servers.py); the first also
    # answers single images, blocks and validation. Set, it replaces server_url (unless that names several).
    server_urls: list[str] = []
    api_key: SecretStr | None = None
    media_dirs: list[Path] = []
    allow_custom_python: bool = False  # custom Python blocks in workflow specs run code: off by default
    # Workflow block types the operator allows beyond bot/backends/policy/allowlist.py (e.g. a webhook sink).
    allowed_extra_blocks: list[str] = []
    request_timeout: float = Field(30.0, gt=0)
    # Foundation models (Florence-2, Qwen-VL, SAM, CLIP, OCR, ...) in this process: each imports transformers and
    # friends (~235 MB). None: on when an API key is set (their weights come from Roboflow), off otherwise.
    foundation_models: bool | None = None
    # The builtin detectors skip frames where nothing moved since they last ran, repeating what they found then, and
    # still run at least every 4 s of video (bot/backends/builtin/motion_gate.py): a quiet camera costs a fraction.
    # Something that appears without moving waits up to 4 s. False: every frame runs the detector.
    motion_gate: bool = True

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
        return ",".join(_http_url(u.strip().rstrip("/")) or u for u in v.split(",") if u.strip())

    @field_validator("server_urls", mode="before")
    @classmethod
    def _split_urls(cls, v: Any) -> Any:
        return [u for u in v.split(",")] if isinstance(v, str) else v

    @field_validator("server_urls", mode="after")
    @classmethod
    def _server_urls(cls, v: list[str]) -> list[str]:
        return [_http_url(u.strip().rstrip("/")) or u for u in v if u.strip()]

    @model_validator(mode="after")
    def _one_list(self) -> InferenceConfig:
        """server_urls holds every server and server_url the first: a server_url naming several ("a,b", as
        INFERENCE_SERVER_URL may) is that list; otherwise server_urls, when set, replaces server_url."""
        from_url = "," in self.server_url or not self.server_urls
        urls = list(dict.fromkeys(self.server_url.split(",") if from_url else self.server_urls))
        object.__setattr__(self, "server_urls", urls)
        object.__setattr__(self, "server_url", urls[0])
        return self

    @field_validator("allowed_extra_blocks", mode="after")
    @classmethod
    def _block_types(cls, v: list[str]) -> list[str]:
        return [t.strip() for t in v if t.strip()]


class HeartbeatConfig(_Section):
    enabled: bool = True
    interval_minutes: float = Field(15.0, ge=0)  # 0 = off; fractions allowed
    daily_llm_cap: int = Field(96, ge=0)  # tier-2 (LLM) heartbeat calls per day
    timezone: str = "UTC"
    active_hours: str | None = None  # e.g. "07:00-22:00"; outside them no tier-2 calls
    # Turns no person asked for (heartbeat, cron) get read-only tools; a tool named here (e.g. remember) may change
    # state from them too. Frames and alert text can carry injected instructions: name as few as you can.
    unattended_tools: list[str] = Field(default_factory=list)

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
    # Saved and alert frames keep the camera's size (a 768x576 frame was cut to 640x480) unless this is set; the
    # model always sees them at <= 640 px (bot/agent/blocks.py RESULT_IMAGE_MAX).
    result_image_max_dimension: int | None = Field(None, ge=64)
    result_buffer_size: int = Field(64, ge=1)
    # Decoded frames a direct pipeline may queue (decoder + results awaiting delivery), per camera; at least one a
    # queue (bot/backends/direct/frames.py). InferencePipeline's own default queued 64 frames: +59 MB a VGA camera.
    frame_buffer_bytes: int = Field(8 * 1024 * 1024, ge=64 * 1024)
    alert_cooldown_seconds: float = Field(300.0, ge=0)
    quiet_hours: str | None = None  # e.g. "22:00-06:00": alerts logged, not posted
    false_alarm_limit: int = Field(2, ge=0)  # this many False alarm clicks on a camera+rule tighten it; 0 = never
    false_alarm_window_hours: float = Field(24.0, gt=0)  # ... within this many hours
    # Verified alerts (bot/monitoring/verify.py): the model looks at each alert's frame and the message says what it
    # saw. "on": posted at once, updated in place; "hold": posted only once the model saw it; "off": never. A route's
    # `verify=` and a rule's own win over this default. Each look is billed to the rule's owner.
    verify: Literal["off", "on", "hold"] = "off"
    verify_per_rule_hour: int = Field(30, ge=0)  # looks per camera+rule per hour; past it, alerts say "not verified"
    verify_timeout_seconds: float = Field(10.0, gt=0, le=120)  # a look longer than this: "not verified (too slow)"

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
    # People with the operator's rights in Slack: they may change or remove anyone's pipelines, rules, watches, jobs,
    # recipes and routes (everyone else only their own: bot/objects/owner.py).
    operators: list[str] = []
    # Channels any member's scheduled job or alert route may post to, besides the channel or DM it was made in.
    open_channels: list[str] = []
    max_image_bytes: int = Field(20 * 1024 * 1024, ge=1)
    health_port: int | None = Field(None, ge=0, le=65535)
    health_host: str = "127.0.0.1"  # "0.0.0.0" in a container whose orchestrator probes from outside
    # Answers stream into their thread as they are written (chat.startStream, task cards per step); false: each
    # answer is posted once the turn is over. Where Slack refuses streaming, the bot falls back by itself.
    stream_answers: bool = True
    # A streamed answer opens at once with the turn's first step (the image being looked at, the thread being read,
    # the running pipelines being checked), before the model's first token; false: it opens with the model's output.
    first_step: bool = True

    @field_validator("allowed_users", "allowed_channels", "operators", "open_channels", mode="before")
    @classmethod
    def _id_list(cls, v: object) -> object:
        # `allowed_users: ${BOSSES}` gives one string: "U0A, U0B" or "U0A U0B" is the list it means.
        return [p for p in str(v).replace(",", " ").split() if p] if isinstance(v, str) else v

    @field_validator("api_url")
    @classmethod
    def _api_url(cls, v: str) -> str:
        # slack_sdk joins method names onto base_url, so it must end with a slash.
        return (_http_url(v) or v).rstrip("/") + "/"


class MediaConfig(_Section):
    # Images are refused above this many pixels before anything decodes them (a 445 KB PNG can claim 144 MP).
    max_pixels: int = Field(40_000_000, ge=1)
    # An image decode the bot waits for (off the event loop, bot/media/decode.py); slower ones are skipped with a line.
    decode_timeout_seconds: float = Field(10.0, gt=0, le=300)


class WebhookConfig(_Section):
    """Where alerts are POSTed (bot/monitoring/webhooks/sender.py); the operator's URL, so it may be on the local network."""

    url: str | None = None
    token: SecretStr | None = None  # env only: the Bearer token and the HMAC key of the signature
    inline_frames: bool = False  # frame as base64 in the body instead of a URL on the REST API
    # Accepted for old config files, used no more: every event is sent, once, with its id (receivers drop repeats).
    dedupe_ttl_seconds: float = Field(60.0, ge=0)
    min_interval_seconds: float = Field(1.0, ge=0)  # between two posts; events arriving sooner go in the next post
    batch_max: int = Field(100, ge=1, le=1000)  # events in one post at most (1: one event per post, never a batch)
    timeout_seconds: float = Field(10.0, gt=0)
    max_attempts: int = Field(5, ge=1, le=20)  # tries of one post before the log says the receiver is not taking
    queue_size: int = Field(100, ge=1)  # events owed kept in memory; the rest wait in the event log

    @field_validator("url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        return _http_url(v.strip()) if v and v.strip() else None


class ApiConfig(_Section):
    """The REST API (bot/api/): off without a token."""

    token: SecretStr | None = None  # env VISION_AGENT_API_TOKEN only
    host: str = "127.0.0.1"
    port: int | None = Field(None, ge=0, le=65535)  # `vision-agent api` and serve; None: serve uses health_port
    public_url: str | None = None  # how webhook receivers reach the API (frame URLs); default http://host:port

    @field_validator("public_url")
    @classmethod
    def _public(cls, v: str | None) -> str | None:
        return (_http_url(v.strip()) or "").rstrip("/") or None if v and v.strip() else None

    @model_validator(mode="after")
    def _token_off_loopback(self) -> ApiConfig:
        if self.token is None and not is_loopback(self.host):
            raise ValueError(f"serving the API on {self.host} needs VISION_AGENT_API_TOKEN; set it or use 127.0.0.1")
        return self


class ClipsConfig(_Section):
    """Event clips: each pipeline keeps its recent annotated frames (JPEG) so an alert can carry the seconds around it."""

    enabled: bool = True
    seconds_before: float = Field(5.0, ge=0, le=60)
    seconds_after: float = Field(3.0, ge=0, le=30)  # the clip waits this long (asynchronously) after the event
    post_first: bool = True  # the alert goes out at once, its clip follows into its thread; false: it waits for it
    fps: float = Field(5.0, gt=0, le=30)  # frames kept per second (and the clip's frame rate at most)
    buffer_bytes: int = Field(8 * 1024 * 1024, ge=64 * 1024)  # ring-buffer memory per pipeline
    max_bytes: int = Field(4 * 1024 * 1024, ge=64 * 1024)  # one clip file (Slack, webhooks); fps/quality drop to fit
    keep: int = Field(200, ge=1)  # clip files kept under WORKSPACE/clips (oldest removed)


class PipelinesConfig(_Section):
    """How many pipelines run at once (bot/pipelines/caps.py): per Slack user, and in total (the operator too)."""

    max_per_user: int = Field(4, ge=0)  # 0 = no per-user limit
    max_total: int = Field(16, ge=0)  # 0 = no limit


class Cap(_Section):
    """How many objects of one kind may exist: per person, and in total (the operator's count towards the total and
    are held by it, never by the per-person cap); 0 = no limit."""

    per_person: int = Field(ge=0)
    total: int = Field(ge=0)


class CapsConfig(_Section):
    """What members create, capped per kind (bot/objects/caps.py); pipelines: the `pipelines` section."""

    rule: Cap = Cap(per_person=20, total=200)
    watch: Cap = Cap(per_person=20, total=100)
    job: Cap = Cap(per_person=5, total=50)
    recipe: Cap = Cap(per_person=20, total=200)
    route: Cap = Cap(per_person=10, total=100)
    note: Cap = Cap(per_person=100, total=1000)  # memory notes a day


class ServersConfig(_Section):
    """Limits for the HTTP servers (REST/health in bot/api/limits.py, MCP in bot/mcp/limits.py): a client that sends
    slowly, or opens connections and never finishes them, cannot hold the server or its file descriptors."""

    header_timeout_seconds: float = Field(10.0, gt=0, le=300)  # request line + headers, each request
    body_timeout_seconds: float = Field(30.0, gt=0, le=3600)  # the whole body once the headers are in
    max_connections: int = Field(256, ge=2, le=10_000)  # per server; at the cap the oldest unfinished one goes
    allowed_hosts: list[str] = []  # MCP over HTTP: Host/Origin names besides loopback and mcp.host (DNS rebinding)


class McpConfig(_Section):
    """`vision-agent mcp` (bot/mcp/): MCP clients act as the operator; read_only exposes only tools that change nothing."""

    read_only: bool = False
    token: SecretStr | None = None  # env VISION_AGENT_MCP_TOKEN only; required over HTTP
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)
    serve_port: int | None = Field(None, ge=1, le=65535)  # `serve --mcp-port`: MCP over HTTP beside Slack


class StorageConfig(_Section):
    """Where routes, mutes, rules, cron jobs and posted alerts live (bot/storage/): one JSON file per store (tinydb),
    or one SQLite file per store (sqlite), which several processes on one machine may share."""

    backend: Backend = "tinydb"
    # A second long-running process on a held workspace waits and takes over when the holder exits (workspace/owner.py)
    standby: bool = False


class WorkspaceSection(_Section):
    path: str | None = None
