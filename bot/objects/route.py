"""An alert route as a member sets one (`/vision route`, PUT /api/routes): a camera's alerts to a channel."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from bot.objects.base import Spec
from bot.objects.rule import CameraRef

_CHANNEL = re.compile(r"^(?:<#(?P<ref>[A-Z0-9]+)(?:\|[^>]*)?>|#?(?P<name>[\w.-]{1,80}))$")


def channel_id(raw: str) -> str:
    """`<#C1|ops>` -> C1; `#ops`, `C1` as given (ValueError for anything else)."""
    m = _CHANNEL.match(raw.strip())
    if not m:
        raise ValueError(f"is a Slack channel (#ops, or its id C0123), not {raw[:40]!r}")
    return m["ref"] or raw.strip()


class RouteSpec(Spec):
    """What routing alerts asks for: the channel, the camera (None: every camera), and whether its alerts are verified."""

    REFUSALS: ClassVar[dict[str, str]] = {
        "verify": "verify is on (the model checks each alert after it is posted), hold (an alert is posted only "
                  "once the model saw it) or off, e.g. verify=hold"}

    channel: str = Field(max_length=100, description="Slack channel id or #name")
    camera: CameraRef | None = Field(None, description="The camera whose alerts go there (default: every camera)")
    verify: Literal["on", "hold", "off"] | None = Field(
        None, description="on: the model checks each alert after it is posted and updates it; hold: alerts are "
        "posted only once the model saw what they say; off: never (default: monitoring.verify). A rule's own "
        "verify wins")

    @field_validator("verify", mode="before")
    @classmethod
    def _verify(cls, v: Any) -> Any:
        words = {"yes": "on", "true": "on", "no": "off", "false": "off"}
        if isinstance(v, bool):
            return "on" if v else "off"
        return words.get(v.strip().lower(), v.strip().lower()) if isinstance(v, str) else v

    @field_validator("channel", mode="before")
    @classmethod
    def _channel(cls, v: Any) -> Any:
        return channel_id(v) if isinstance(v, str) else v
