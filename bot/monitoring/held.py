"""What the cooldown holds back: the crossings (or events) since a rule's last alert on a camera, said by the next
alert, in a summary when the pipeline ends, and by `/vision rules` while it lasts."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.monitoring.news import MonitorEvent

TOTALS = ("count_in", "count_out")  # a line counter's running totals, as LineCrossed puts them in an event's counts


@dataclass
class Held:
    """Since the last alert of one camera+rule: its line totals then, the latest held event's, how many were held."""

    pipeline_id: str | None
    base: dict[str, int] = field(default_factory=dict)  # count_in/count_out at the last alert sent (none: from 0)
    latest: dict[str, int] = field(default_factory=dict)  # ... at the last event the cooldown held
    events: int = 0
    frame: bytes | None = None  # the last held event's annotated frame: a summary's evidence

    def crossed(self) -> tuple[int, int]:
        """(in, out) crossings the cooldown held back."""
        if not self.latest:
            return 0, 0
        a, b = (max(0, self.latest.get(k, 0) - self.base.get(k, 0)) for k in TOTALS)
        return a, b

    def text(self) -> str:
        """'+12 crossed since the last alert: in 7 / out 5', or '+3 more within the cooldown' ('' if nothing)."""
        a, b = self.crossed()
        if a + b:
            return f"+{a + b} crossed since the last alert: in {a} / out {b}"
        return f"+{self.events} more within the cooldown" if self.events else ""


def _totals(counts: dict[str, int]) -> dict[str, int]:
    return {k: int(counts[k]) for k in TOTALS if k in counts}


class HeldBook:
    """Per camera+rule what the cooldown held since the last alert; the monitor calls it under its lock."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], Held] = {}

    def _entry(self, ev: MonitorEvent) -> Held:
        key = (ev.camera, ev.rule)
        entry = self._held.get(key)
        if entry is None or entry.pipeline_id != ev.pipeline_id:  # a new pipeline's counter starts again at 0
            entry = self._held[key] = Held(ev.pipeline_id)
        return entry

    def held(self, ev: MonitorEvent) -> None:
        """The cooldown held `ev`: counted, its totals and frame kept."""
        entry = self._entry(ev)
        entry.events += 1
        entry.latest = _totals(ev.counts) or entry.latest
        entry.frame = ev.frame or entry.frame

    def sent(self, ev: MonitorEvent) -> str:
        """`ev` goes out: what was held before it ('' if nothing); its totals are the next alert's base."""
        entry = self._entry(ev)
        said = entry.text()
        self._held[(ev.camera, ev.rule)] = Held(ev.pipeline_id, base=_totals(ev.counts))
        return said

    def pending(self, camera: str, rule: str) -> Held | None:
        """What is held for one camera's rule right now (None: nothing)."""
        entry = self._held.get((camera, rule))
        return entry if entry is not None and entry.events else None

    def ended(self, camera: str, pipeline_id: str) -> list[tuple[str, Held]]:
        """The held crossings of a pipeline that ended, taken (so they are summarised once): (rule, Held)."""
        out = []
        for (cam, rule), entry in list(self._held.items()):
            if cam == camera and entry.pipeline_id == pipeline_id:
                del self._held[(cam, rule)]
                if sum(entry.crossed()):
                    out.append((rule, entry))
        return out
