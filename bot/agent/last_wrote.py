"""When a person last wrote in a place, from the session files: where "since I was last here" starts."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from bot.agent.quoting import author_of
from bot.agent.sessions import SessionStore
from bot.places import place_of
from bot.rights import Requester
from workspace.jsonl import read_jsonl


def _in_place(key: str, who: Requester) -> bool:
    """Slack sessions are `slack:TEAM:CHANNEL:ROOT` (every thread of the channel is the place); the terminal's are
    `cli:…` and its only person is the operator."""
    if who.operator:
        return key.split(":")[0] == "cli"
    place = place_of(key)
    return place is not None and place[0] == who.channel_id


def _times(path: Path, who: Requester) -> list[float]:
    out = []
    for rec in read_jsonl(path):
        try:
            if rec.get("type") != "user":
                continue
            content = rec["content"]  # no content: KeyError below, not a message
            texts = [content] if isinstance(content, str) else [b.get("text", "") for b in content
                                                                 if isinstance(b, dict)]
            if who.operator or any(author_of(t) == who.user_id for t in texts if isinstance(t, str)):
                out.append(datetime.fromisoformat(str(rec["ts"]).replace("Z", "+00:00")).timestamp())
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a foreign record is no message of this person's
    return out


def last_wrote(sessions_dir: Path, who: Requester, skip: int = 0) -> float | None:
    """When `who` last wrote to the bot in their channel (the operator: in the terminal), leaving out their newest
    `skip` messages (a turn leaves out the one that asked); None if never (or nobody known)."""
    if not who.operator and not (who.user_id and who.channel_id):
        return None
    store = SessionStore(sessions_dir)  # fresh: a read of what is on disk now, never a stale cached view
    times = [t for key in store.keys() if _in_place(key, who) for t in _times(store.path_for(key), who)]
    times.sort()
    return times[-1 - skip] if len(times) > skip else None
