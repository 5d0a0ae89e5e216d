"""Block Kit for one alert message: the line once, the frame inside it, counts and rule as context, three buttons."""

from __future__ import annotations

import json
import time
from typing import Any

from bot.media.redaction import redact
from bot.monitoring.digest import REPORTS
from bot.monitoring.watch import ANSWERED, EXPIRED
from handlers.state.alert_book import PostedAlert
from handlers.transport.mrkdwn import SECTION_LIMIT, escape, escape_plain, limit_mentions, to_mrkdwn

STOP_ACTION = "vision_stop_pipeline"
MUTE_ACTION = "vision_mute_camera"
FALSE_ALARM_ACTION = "vision_false_alarm"
MUTE_SECONDS = 3600
NOT_EVENTS = REPORTS  # reports, not detections: nothing to call false


def alert_line(a: PostedAlert) -> str:
    """The alert's one line in mrkdwn: the camera once, then what happened (the text names the class)."""
    where = f"*{escape(a.camera)}*: " if a.camera != "*" else ""
    icon = ":hourglass:" if a.rule == EXPIRED else ":rotating_light:"
    # The text may be the heartbeat's model reply about a frame anyone can hold a sign up to: a few people at most
    return f"{icon} {where}{limit_mentions(escape(a.text))}"


def check_line(check: str) -> str:
    """The model's check of an alert in mrkdwn: its verdict in bold, its words plain text (a sign in the frame
    may have made it say `<!here>` or `<@U1>`: no mention or link of its survives)."""
    head, sep, rest = check.partition(":")
    icon = {"✓ seen": ":white_check_mark:", "✗ likely not": ":x:"}.get(head, ":grey_question:")
    return f"{icon} *{escape_plain(head.lstrip('✓✗? '))}*{sep}{escape_plain(redact(rest))}"  # no reference survives


def fallback_text(a: PostedAlert) -> str:
    """The plain `text` Slack shows in notifications (redacted by escape like everything posted)."""
    where = f"Alert from {a.camera}: " if a.camera != "*" else ""
    return limit_mentions(escape(f"{where}{a.text}"))[:3000]


def _context(a: PostedAlert) -> str:
    seen = ", ".join(f"{n} {cls}" for cls, n in sorted(a.counts.items()))
    when = time.strftime("%H:%M:%S UTC", time.gmtime(a.time))
    return " · ".join(p for p in (f"Seen: {escape(seen)}" if seen else "", f"rule `{escape(a.rule)}`", when) if p)


def _button(action_id: str, label: str, value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "button", "action_id": action_id, "value": value,
            "text": {"type": "plain_text", "text": label}, **extra}


def _buttons(a: PostedAlert) -> list[dict[str, Any]]:
    # the value names the alert; a click looks the alert up in the AlertBook rather than trusting the payload
    value = json.dumps({"camera": a.camera, "pipeline": a.pipeline_id, "alert": a.alert_id})
    out = [_button(MUTE_ACTION, "Mute 1 h", value)]
    if a.pipeline_id:
        confirm = {"title": {"type": "plain_text", "text": "Stop this pipeline?"},
                   "text": {"type": "plain_text", "text": f"Monitoring of {a.camera} stops."[:300]},
                   "confirm": {"type": "plain_text", "text": "Stop"},
                   "deny": {"type": "plain_text", "text": "Keep running"}}
        out.insert(0, _button(STOP_ACTION, "Stop pipeline", value, style="danger", confirm=confirm))
    if a.rule not in NOT_EVENTS and not a.rule.startswith(ANSWERED) and not a.marked:  # a watch's answer: no rule
        out.append(_button(FALSE_ALARM_ACTION, "False alarm", value))
    return out


def alert_blocks(a: PostedAlert, with_image: bool = True) -> list[dict[str, Any]]:
    """The whole message; a tier-2 summary (`a.summary`) goes under the frame, the buttons stay last."""
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": alert_line(a)[:SECTION_LIMIT]}}]
    if a.file_id and with_image:
        blocks.append({"type": "image", "slack_file": {"id": a.file_id},
                       "alt_text": f"annotated frame from {a.camera}"[:2000]})
    if a.summary:
        summary = f":memo: {limit_mentions(to_mrkdwn(a.summary))}"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": summary[:SECTION_LIMIT]}})
    if a.check:  # the model's words: escaped, a few people at most, one bounded line
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": check_line(a.check)[:SECTION_LIMIT]}})
    if a.marked:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": a.marked[:SECTION_LIMIT]}})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _context(a)}]})
    if a.rule != EXPIRED:  # a watch that ran out is a line: nothing to stop, mute or call false
        blocks.append({"type": "actions", "block_id": "vision_alert", "elements": _buttons(a)})
    return blocks
