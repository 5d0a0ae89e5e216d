"""Who asks (`Requester`) and the one allowlist check: `/vision` commands, alert buttons and agent tools call it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from workspace.chunking import OPERATOR as OPERATOR_AUDIENCE
from workspace.chunking import SITE

if TYPE_CHECKING:
    from bot.config import Settings

LOCAL_CHANNEL = "cli"  # channel_id the CLI REPL passes to the command core
CONTROLLED = "pipelines, rules and schedules"  # what control commands and pipeline tools change
MEMORY = "the bot's memory"  # what the remember tool changes
RECIPES = "recipes"  # saving, deleting or exporting one (writes a file); running one changes pipelines: CONTROLLED


@dataclass(frozen=True)
class Requester:
    """The person (or process) a command or agent turn acts for.

    operator: whoever runs the process (the CLI) or the process itself (heartbeat, cron); the allowlists are
    Slack's and never apply to it. A Slack person is `Requester.slack(user, channel)`; an unknown asker
    (`Requester()`) is refused whenever an allowlist is set.
    unattended: no person asked for this turn (heartbeat, cron): what it reads (frames, alert text, memory) may
    carry injected text, so it gets only tools that change nothing, unless the operator opts one in.
    """

    user_id: str | None = None
    channel_id: str | None = None
    operator: bool = False
    unattended: bool = False
    place: str | None = None  # "dm", "public" or "private" (Slack's channel type); unknown counts as private
    name: str = ""  # the person's display name (Slack users.info), shown to the model as data beside the id

    @classmethod
    def slack(cls, user_id: str | None, channel_id: str | None, place: str | None = None, name: str = "") -> Requester:
        return cls(user_id or None, channel_id or None, place=place, name=name)

    @classmethod
    def unattended_for(cls, user: str | None, channel: str | None) -> Requester:
        """A turn nobody is watching, done for `user`'s object (their scheduled summary): read-only tools (unless the
        operator opted one in, and then with `user`'s rights, never the operator's), `user`'s audience, and `user`'s
        bill (bot/llm/budget.py payer_of). None: the operator's own work, the site's (UNATTENDED)."""
        if user is None:
            return UNATTENDED
        return cls(user, channel, unattended=True)

    @property
    def person(self) -> bool:
        """A Slack person asking now (not the operator, a turn nobody asked for, or an unknown asker): their words
        are marked with their id and the system prompt names them as the asker."""
        return not self.operator and not self.unattended and bool(self.user_id)


OPERATOR = Requester(LOCAL_CHANNEL, LOCAL_CHANNEL, operator=True)
UNATTENDED = Requester(LOCAL_CHANNEL, LOCAL_CHANNEL, operator=True, unattended=True)  # heartbeat and cron turns


def refusal(settings: Settings, who: Requester, what: str) -> str | None:
    """Why `who` may not change `what` (one line naming who may), or None. Empty allowlists mean everyone."""
    if who.operator:
        return None
    users, channels = settings.slack.allowed_users, settings.slack.allowed_channels
    if users and who.user_id not in users:
        names = ", ".join(f"<@{u}>" for u in users)
        return f"Only {names} may change {what}; ask one of them."
    if channels and who.channel_id not in channels:
        where = ", ".join(f"<#{c}>" for c in channels)
        return f"{what[0].upper()}{what[1:]} can only be changed from {where}."
    return None


def unattended_refusal(settings: Settings, who: Requester, tool: str, what: str | None) -> str | None:
    """Why a turn no person asked for may not run `tool` (which changes `what`), or None.

    Read-only tools (`what` None) always run; a state-changing one only when the operator named it in
    `heartbeat.unattended_tools`.
    """
    if not who.unattended or what is None or tool in settings.heartbeat.unattended_tools:
        return None
    return (f"{tool} changes {what}, and no person asked for this turn (heartbeat or cron): it is refused; "
            "report what you found instead, or the operator may allow it in heartbeat.unattended_tools.")


def audience(who: Requester) -> str:
    """Who may read what this asker's turn writes to memory, and which notes it may read (workspace.memory.may_see).

    Unattended turns write and read as the site; the operator reads everything. A Slack place not known to be public
    or a DM is taken as private (fail closed: its notes only come back in that channel).
    """
    if who.unattended and (who.operator or not who.user_id):
        return SITE
    if who.operator:
        return OPERATOR_AUDIENCE
    if who.place == "dm" or (who.channel_id or "").startswith("D"):
        return f"dm:{who.user_id or '?'}"
    kind = "public" if who.place == "public" else "private"
    return f"{kind}:{who.channel_id or '?'}"
