"""The agent's DM opening (app_home_opened, tab=messages): suggested prompts that fit this workspace's cameras."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError

log = logging.getLogger(__name__)

MAX_PROMPTS = 4  # Slack shows at most four suggested prompts
_MAX_NAME = 40


def suggested_prompts(camera_names: list[str]) -> list[dict[str, str]]:
    """Prompts for a person opening the agent: the away summary, then counts and a look at the first cameras."""
    names = [n for n in camera_names if n and len(n) <= _MAX_NAME]
    prompts = [{"title": "What happened while I was away?",
                "message": "What happened on the cameras while I was away?"}]
    if names:
        prompts.append({"title": f"Count people at {names[0]}", "message": f"Count the people at {names[0]} now."})
        for name in names[1:3]:
            prompts.append({"title": f"Show me {name}", "message": f"Show me what {name} sees right now."})
    else:
        prompts.append({"title": "Count people in a photo", "message": "Count the people in the photo I attach."})
    prompts.append({"title": "What can you do?", "message": "What can you do with my cameras?"})
    return prompts[:MAX_PROMPTS]


def _camera_names(bot: Any) -> list[str]:
    try:
        return [c.name for c in bot.runtime.workspace.cameras()]
    except Exception:  # a broken CAMERAS.md must not cost the prompts
        log.warning("could not read CAMERAS.md for suggested prompts", exc_info=True)
        return []


async def handle_home_opened(event: dict[str, Any], client: Any, context: Any) -> None:
    """The person opened the agent's Messages tab: offer prompts there (best effort, one call)."""
    bot = context["vision"]
    bot.note_event()
    channel = event.get("channel") if isinstance(event, dict) else None
    if event.get("tab") != "messages" or not isinstance(channel, str) or not channel:
        return
    try:
        # slack_sdk 3.33's helper insists on thread_ts, which Slack leaves optional (the DM's latest message):
        # the method itself, through the same client and its retry handlers.
        await client.api_call("assistant.threads.setSuggestedPrompts", json={
            "channel_id": channel, "title": "Try asking", "prompts": suggested_prompts(_camera_names(bot))})
    except SlackApiError as exc:  # e.g. not_agent_app: the Agents feature is off; the DM still works
        log.info("suggested prompts in %s refused (%s)", channel, exc.response.get("error"))


def register(app: Any, bot: Any) -> None:
    app.event("app_home_opened")(handle_home_opened)
