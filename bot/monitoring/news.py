"""What tier 1 hands tier 2: `MonitorEvent` (one thing the monitor noticed) and `News`, the queue the heartbeat takes."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field

from bot.monitoring.alert import Alert, new_alert_id

NEWS_LIMIT = 200  # events kept for the next heartbeat; older ones already went out as tier-1 alerts


@dataclass(frozen=True)
class MonitorEvent:
    """Something tier 1 noticed; becomes an Alert and waits for the next heartbeat."""

    camera: str
    rule: str
    text: str
    time: float
    counts: dict[str, int] = field(default_factory=dict)
    frame: bytes | None = None
    pipeline_id: str | None = None
    suppressed: int = 0  # same camera+rule events held back by the cooldown before this one
    mark: float | None = None  # the event's moment on the clip recorder's clock (None: no clip)
    alert_id: str = field(default_factory=new_alert_id)  # its Alert's id: the heartbeat's summary names it
    held: str = ""  # what the cooldown held since the last alert, in words (bot/monitoring/held.py)
    channel: str | None = None  # a member's rule alerts where they set it (None: the camera's route)
    seen: str | None = None  # what the frame shows, in words (bot/monitoring/search/describe.py)
    box: tuple[float, float, float, float] | None = None  # its main object, fractions of the frame

    def to_alert(self) -> Alert:
        more = f" ({self.held})" if self.held else f" (+{self.suppressed} more within the cooldown)" if self.suppressed else ""
        return Alert(
            self.camera,
            self.rule,
            f"{self.text}{more}",
            dict(self.counts),
            self.time,
            self.frame,
            self.pipeline_id,
            alert_id=self.alert_id,
            channel=self.channel,
            seen=self.seen or None,
            box=self.box,
        )


class News:
    """Events since the last heartbeat, newest `NEWS_LIMIT`: added on pipeline threads, taken on the loop."""

    def __init__(self, limit: int = NEWS_LIMIT) -> None:
        self._lock = threading.Lock()
        self._events: deque[MonitorEvent] = deque(maxlen=limit)

    def add(self, ev: MonitorEvent) -> None:
        with self._lock:
            self._events.append(ev)

    def pending(self) -> list[MonitorEvent]:
        """Events since the last heartbeat took them (without taking them)."""
        with self._lock:
            return list(self._events)

    def take(self) -> list[MonitorEvent]:
        """Events since the last heartbeat; they are handed over once."""
        with self._lock:
            out = list(self._events)
            self._events.clear()
            return out

    def requeue(self, events: list[MonitorEvent]) -> None:
        """Give events back (the heartbeat could not look at them)."""
        with self._lock:
            self._events.extendleft(reversed(events))
