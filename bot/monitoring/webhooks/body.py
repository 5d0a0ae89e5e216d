"""What a webhook POST carries: one event in the shape receivers have always parsed, or several in one batch.

An event comes from the alert itself when the sender has it (its frame, its clip), else from its event-log record
(after a backlog or a restart: the frame as a link only, since the log keeps no frame bytes). Either way it carries
`id`, its event-log id: ordered, the same on every retry and after a restart, the key a receiver drops repeats by.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.media.redaction import redact
from bot.monitoring.events_log import SOURCE, event_type_of

if TYPE_CHECKING:
    from bot.monitoring.alert import Alert

BATCH = "batch"  # the event_type of a post that carries several events in `events`


def event_body(ev: dict[str, Any], alert: Alert | None, *, inline: bool, api_base: str | None,
               dropped: int = 0) -> dict[str, Any]:
    """One event's JSON (credentials redacted from every text field). `ev`: its event-log record; `alert`: the alert
    as the router sent it, when the sender still has it."""
    held = ev.get("held") or None
    rule = str(ev.get("rule") or "")
    summary = alert.summary if alert is not None else ev.get("summary")
    body: dict[str, Any] = {
        "id": ev.get("id"), "source": SOURCE, "event_type": ev.get("event_type") or event_type_of(rule),
        "camera": redact(str(ev.get("camera") or "")), "rule": redact(rule), "text": redact(str(ev.get("text") or "")),
        "counts": dict(ev.get("counts") or {}), "time": ev.get("time"), "pipeline_id": ev.get("pipeline_id"),
        "summary": redact(summary) if summary else None, "dropped_before": dropped,
        "alert_id": ev.get("alert_id"), "held": held, "frame_url": None, "clip_url": None,
    }
    check = alert.check.verdict() if alert is not None and alert.check is not None else ev.get("check")
    if isinstance(check, dict):  # verified alerts: the model's verdict (its words are untrusted data)
        seen = check.get("seen")
        body["check"] = {"seen": seen if isinstance(seen, bool) else None,
                         "what": redact(str(check.get("what") or "")), "reason": redact(str(check.get("reason") or ""))}
    about = ev.get("about")
    if isinstance(about, list) and about:  # a follow-up (the model's look, a summary): the alerts it is about
        body["about"] = [str(a) for a in about]
    frame = alert.frame if alert is not None else None
    clip = (alert.clip_path if alert is not None else None) or ev.get("clip_path")
    if frame and inline:
        body["frame_base64"], body["frame_type"] = base64.b64encode(frame).decode(), "image/jpeg"
    elif api_base and not held and body["alert_id"] and (frame or ev.get("has_frame")):  # the router kept it
        body["frame_url"] = f"{api_base}/api/alerts/{body['alert_id']}/frame"
    if clip and api_base:  # the MP4 around the event (bot/api/frames.py clip)
        body["clip_url"] = f"{api_base}/api/clips/{Path(str(clip)).stem}"
    return body


def post_body(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The body of one POST: a lone event as it is; several as a batch, `events` in id order."""
    if len(events) == 1:
        return events[0]
    return {"source": SOURCE, "event_type": BATCH, "count": len(events), "first_id": events[0]["id"],
            "last_id": events[-1]["id"], "events": events}


def alert_record(alert: Alert, held: str | None = None) -> dict[str, Any]:
    """An alert as the event log would record it (a sender without a log builds its bodies from this)."""
    ev = alert.as_dict(with_frame=False)
    ev.update(event_type=event_type_of(alert.rule), has_frame=alert.frame is not None, held=held, id=None)
    return ev
