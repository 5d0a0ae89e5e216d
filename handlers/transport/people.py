"""Who wrote what in Slack: display names by users.info (cached) and a thread's earlier messages by
conversations.replies, for the agent to mark every message with its author (bot/agent/quoting.py)."""

from __future__ import annotations

import html
import logging
import re
import time
from collections import OrderedDict
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.agent.quoting import Said

log = logging.getLogger(__name__)

_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#([A-Z0-9]+)(?:\|([^>]*))?>")
NAME_TTL = 3600.0  # people rename themselves; an hour-old name is good enough to tell people apart
NAMES_KEPT = 5_000
EARLIER_KEPT = 20  # the newest messages before the bot was asked; older ones rarely matter and cost tokens
PAGE = 200  # conversations.replies' documented maximum page
PAGES = 5  # a thread longer than 1,000 messages: its newest messages beyond that are not read


def clean_text(text: str, bot_user_id: str) -> str:
    """What the person wrote, minus our @-mention, with Slack's link/channel markup made plain."""
    text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", "", text or "") if bot_user_id else text or ""
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _CHANNEL.sub(lambda m: f"#{m.group(2) or m.group(1)}", text)
    return html.unescape(text).strip()


def display_name(user: dict[str, Any]) -> str:
    """The name Slack shows for a user object (profile display name, else real name, else handle)."""
    profile = user.get("profile")
    profile = profile if isinstance(profile, dict) else {}
    for value in (profile.get("display_name"), profile.get("real_name"), user.get("real_name"), user.get("name")):
        if isinstance(value, str) and value.strip():
            return value
    return ""


class PeopleBook:
    """user id -> display name, from users.info, cached for NAME_TTL. A lookup that fails (no users:read scope,
    a user from another workspace) gives '' and the id alone marks the person; it is tried again after the TTL."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._names: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._clock = clock

    async def name(self, client: Any, user_id: str) -> str:
        now = self._clock()
        hit = self._names.get(user_id)
        if hit is not None and now - hit[0] < NAME_TTL:
            return hit[1]
        try:
            resp = await client.users_info(user=user_id)
            name = display_name(resp.get("user") or {})
        except SlackApiError as exc:
            log.info("users.info for %s failed (%s); marking the person by id", user_id, exc.response.get("error"))
            name = ""
        except Exception as exc:  # a name is never worth failing the turn over (network, timeout)
            log.info("users.info for %s failed (%s); marking the person by id", user_id, type(exc).__name__)
            name = ""
        self._names[user_id] = (now, name)
        self._names.move_to_end(user_id)
        while len(self._names) > NAMES_KEPT:
            self._names.popitem(last=False)
        return name

    async def thread_before(self, client: Any, channel: str, thread_ts: str, before_ts: str,
                            bot_user_id: str) -> list[Said]:
        """The newest EARLIER_KEPT messages of a thread written before `before_ts`, each with its author; our own
        posts, edits and joins left out. A thread Slack will not show us gives []: the turn goes on without it."""
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        try:
            for _ in range(PAGES):
                resp = await client.conversations_replies(channel=channel, ts=thread_ts, limit=PAGE,
                                                          **({"cursor": cursor} if cursor else {}))
                found += [m for m in resp.get("messages") or [] if isinstance(m, dict)]
                cursor = (resp.get("response_metadata") or {}).get("next_cursor")
                if not resp.get("has_more") or not cursor:
                    break
        except SlackApiError as exc:
            log.info("thread %s in %s not read (%s)", thread_ts, channel, exc.response.get("error"))
            return []
        except Exception as exc:  # the thread's history is context, never worth failing the turn over
            log.info("thread %s in %s not read (%s)", thread_ts, channel, type(exc).__name__)
            return []
        earlier = [m for m in found if _is_earlier(m, before_ts, bot_user_id)][-EARLIER_KEPT:]
        said = []
        for m in earlier:
            text = clean_text(str(m.get("text") or ""), bot_user_id)
            if m.get("user") and not m.get("bot_id"):
                said.append(Said(m["user"], await self.name(client, m["user"]), text))
            else:  # another app's post: no person to name
                said.append(Said("", str(m.get("username") or (m.get("bot_profile") or {}).get("name") or "bot"),
                                 text, bot=True))
        return said


def _is_earlier(m: dict[str, Any], before_ts: str, bot_user_id: str) -> bool:
    try:
        earlier = float(m.get("ts") or 0) < float(before_ts)
    except ValueError:
        return False
    ours = m.get("user") == bot_user_id
    return earlier and not ours and m.get("subtype") in (None, "file_share", "thread_broadcast", "bot_message") \
        and bool(m.get("text"))
