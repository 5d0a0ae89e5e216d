"""Who pays for a model call, and the shares of the daily budget (`llm.cost_limit_daily`) each payer may use.

One member of the workspace must not spend the day's budget for everyone: a Slack person may spend at most
`llm.user_share` of it, one channel (a DM too) at most `llm.channel_share`, and people together stop short of the
last `llm.heartbeat_reserve`, which only the heartbeat and cron (unattended turns) may use. The operator (CLI, MCP)
is held by the reserve, not by the shares. Checked in `UsageTracker.reserve` with what calls in flight hold, so
concurrent turns of one person cannot all pass the same check.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.config import LLMConfig
    from bot.rights import Requester

TOTAL = "total"
PEOPLE = "people"  # everything but unattended turns: held below the heartbeat's reserve


@dataclass(frozen=True)
class Payer:
    """Who a call is for: a Slack person in a channel, the operator, or an unattended turn (heartbeat, cron)."""

    user: str | None = None
    channel: str | None = None
    unattended: bool = False

    @property
    def person(self) -> bool:
        return self.user is not None

    def keys(self) -> list[str]:
        """The budget lines this payer's spend counts on (totals kept per day in usage.json under `by`)."""
        keys = [TOTAL] if self.unattended else [TOTAL, PEOPLE]
        if self.channel is not None and self.user is not None:
            keys.append(f"channel:{self.channel}")
        if self.user is not None:
            keys.append(f"user:{self.user}")
        return keys  # widest first


def payer_of(who: Requester) -> Payer | None:
    """The asker as a payer: a Slack person (in an unknown channel: one channel "unknown"), the operator, or
    unattended; None for a turn that names nobody (no user, no channel): only the daily cap holds it."""
    if who.unattended:  # a member's scheduled work is theirs to pay for; the site's comes from the reserve
        return Payer(unattended=True) if who.operator or not who.user_id else payer_for(who.user_id, who.channel_id)
    if who.operator:
        return Payer()
    if who.user_id is None and who.channel_id is None:
        return None
    return Payer(who.user_id or "unknown", who.channel_id or "unknown")


def payer_for(user: str | None, channel: str | None) -> Payer:
    """Who pays for model work nobody is watching (a confirm watch's look, a scheduled summary): its owner, a Slack
    person, on their own share and their channel's (held below the heartbeat's reserve like any person's turn); the
    operator's objects count on the people's part of the day. Never the reserve: that is the heartbeat's."""
    return Payer(user, channel or "unknown") if user else Payer()


def caps(payer: Payer, limit: float, cfg: LLMConfig) -> dict[str, float]:
    """The most each of the payer's budget lines may reach today, in USD; the narrowest first, so the line a payer
    gets names their own share before the shared ones."""
    out: dict[str, float] = {}
    for key in reversed(payer.keys()):
        if key.startswith("user:"):
            out[key] = limit * cfg.user_share
        elif key.startswith("channel:"):
            out[key] = limit * cfg.channel_share
        else:
            out[key] = limit * (1 - cfg.heartbeat_reserve) if key == PEOPLE else limit
    return out


def until_midnight(now: datetime | None = None) -> str:
    """"in 4 h 12 min": when the day's spend starts again from zero (the bot's local midnight)."""
    now = now or datetime.now()
    left = datetime.combine(now.date() + timedelta(days=1), datetime.min.time()) - now
    hours, minutes = divmod(int(left.total_seconds()) // 60, 60)
    return f"in {hours} h {minutes} min" if hours else f"in {max(minutes, 1)} min"


def over_line(key: str, spent: float, cap: float, limit: float) -> str:
    """The one line a payer gets when `key` has reached its cap."""
    when = f"it resets at midnight (server time), {until_midnight()}"
    if key == TOTAL:
        return (f"daily LLM budget of ${limit:.2f} reached (spent ${spent:.2f} today); "
                "raise llm.cost_limit_daily in config.yaml or wait until tomorrow")
    if key == PEOPLE:
        return (f"today's LLM budget for conversations is used up (${spent:.2f} of ${cap:.2f}; the rest is kept for "
                f"the heartbeat, llm.heartbeat_reserve); {when}")
    if key.startswith("user:"):
        return (f"you have used your share of today's LLM budget (${spent:.2f} of ${cap:.2f}, llm.user_share); "
                f"{when}, or ask the operator to raise it")
    return (f"this channel has used its share of today's LLM budget (${spent:.2f} of ${cap:.2f}, "
            f"llm.channel_share); {when}, or ask the operator to raise it")
