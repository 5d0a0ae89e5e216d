"""Session store: key -> Messages API history, persisted as append-only JSONL and compacted by marker."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import logging
import re
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workspace.jsonl import numbered_records

log = logging.getLogger(__name__)

SUMMARY_PREFIX = "[Summary of the earlier conversation]"
# Sessions kept in memory, most recently used first out of the cache last. Every record is on disk when it is
# appended, so a session read again is the same session (as after a restart). Unbounded, every alert an hour seeds
# (each holding its frame) stayed in memory for the life of the process: +150 MB an hour in the soak.
MAX_CACHED = 128


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def is_tool_result_message(msg: dict[str, Any]) -> bool:
    """True for a user message that carries tool_result blocks (it must stay right after its tool_use)."""
    content = msg.get("content")
    return msg.get("role") == "user" and isinstance(content, list) and any(
        b.get("type") == "tool_result" for b in content
    )


def _record_type(msg: dict[str, Any]) -> str:
    return "tool_result" if is_tool_result_message(msg) else msg["role"]


@dataclass
class _Session:
    path: Path
    entries: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (id, message), full transcript
    view_start: int = 0  # index in entries where the compacted view begins
    summary: str | None = None
    files: list[dict[str, Any]] = field(default_factory=list)  # attachments shared in this session
    feedback: list[dict[str, Any]] = field(default_factory=list)  # 👍/👎 people gave this session's answers


class SessionStore:
    """Histories by opaque key; every message is written to `<dir>/<safe key>.jsonl` as it is appended.

    The in-memory view merges consecutive messages of the same role, so history() always alternates.
    Thread-safe for appends (alert sinks may seed sessions from other threads); turns serialize on `lock(key)`.
    """

    def __init__(self, dir: Path, max_cached: int = MAX_CACHED) -> None:
        self.dir = Path(dir)
        self.max_cached = max_cached
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}
        self._mutex = threading.RLock()

    def path_for(self, key: str) -> Path:
        """A safe, stable file name for any key (readable part + hash so distinct keys never collide)."""
        readable = re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("._")[:80] or "session"
        digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:10]
        return self.dir / f"{readable}-{digest}.jsonl"

    def lock(self, key: str) -> asyncio.Lock:
        """The per-session lock: hold it for a whole turn so one session's turns run one at a time."""
        with self._mutex:
            return self._locks.setdefault(key, asyncio.Lock())

    def history(self, key: str) -> list[dict[str, Any]]:
        """The (compacted) history as Messages API messages; a deep copy the caller may change."""
        with self._mutex:
            return copy.deepcopy(_view(self._load(key))[0])

    def full_transcript(self, key: str) -> list[dict[str, Any]]:
        """Every message ever appended (ignores compaction)."""
        with self._mutex:
            return copy.deepcopy([m for _, m in self._load(key).entries])

    def length(self, key: str) -> int:
        """How many messages were ever appended (compaction does not shrink it): a mark to see later what a turn
        added, e.g. whether a turn a crash interrupted had already saved its question."""
        with self._mutex:
            return len(self._load(key).entries)

    def append(self, key: str, message: dict[str, Any]) -> str:
        """Append one message (role user|assistant) and write it to the JSONL at once; returns its id."""
        if message.get("role") not in ("user", "assistant"):
            raise ValueError(f"message role must be user or assistant, got {message.get('role')!r}")
        msg = {"role": message["role"], "content": copy.deepcopy(message["content"])}
        msg_id = f"msg_{uuid.uuid4().hex[:16]}"
        with self._mutex:
            s = self._load(key)
            self._write(s, key, {"id": msg_id, "type": _record_type(msg), **msg, "ts": _now()})
            s.entries.append((msg_id, msg))
        return msg_id

    def add_files(self, key: str, files: list[dict[str, Any]]) -> None:
        """Record files shared in this session (path, media_type, file_id, name) so later turns can use them."""
        if not files:
            return
        with self._mutex:
            s = self._load(key)
            self._write(s, key, {"id": f"att_{uuid.uuid4().hex[:12]}", "type": "attachments",
                                 "files": files, "ts": _now()})
            s.files.extend(copy.deepcopy(files))

    def add_feedback(self, key: str, rating: str, user: str, message_ts: str) -> None:
        """Record a person's 👍/👎 on an answer of this session, after the turn it judges (never in history)."""
        with self._mutex:
            s = self._load(key)
            self._write(s, key, {"id": f"fb_{uuid.uuid4().hex[:12]}", "type": "feedback", "rating": rating,
                                 "user": user, "message_ts": message_ts, "after": len(s.entries), "ts": _now()})
            s.feedback.append({"rating": rating, "user": user, "message_ts": message_ts})

    def feedback(self, key: str) -> list[dict[str, Any]]:
        """The ratings given in this session, oldest first."""
        with self._mutex:
            return copy.deepcopy(self._load(key).feedback)

    def files(self, key: str) -> list[dict[str, Any]]:
        """Every file shared in this session, oldest first (survives restarts and compaction)."""
        with self._mutex:
            return copy.deepcopy(self._load(key).files)

    def compact(self, key: str, summary_text: str, keep_from_index: int) -> bool:
        """Replace messages before keep_from_index (an index into history()) with a summary.

        The cut moves back to the start of a user turn, so a tool_use never loses its tool_result.
        The JSONL keeps every message; a compaction record makes reload show the compacted view.
        Returns False when there is nothing to compact.
        """
        with self._mutex:
            s = self._load(key)
            start = _turn_start_at_or_before(s.entries, self._entry_index(s, keep_from_index), floor=s.view_start)
            if start is None or start <= s.view_start:
                return False
            keep_id = s.entries[start][0]
            self._write(s, key, {"id": f"cmp_{uuid.uuid4().hex[:12]}", "type": "compaction",
                                 "summary": summary_text, "keep_from_id": keep_id, "ts": _now()})
            s.view_start, s.summary = start, summary_text
            return True

    def keys(self) -> list[str]:
        """Keys of every session on disk or in memory."""
        found = set(self._sessions)
        for path in sorted(self.dir.glob("*.jsonl")) if self.dir.is_dir() else []:
            head = _first_record(path)
            if head and head.get("type") == "session":
                found.add(head["key"])
        return sorted(found)

    # -- internals -------------------------------------------------------------------------------------------

    def _entry_index(self, s: _Session, view_index: int) -> int:
        """Map an index in history() (merged, maybe summarised) to an index in entries."""
        starts = _view(s)[1]
        if not starts:
            return s.view_start
        return starts[min(max(view_index, 0), len(starts) - 1)] if view_index < len(starts) else len(s.entries)

    def _write(self, s: _Session, key: str, record: dict[str, Any]) -> None:
        new = not s.path.exists()
        s.path.parent.mkdir(parents=True, exist_ok=True)
        with s.path.open("a", encoding="utf-8") as f:
            if new:
                f.write(json.dumps({"type": "session", "key": key, "ts": _now()}) + "\n")
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            f.flush()  # one line per message reaches the OS at once; a crash loses at most a torn last line

    def _load(self, key: str) -> _Session:
        s = self._sessions.get(key)
        if s is None:
            s = self._sessions[key] = _read_jsonl(self.path_for(key))
            self._evict()
        else:
            self._sessions.move_to_end(key)
        return s

    def _evict(self) -> None:
        """Forget the least recently used sessions past `max_cached` (they are read from disk when used again);
        a session whose turn is running (its lock held or awaited) stays. A forgotten session's idle lock goes too."""
        for key in list(self._sessions)[: max(0, len(self._sessions) - self.max_cached)]:
            lock = self._locks.get(key)
            if lock is not None and (lock.locked() or getattr(lock, "_waiters", None)):
                continue
            del self._sessions[key]
            self._locks.pop(key, None)


