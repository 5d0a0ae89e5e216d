"""An alert route as a member sets one (`/vision route`, PUT /api/routes): a camera's alerts to a channel."""

from __future__ import annotations

import re
from typing import Any

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
    """What routing alerts asks for: the channel, and the camera (None: every camera)."""


    channel: str = Field(max_length=100, description="Slack channel id or #name")
    camera: CameraRef | None = Field(None, description="The camera whose alerts go there (default: every camera)")

    @field_validator("channel", mode="before")
    @classmethod
    def _channel(cls, v: Any) -> Any:
        return channel_id(v) if isinstance(v, str) else v
