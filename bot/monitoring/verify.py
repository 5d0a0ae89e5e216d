"""Verified alerts: the model looks at an alert's frame (and a few of the seconds before it when things moved) and
says whether it shows what the rule says; the alert is updated in place with its words, or held until it does.

Which alerts are checked: a rule's own `verify`, else its route's (`/vision route … verify=on|hold|off`), else
`monitoring.verify`. Each look is billed to the rule's owner (a member's share and the day's budget, as confirm
watches are: bot/llm/budget.py `payer_for`) and capped per camera+rule per hour; a look that cannot happen leaves the
alert saying it was not verified and why. The model's words are data: one line, bounded, markers broken.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from bot.llm.budget import Payer
from bot.llm.errors import LLMBudgetExceeded, LLMError, LLMTimeout
from bot.media.motion import moving
from bot.objects.text import defang, untrusted

log = logging.getLogger(__name__)

Mode = Literal["off", "on", "hold"]
HOUR = 3600.0
WORDS_MAX = 120  # the model's description and reason, each: one line of the alert
_LINE = re.compile(r"^\W*(SEEN|NOT)[\s*_]*[:\-][\s*_]*(?P<what>.+?)[\s*_]*$", re.I | re.M)
_WHY = re.compile(r"^\W*WHY[\s*_]*[:\-][\s*_]*(?P<why>.+?)[\s*_]*$", re.I | re.M)
CLIP_FRAMES = 2  # frames of the seconds before the alert the model also sees when things moved
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


@dataclass(frozen=True)
class Check:
    """One look at an alert: seen (True), likely not (False), or not verified (None), in the model's words or ours.

    `what` and `reason` came from the model (untrusted: show them escaped, quote them for a model) unless `seen` is
    None, when `reason` is our own line on why no look happened."""

    seen: bool | None
    what: str = ""
    reason: str = ""
    seconds: float = 0.0  # from the alert's decision to the model's answer
    tokens: int = 0  # input + output tokens of the look
    cost: float = 0.0  # USD

    def line(self) -> str:
        """'✓ seen: a person at the gate — walking toward the door' (plain text: a sink escapes it)."""
        if self.seen is None:
            return f"? not verified: {self.reason}"
        mark = "✓ seen" if self.seen else "✗ likely not"
        return f"{mark}: {self.what}" + (f" — {self.reason}" if self.reason else "")

    def verdict(self) -> dict[str, bool | str | None]:
        """What an event (and so a webhook) carries of it: seen, the model's words (`what`, `reason`; untrusted)."""
        return {"seen": self.seen, "what": self.what, "reason": self.reason}

    def quoted(self) -> str:
        """The check as a model may read it (an alert thread's seed): quoted as data, never instructions."""
        return untrusted("model's check of the alert", self.line(), 400)


def one_line(text: str, limit: int = WORDS_MAX) -> str:
    """A model's words as one bounded line with our markers broken."""
    flat = " ".join(_CONTROL.sub(" ", text or "").split())
    return defang(flat[:limit].rstrip() + ("…" if len(flat) > limit else ""))


def parse_check(text: str) -> tuple[bool, str, str] | None:
    """(seen, what, why) from the model's two lines; None when it said neither SEEN nor NOT."""
    m = _LINE.search(text or "")
    if m is None:
        return None
    why = _WHY.search(text)
    return m[1].upper() == "SEEN", one_line(m["what"]), one_line(why["why"]) if why else ""


def moved(before: list[bytes], keep: int = CLIP_FRAMES) -> list[bytes]:
    """Up to `keep` frames of the seconds before an alert, evenly spaced and oldest first, when the picture changed
    across them (something moved: the model sees how); [] for a still scene, where the alert's frame says it all."""
    if len(before) < 2 or keep <= 0:
        return []
    if not moving(before[0], before[-1]):
        return []
    step = (len(before) - 1) / keep
    return [before[round(i * step)] for i in range(keep)]


class Look(Protocol):
    """The model's look (bot/llm/look.py AlertLook)."""

    @property
    def available(self) -> bool: ...

    def __call__(self, frames: list[bytes], question: str, payer: Payer, seconds: float) -> Awaitable[object]: ...


def mode_of(rule_verify: bool | None, route: Mode | None, default: Mode) -> Mode:
    """Whether an alert is checked: the rule's own word wins (yes keeps a route's `hold`), then its route's, then the
    configured default."""
    base = route or default
    if rule_verify is None:
        return base
    return ("hold" if base == "hold" else "on") if rule_verify else "off"


class Verifier:
    """Checks alerts with the model within the per-rule hourly cap; any thread may ask `mode`, the loop `check`."""

    def __init__(self, look: Look | None, default: Mode = "off", per_rule_hour: int = 30, timeout: float = 10.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.look, self.default, self.per_rule_hour, self.timeout = look, default, per_rule_hour, timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._looks: dict[tuple[str, str], deque[float]] = {}

    def _take(self, camera: str, rule: str) -> str | None:
        """Count one look on the camera+rule's hour; why not, when the hour's looks are used up."""
        now = self._clock()
        with self._lock:
            times = self._looks.setdefault((camera, rule), deque())
            while times and now - times[0] >= HOUR:
                times.popleft()
            if len(times) >= self.per_rule_hour:
                wait = max(1, round((times[0] + HOUR - now) / 60))
                return (f"this rule had its {self.per_rule_hour} looks this hour (monitoring.verify_per_rule_hour); "
                        f"the next alert can be checked in {wait} min")
            times.append(now)
        return None

    async def check(self, camera: str, rule: str, text: str, frames: list[bytes], payer: Payer,
                    started: float | None = None) -> Check:
        """The model's look at an alert of `rule` on `camera` saying `text` (our alert line, made of checked names),
        billed to `payer`. Never raises: a look that cannot happen is a Check saying why."""
        t0 = time.monotonic() if started is None else started

        def unverified(why: str) -> Check:
            return Check(None, reason=why, seconds=time.monotonic() - t0)

        if not frames:
            return unverified("the alert has no frame to look at")
        if self.look is None or not self.look.available:
            return unverified("no model is configured (set ANTHROPIC_API_KEY)")
        if self.per_rule_hour == 0 or (why := self._take(camera, rule)):
            return unverified(why or "looks are turned off (monitoring.verify_per_rule_hour: 0)")
        question = (f"Camera {camera} raised this alert (rule {rule}):\n{untrusted('alert', text, 400)}\n"
                    "Do the frames show it?")
        try:
            resp = await self.look(frames, question, payer, self.timeout)
        except LLMBudgetExceeded as exc:
            return unverified(f"the rule owner's model budget is spent: {exc}")
        except LLMTimeout:
            return unverified(f"the model did not answer within {self.timeout:g} s")
        except (LLMError, ValueError) as exc:
            log.warning("alert check on %s/%s failed: %s", camera, rule, exc)
            return unverified(f"the model could not look ({str(exc)[:120]})")
        usage = getattr(resp, "usage", {}) or {}
        tokens = sum(int(usage.get(k, 0)) for k in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                                                     "cache_creation_input_tokens"))
        cost = float(getattr(resp, "cost", 0.0))
        said = parse_check(str(getattr(resp, "text", "")))
        if said is None:
            return Check(None, reason="the model's answer was unclear", seconds=time.monotonic() - t0,
                         tokens=tokens, cost=cost)
        seen, what, why = said
        return Check(seen, what, why, time.monotonic() - t0, tokens, cost)
