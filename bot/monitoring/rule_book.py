"""Which rules run for each camera: the stored ones (cached, read on every frame) and the defaults guessed from what
a camera's first results show (a line's crossings, a zone's stays, else `appears`)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from bot.backends.base import InferenceResult
from bot.monitoring.rules import ANY, Rule, default_rules
from bot.storage import Storage, records

KEPT_DEFAULTS = ("line_crossed", "time_in_zone")  # what a pipeline was started for (line=, zone=): kept beside rules
GUESS_UNTIL_SURE = [Rule("class_appears")]  # the fallback guess: a later result may still show a line or a zone


def _sets(rule: Rule, runs: str | None) -> bool:
    """Whether a rule is the camera's own setting (the operator's, or its pipeline's owner's), which may replace an
    every-camera rule and the guessed defaults; another member's rule alerts beside them, where that member set it."""
    return rule.owner is None or not rule.owner.member or rule.owner.user == runs


def _slot(rule: Rule) -> tuple[str | None, ...]:
    """What a camera's own rule replaces of an every-camera one: the same kind on the same classes and camera."""
    return rule.kind, rule.class_name, rule.other_class, rule.after_camera


class RuleBook:
    """The stored rules, in a storage table and cached, and each camera's guessed defaults; any thread."""

    def __init__(self, store: Storage, table: str = "rules") -> None:
        self._table = store.table(table)
        self._lock = threading.RLock()  # results arrive on pipeline threads, rule edits on the loop
        # cached: read on every frame; a stored rule of another shape is set aside, the others load
        self._rules = records.load(store, table, Rule.from_dict)
        self._defaults: dict[str, list[Rule]] = {}
        # who runs a camera's pipeline (a Slack user; None: the operator or nobody): set by the monitor
        self.camera_owner: Callable[[str], str | None] = lambda camera: None

    def add(self, rule: Rule) -> Rule:
        """Add or replace a rule for a camera ('*' = all); a camera with own rules drops the guessed defaults."""
        with self._lock:
            self._table.upsert({**rule.as_dict(), "id": rule.id}, camera=rule.camera, id=rule.id)
            self._rules = [r for r in self._rules if (r.camera, r.id) != (rule.camera, rule.id)] + [rule]
        return rule

    def remove(self, rule_id: str, camera: str = ANY) -> bool:
        with self._lock:
            removed = bool(self._table.remove(camera=camera, id=rule_id))
            self._rules = [r for r in self._rules if (r.camera, r.id) != (camera, rule_id)]
            return removed

    def rules(self, camera: str | None = None) -> list[Rule]:
        """Configured rules (all, or those that apply to one camera including '*')."""
        with self._lock:
            out = list(self._rules)
        return out if camera is None else [r for r in out if r.camera in (camera, ANY)]

    def guess(self, camera: str, result: InferenceResult) -> None:
        """The camera's defaults from this result, until a line or a zone has shown (an empty first frame of a zone
        pipeline looks like a plain detector: it is guessed again until it shows)."""
        with self._lock:
            if camera not in self._defaults or self._defaults[camera] == GUESS_UNTIL_SURE:
                self._defaults[camera] = default_rules(result)

    def effective(self, camera: str) -> list[Rule]:
        """Rules that run for a camera: its configured ones, plus the defaults guessed from its first result that
        they do not replace (a line's crossings and a zone's stays stay on beside a count rule; the `appears`
        guess only while the camera has no rule); a disabled rule of a kind turns that default off."""
        every = self.rules(camera)
        configured = [r for r in every if r.enabled]
        # a camera's own rule of a kind and class replaces the every-camera one (a false alarm tightens one camera);
        # a member's never does: it alerts beside the operator's, where the member set it
        runs = self.camera_owner(camera)
        own = {_slot(r) for r in configured if r.camera == camera and _sets(r, runs)}
        configured = [r for r in configured if r.camera == camera or _slot(r) not in own]
        with self._lock:
            defaults = list(self._defaults.get(camera, []))
        sites = [r for r in every if _sets(r, runs)]  # the camera's own setting: only those replace its defaults
        if not sites:
            return configured + [d for d in defaults if d not in configured]
        ruled = {r.kind for r in sites}
        return configured + [d for d in defaults if d.kind in KEPT_DEFAULTS and d.kind not in ruled]
