"""Who made an object and where (its owner and audience), and the one rule of who may change or remove it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from bot.rights import Requester, audience

if TYPE_CHECKING:
    from bot.config import Settings

Place = Literal["operator", "site", "dm", "public", "private"]
_ID = re.compile(r"^[A-Z0-9][A-Z0-9_-]{1,39}$", re.I)  # a Slack user or channel id (or the CLI's "cli")


class Owner(BaseModel):
    """Who made an object (a Slack user id; None: the operator, whoever runs the process, or config) and where (the
    channel or DM it was made in, and what kind of place that is). `audience` is who may read what it says."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    user: str | None = None
    channel: str | None = None
    place: Place = "operator"

    @field_validator("user", "channel", mode="before")
    @classmethod
    def _id(cls, v: Any) -> Any:
        return v if v is None or (isinstance(v, str) and _ID.match(v)) else None

    @classmethod
    def of(cls, who: Requester) -> Owner:
        """The owner of what `who` creates: a Slack person in their place, else the operator (the site for turns
        nobody asked for)."""
        if who.unattended and (who.operator or not who.user_id):
            return cls(place="site")  # the site's own work (heartbeat, the operator's jobs)
        if who.operator or not who.user_id:
            return cls()
        kind = audience(who).split(":", 1)[0]
        place: Place = kind if kind in ("dm", "public", "private") else "private"  # type: ignore[assignment]
        return cls(user=who.user_id, channel=who.channel_id, place=place)

    @property
    def member(self) -> bool:
        """A workspace member made it (not the operator or the site)."""
        return self.user is not None

    @property
    def audience(self) -> str:
        """Who may read it (workspace.memory.may_see): `dm:U`, `public:C`, `private:C`, `operator` or `site`."""
        if self.place in ("operator", "site"):
            return self.place
        if self.place == "dm":
            return f"dm:{self.user}"
        return f"{self.place}:{self.channel or '?'}"

    def label(self) -> str:
        """'<@U1>' or 'the operator' (how a refusal or a listing names the owner)."""
        return f"<@{self.user}>" if self.user else "the operator"


OPERATOR_OWNER = Owner()


def is_operator(settings: Settings, who: Requester) -> bool:
    """The operator (CLI, REST, MCP, config) or a Slack person the operator named in `slack.operators`."""
    return who.operator or (who.user_id is not None and who.user_id in settings.slack.operators)


def change_refusal(settings: Settings, owner: Owner | None, who: Requester, what: str) -> str | None:
    """Why `who` may not change or remove `what` (one line naming who may), or None.

    Its owner may, and an operator may; an object with no owner recorded (made before owners existed, or by the
    operator) is the operator's.
    """
    if is_operator(settings, who):
        return None
    owner = owner or OPERATOR_OWNER
    if owner.user is not None and owner.user == who.user_id:
        return None
    operators = ", ".join(f"<@{u}>" for u in settings.slack.operators)
    ask = f"ask them{' or an operator (' + operators + ')' if operators else ' or the operator'}"
    if owner.user is None:
        ask = f"ask an operator ({operators})" if operators else "ask the person who runs the bot"
    return f"{what} belongs to {owner.label()}: only they or an operator may change or remove it; {ask}."
