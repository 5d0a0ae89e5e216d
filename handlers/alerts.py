"""The Slack alert sink: alerts go top-level to the routed channel with the frame and Stop / Mute buttons."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.alerts import Alert
from handlers.context import SlackBot
from handlers.mrkdwn import escape
from handlers.render import upload_frame
from handlers.threads import session_key

log = logging.getLogger(__name__)

STOP_ACTION = "vision_stop_pipeline"
MUTE_ACTION = "vision_mute_camera"
MUTE_SECONDS = 3600


def alert_text(alert: Alert) -> str:
    counts = ", ".join(f"{n} {cls}" for cls, n in sorted(alert.counts.items()))
    line = f":rotating_light: *{escape(alert.camera)}*: {escape(alert.text)}"
    return line + (f"\n{escape(alert.summary)}" if alert.summary else "") + (f"\n_Seen: {counts}_" if counts else "")


def alert_blocks(alert: Alert) -> list[dict[str, Any]]:
    """Block Kit for one alert: what happened, when and which rule, and the two buttons."""
    value = json.dumps({"camera": alert.camera, "pipeline": alert.pipeline_id})
    when = time.strftime("%H:%M:%S UTC", time.gmtime(alert.time))
    buttons = [{"type": "button", "action_id": MUTE_ACTION, "value": value,
                "text": {"type": "plain_text", "text": "Mute 1 h"}}]
    if alert.pipeline_id:
        buttons.insert(0, {"type": "button", "action_id": STOP_ACTION, "value": value, "style": "danger",
                           "text": {"type": "plain_text", "text": "Stop pipeline"},
                           "confirm": {"title": {"type": "plain_text", "text": "Stop this pipeline?"},
                                       "text": {"type": "plain_text", "text": f"Monitoring of {alert.camera} stops."},
                                       "confirm": {"type": "plain_text", "text": "Stop"},
                                       "deny": {"type": "plain_text", "text": "Keep running"}}})
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": alert_text(alert)[:3000]}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"rule `{escape(alert.rule)}` · {when}"}]},
        {"type": "actions", "block_id": "vision_alert", "elements": buttons},
    ]


class SlackAlertSink:
    """An AlertRouter sink. After posting, the alert's thread becomes a session seeded with the alert,
    so a reply under it ("is that a delivery?") is about that event, no mention needed."""

    def __init__(self, bot: SlackBot) -> None:
        self.bot = bot

    async def __call__(self, alert: Alert, channel: str | None) -> None:
        if not channel:
            log.warning("alert from %s not posted: no channel; set VISION_AGENT_ALERT_CHANNEL or use "
                        "`/vision route #channel`", alert.camera)
            return
        client = self.bot.client
        try:
            resp = await client.chat_postMessage(channel=channel, text=f"Alert from {alert.camera}: {alert.text}",
                                                 blocks=alert_blocks(alert), unfurl_links=False)
        except SlackApiError as exc:
            log.error("alert to %s failed: %s (invite the bot to the channel or fix the route)", channel,
                      exc.response.get("error"))
            return
        channel_id, ts = resp["channel"], resp["ts"]
        if alert.frame:
            await upload_frame(client, channel_id, ts, alert.frame, f"{alert.camera}: {alert.text}", name=alert.camera)
        self.bot.threads.remember(self.bot.team_id, channel_id, ts, origin="alert")
        agent = self.bot.agent
        if agent is not None:
            seed = f"[alert posted to this thread] {alert.camera}: {alert.text}" + (
                f" ({alert.summary})" if alert.summary else "")
            agent.seed_session(session_key(self.bot.team_id, channel_id, ts), seed, alert.frame)
