"""A digest read from this process's event log, with its false-alarm marks and links to the REST API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.monitoring.digest import Digest, build
from bot.monitoring.false_alarms import marked_alert_ids
from bot.monitoring.webhooks.sender import api_base

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.monitoring.alerts import AlertRouter
    from bot.monitoring.events_log import EventLog

MAX_SCAN = 100_000  # the whole bounded log: crossings need each pipeline's totals before the window


def from_log(log: EventLog, router: AlertRouter | None, settings: Settings, start: float, end: float, label: str,
             camera: str | None = None) -> Digest:
    """The digest of the event log over [start, end); false alarms from the router's marks; frame and clip links
    point at the REST API when it is on (the address webhooks use)."""
    events = log.query(camera=camera, limit=MAX_SCAN)
    marked = marked_alert_ids(router) if router is not None else set()
    return build(events, start, end, label, false_alarm_ids=marked, api_base=api_base(settings))
