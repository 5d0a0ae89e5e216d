"""False alarms: a person says an alert was wrong; repeated ones for a camera and rule tighten that rule.

Every mark is kept in the alert router's storage (table `false_alarms`) and noted in the agent's memory.
When `monitoring.false_alarm_limit` marks for the same camera and rule fall within
`monitoring.false_alarm_window_hours`, the rule is tightened once (`tightened`) and those marks are used up.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field

from bot.monitoring.rules import ANY, Rule
from bot.objects.owner import Owner, change_refusal
from bot.rights import Requester
from bot.storage import records

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.monitoring.alerts import AlertRouter
    from bot.monitoring.monitor import Monitor
    from workspace.memory import MemoryStore

TABLE = "false_alarms"


class Mark(BaseModel):
    """A stored mark, as read back (one of another shape is set aside: bot/storage/records.py)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    camera: str
    rule: str
    time: float = Field(allow_inf_nan=False)
    used: bool = False


@dataclass(frozen=True)
class FalseAlarm:
    """One click: who marked which alert, when; what the alert said."""

    camera: str
    rule: str
    text: str
    counts: dict[str, int]
    alert_time: float
    user: str
    alert_id: str = ""


def marked_alert_ids(router: AlertRouter) -> set[str]:
    """The ids of every alert someone marked as a false alarm (a digest shows them marked)."""
    return {str(r["alert_id"]) for r in router.storage.table(TABLE).all() if r.get("alert_id")}


def tightened(rule: Rule, default_cooldown: float) -> tuple[Rule, str]:
    """The rule one step less eager, and what changed in words (each kind decides: bot.monitoring.rules)."""
    return rule.kind_of.tightened(rule, default_cooldown)


class FalseAlarms:
    """Records false alarms and tightens a rule that keeps crying wolf (see the module docstring)."""

    def __init__(self, router: AlertRouter, monitor: Monitor | None, memory: MemoryStore | None,
                 settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.router, self.monitor, self.memory = router, monitor, memory
        self.settings = settings
        self._table = router.storage.table(TABLE)
        records.load(router.storage, TABLE, Mark.model_validate)  # the reads below then find only marks that fit
        self.limit = settings.monitoring.false_alarm_limit
        self.window = settings.monitoring.false_alarm_window_hours * 3600
        self._tz = ZoneInfo(settings.heartbeat.timezone)
        self._clock = clock

    def mark(self, fa: FalseAlarm) -> str:
        """Record one mark; returns the line for the person who clicked (what, if anything, changed)."""
        now = self._clock()
        if fa.alert_id and self._table.get(alert_id=fa.alert_id) is not None:
            return f"This {fa.camera} alert is already marked as a false alarm; nothing more changed."
        mark_id = uuid.uuid4().hex
        self._table.upsert({**fa.__dict__, "id": mark_id, "time": now, "used": False}, id=mark_id)
        recent = [r for r in self._table.all() if (r.get("camera"), r.get("rule")) == (fa.camera, fa.rule)
                  and not r.get("used") and now - float(r.get("time", 0)) <= self.window]
        refused = self._refusal(fa)
        change = self._tighten(fa.camera, fa.rule) if self.limit and len(recent) >= self.limit and not refused else None
        if refused:  # noted (it counts when its owner or an operator marks the next one), but theirs to change
            self._remember(fa, None)
            return f"Noted: this {fa.camera} `{fa.rule}` alert was a false alarm. {refused}"
        if change:
            for r in recent:
                self._table.upsert({"used": True}, id=r["id"])
        self._remember(fa, change)
        if change:
            return (f"Noted. After {len(recent)} false alarms, {fa.camera} {change}; "
                    f"`/vision rules {fa.camera}` shows it.")
        left = self.limit - len(recent) if self.limit else 0
        more = f" {left} more within {self.window / 3600:g} h and I make this rule less eager." if left > 0 else ""
        return f"Noted: this {fa.camera} `{fa.rule}` alert was a false alarm.{more}"

    def marked(self, fa: FalseAlarm) -> tuple[str, str]:
        """Record one mark (mark()); (the line for the clicker, the line the alert itself shows everyone: who marked
        it and what its rule does now)."""
        before = self._rule(fa.camera, fa.rule)
        line = self.mark(fa)
        who = f"<@{fa.user}>" if fa.user else "someone"
        if before is None:
            return line, f":no_entry_sign: {who} marked this a false alarm."
        slot = (before.kind, before.class_name, before.other_class, before.after_camera)
        now = next((r for r in self.monitor.effective_rules(fa.camera)
                    if (r.kind, r.class_name, r.other_class, r.after_camera) == slot), None) if self.monitor else None
        if now is None:
            does = f"its rule `{before.id}` is off"
        elif now.id != before.id or now.cooldown_seconds != before.cooldown_seconds:
            does = f"its rule is now `{now.id}`: it {now.describe()}"
            if now.cooldown_seconds != before.cooldown_seconds and now.cooldown_seconds is not None:
                does += f", at most once every {now.cooldown_seconds:g} s"
        else:
            does = f"its rule `{now.id}` is unchanged: it {now.describe()}"
        return line, f":no_entry_sign: {who} marked this a false alarm; {does}."

    def _rule(self, camera: str, rule_id: str) -> Rule | None:
        if self.monitor is None:
            return None
        return next((r for r in self.monitor.effective_rules(camera) if r.id == rule_id), None)

    def _owner(self, camera: str, rule: Rule) -> Owner | None:
        """Whose the rule is: its own owner, or for a guessed default the camera's (its pipeline's owner)."""
        if rule.owner is not None:
            return rule.owner
        if rule.camera == ANY and self.monitor is not None and rule not in self.monitor.rules():  # a default
            runs = self.monitor.camera_owner(camera)
            return Owner(user=runs) if runs else None
        return None

    def _refusal(self, fa: FalseAlarm) -> str | None:
        """Why this clicker may not make the rule less eager (it is someone else's), or None."""
        rule = self._rule(fa.camera, fa.rule)
        if rule is None:
            return None
        return change_refusal(self.settings, self._owner(fa.camera, rule), Requester.slack(fa.user, None),
                              f"the rule `{fa.rule}` of {fa.camera}")

    def _tighten(self, camera: str, rule_id: str) -> str | None:
        """Replace the rule behind `rule_id` on this camera with a tightened copy; what changed, or None."""
        if self.monitor is None:
            return None
        rule = self._rule(camera, rule_id)
        if rule is None:  # health, heartbeat or snapshot alerts have no rule to adjust
            return None
        owner = self._owner(camera, rule)  # a tightened default is its camera's owner's, as the default was
        new, what = tightened(replace(rule, camera=camera, owner=owner), self.monitor.cooldown_seconds)
        if rule.camera == camera and rule.id != new.id:
            self.monitor.remove_rule(rule.id, camera)
        self.monitor.add_rule(new)
        return f"`{new.id}` {what}" if new.id != rule.id else f"{new.id} {what}"

    def _remember(self, fa: FalseAlarm, change: str | None) -> None:
        if self.memory is None:
            return
        when = datetime.fromtimestamp(fa.alert_time, self._tz)
        note = (f"{fa.camera}: {fa.rule} alert around {when:%H:%M} ({fa.text}) was a false alarm "
                f"(marked by @{fa.user})" + (f"; the rule {change}" if change else ""))
        self.memory.store(note, "knowledge")
