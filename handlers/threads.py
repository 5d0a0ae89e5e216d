"""Threads are sessions: where a Slack message belongs, which threads the bot is in (persisted), dedupe."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinydb import Query, TinyDB

DM_ROOT = "dm"


def session_key(team: str, channel: str, root: str) -> str:
    """`slack:TEAM:CHANNEL:THREAD_ROOT_TS` (root is `dm` for a user's top-level DM conversation)."""
    return f"slack:{team}:{channel}:{root}"


@dataclass(frozen=True)
class Conversation:
    """Where one accepted message belongs and where the answer goes."""

    team: str
    channel: str
    message_ts: str  # the person's message: reactions go on it
    thread_ts: str | None  # where replies go; None only for a top-level DM (answered in the DM itself)
    user: str
    is_dm: bool = False

    @property
    def key(self) -> str:
        return session_key(self.team, self.channel, self.thread_ts or DM_ROOT)


def conversation_for(event: dict[str, Any], team: str) -> Conversation:
    """The conversation of a message event: threads by their root, top-level DMs as the user's DM session."""
    channel, ts = event["channel"], event["ts"]
    is_dm = event.get("channel_type") == "im" or channel.startswith("D")
    thread = event.get("thread_ts")
    if is_dm:
        root = thread if thread and thread != ts else None
    else:
        root = thread or ts  # a mention at top level is answered in the thread rooted at it
    return Conversation(team, channel, ts, root, event.get("user", ""), is_dm)


class ThreadBook:
    """Threads the bot has answered (or posted, like alerts): later messages there need no mention.

    Persisted in TinyDB so a restart does not make the bot deaf in its own threads.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = TinyDB(path)
        self._table = self._db.table("threads")
        self._lock = threading.Lock()
        self._known = {(r["channel"], r["thread_ts"]) for r in self._table.all()}

    def known(self, channel: str, thread_ts: str | None) -> bool:
        return bool(thread_ts) and (channel, thread_ts) in self._known

    def remember(self, team: str, channel: str, thread_ts: str, origin: str = "reply") -> None:
        with self._lock:
            if (channel, thread_ts) in self._known:
                return
            self._known.add((channel, thread_ts))
            self._table.upsert({"team": team, "channel": channel, "thread_ts": thread_ts, "origin": origin,
                                "since": time.time()},
                               (Query().channel == channel) & (Query().thread_ts == thread_ts))

    def close(self) -> None:
        self._db.close()


class Deduper:
    """Remembers recently taken messages (channel, ts) and event ids so retries and the
    app_mention/message double delivery are answered once. Bounded; old entries fall out."""

    def __init__(self, capacity: int = 10_000) -> None:
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity

    def seen(self, *keys: str) -> bool:
        return any(k in self._seen for k in keys if k)

    def add(self, *keys: str) -> None:
        for k in keys:
            if k:
                self._seen[k] = None
                self._seen.move_to_end(k)
        while len(self._seen) > self._capacity:
            self._seen.popitem(last=False)
