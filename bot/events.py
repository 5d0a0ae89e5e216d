"""AgentEvent: the one stream every adapter (CLI, Slack) renders."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    """Kinds of events the agent yields while it works."""

    THINKING = "thinking"  # data: {"text": str}
    TOOL_CALL = "tool_call"  # data: {"id": str, "name": str, "input": dict}
    TOOL_RESULT = "tool_result"  # data: {"id": str, "name": str, "text": str, "is_error": bool}
    RESPONSE = "response"  # data: {"text": str}  (final reply of a turn)
    ALERT = "alert"  # data: Alert.as_dict() (camera, rule, time, counts, summary, frame bytes)
    ERROR = "error"  # data: {"text": str}  (one line a user can act on)
    ASK_USER = "ask_user"  # data: {"text": str}  (reply ends with a question for the user)
    FRAME = "frame"  # data: {"image": bytes (JPEG), "caption": str, "path": str | None}
    MOMENTS = "moments"  # data: {"moments": bot.monitoring.search.moments.Moments} (a search's rows and pictures)
    # data: {"text": str} a piece of the model's text as it is generated; {"text": "", "restart": True} when
    # the call was retried and what came so far is void. RESPONSE/ASK_USER still carry the whole final text.
    TEXT_DELTA = "text_delta"


@dataclass(frozen=True)
class AgentEvent:
    """One thing that happened during a turn."""

    type: EventType
    data: dict[str, Any]
    timestamp: float = field(default_factory=time.time)
