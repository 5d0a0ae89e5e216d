"""Threads are sessions: where a Slack message belongs, which threads the bot is in (persisted), dedupe."""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.places import DM_ROOT, place_of, session_key
from workspace.atomic import write_atomic

__all__ = ["DM_ROOT", "place_of", "session_key"]  # the format lives in the core; the adapter's names stay

@dataclass(frozen=True)
class Conversation:
    """Where one accepted message belongs and where the answer goes."""

    team: str
    channel: str
    message_ts: str  # the person's message: reactions go on it
    thread_ts: str | None  # where replies go; None only for a top-level DM (answered in the DM itself)
    user: str
    is_dm: bool = False
    public: bool = False  # Slack said channel_type "channel"; a mention (no type given) counts as private

    @property
    def place(self) -> str:
        """Where the asker is, for the audience of what their turn remembers (bot.rights.audience)."""
        return "dm" if self.is_dm else "public" if self.public else "private"

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
    return Conversation(team, channel, ts, root, event.get("user", ""), is_dm, event.get("channel_type") == "channel")


class ThreadBook:
    """Threads the bot has answered (or posted, like alerts): later messages there need no mention.

    Persisted as append-only JSON lines, so a restart does not make the bot deaf in its own threads and
    remembering a thread costs one short write (it runs before the envelope's ack goes out). Entries older
    than `keep_days` are dropped when the file is loaded.
    """

    def __init__(self, path: Path, keep_days: float = 90.0) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._known: dict[tuple[str, str], dict[str, Any]] = {}
        cutoff = time.time() - keep_days * 86400
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        for line in lines:
            try:
                row = json.loads(line)
                if row["since"] >= cutoff:
                    self._known[(row["channel"], row["thread_ts"])] = row
            except (ValueError, KeyError, TypeError, RecursionError):
                continue  # a line cut short by a crash: skip it
        if len(self._known) < len(lines):  # compact: expired, duplicate or broken lines
            write_atomic(path, "".join(json.dumps(r) + "\n" for r in self._known.values()))

    def known(self, channel: str, thread_ts: str | None) -> bool:
        return bool(thread_ts) and (channel, thread_ts) in self._known

    def remember(self, team: str, channel: str, thread_ts: str, origin: str = "reply") -> None:
        with self._lock:
            if (channel, thread_ts) in self._known:
                return
            row = {"team": team, "channel": channel, "thread_ts": thread_ts, "origin": origin, "since": time.time()}
            self._known[(channel, thread_ts)] = row
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")

    def close(self) -> None:
        """Nothing buffered: every remember() is already on disk."""


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