def _first_record(path: Path) -> dict[str, Any] | None:
    try:
        with path.open(encoding="utf-8") as f:
            return json.loads(f.readline())
    except (OSError, ValueError, RecursionError):
        return None


def _read_jsonl(path: Path) -> _Session:
    s = _Session(path)
    if not path.exists():
        return s
    raw = path.read_text(encoding="utf-8", errors="replace")
    if raw and not raw.endswith("\n"):  # torn by a crash: end it, so the next record is not glued onto it
        with path.open("a", encoding="utf-8") as f:
            f.write("\n")

    def torn(n: int) -> None:
        log.warning("%s line %d is not a JSON object (torn write after a crash?); skipped", path.name, n)

    for n, rec in numbered_records(raw, torn):
        try:
            _apply(s, rec)
        except (AttributeError, KeyError, TypeError):  # JSON, but not a record of ours: one odd line is skipped
            log.warning("%s line %d is not a session record; skipped", path.name, n)
    return s


def _apply(s: _Session, rec: dict[str, Any]) -> None:
    kind = rec.get("type")
    if kind in ("user", "assistant", "tool_result") and "role" in rec:
        s.entries.append((rec["id"], {"role": rec["role"], "content": rec["content"]}))
    elif kind == "feedback":
        s.feedback.append({k: rec.get(k, "") for k in ("rating", "user", "message_ts")})
    elif kind == "attachments":
        s.files.extend(f for f in rec.get("files", []) if isinstance(f, dict) and f.get("path"))
    elif kind == "compaction":
        ids = [i for i, _ in s.entries]
        if rec.get("keep_from_id") in ids:
            s.view_start, s.summary = ids.index(rec["keep_from_id"]), rec.get("summary", "")


def _turn_start_at_or_before(entries: list[tuple[str, dict[str, Any]]], idx: int, floor: int) -> int | None:
    """The nearest index <= idx holding a user message that starts a turn (not a tool_result message)."""
    idx = min(idx, len(entries) - 1)
    while idx >= floor:
        msg = entries[idx][1]
        if msg["role"] == "user" and not is_tool_result_message(msg):
            return idx
        idx -= 1
    return None


def _view(s: _Session) -> tuple[list[dict[str, Any]], list[int]]:
    """The compacted view with consecutive same-role messages merged (e.g. a question after a failed turn),
    and for each view message the entry index where it starts."""
    items = [(i, m) for i, (_, m) in enumerate(s.entries) if i >= s.view_start]
    if s.summary is not None:
        summary = {"role": "user", "content": [{"type": "text", "text": f"{SUMMARY_PREFIX}\n{s.summary}"}]}
        items.insert(0, (s.view_start, summary))
    out: list[dict[str, Any]] = []
    starts: list[int] = []
    for i, m in items:
        if out and out[-1]["role"] == m["role"]:
            out[-1]["content"] = _blocks(out[-1]["content"]) + _blocks(m["content"])
        else:
            out.append({"role": m["role"], "content": m["content"]})
            starts.append(i)
    return out, starts
