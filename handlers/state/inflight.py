"""Turns taken but not finished, on disk, so a turn the process died in is finished after the restart.

One JSON line per step (`add` when a message is queued, `start` when the agent begins it, `stream` for each
streamed message it opens, `answer` once the answer is posted, `done` once the final reaction is set); loading replays the lines and keeps the open turns.
The `start` mark is the session's length before the turn began: after a crash, a longer session means the
question is already in it and the turn is resumed, not asked again (no duplicate user message, and an answer
already paid for is posted rather than asked for twice).
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from handlers.state.threads import Conversation
from workspace.atomic import write_atomic

log = logging.getLogger(__name__)


@dataclass
class OpenTurn:
    """One taken message whose turn has not finished."""

    conv: Conversation
    text: str
    files: list[dict[str, Any]] = field(default_factory=list)
    started: int | None = None  # session length when the agent began the turn; None: not begun
    answered: bool = False  # the answer (or the error line) is in the thread; only the reaction is left
    stop_line: str | None = None  # ts of the "Working on it… Stop" line, which a killed process never deleted
    streams: list[str] = field(default_factory=list)  # ts of the streamed messages it opened (never stopped if killed)

    @property
    def key(self) -> str:
        return turn_key(self.conv)


# What the model reads when a turn whose question is already in the session is taken up again after a restart.
RESUMED = ("[The bot restarted while it was answering the message above. Answer that message now; results of "
           "tools that were running are lost, so run them again if you need them.]")


def resume_plan(sessions: Any, key: str, started: int) -> tuple[str, str]:
    """How to finish a turn that had begun before a crash, from what its session holds after `started`:
    ("fresh", "") the question never reached the session; ("answer", text) the answer was saved but maybe never
    shown (post it, no model call); ("continue", RESUMED) the question is there, its answer is not."""
    tail = sessions.full_transcript(key)[started:] if sessions.length(key) > started else []
    if not tail:
        return "fresh", ""
    last = tail[-1]
    blocks = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
    if last["role"] == "assistant" and len(tail) > 1 and not any(b.get("type") == "tool_use" for b in blocks):
        text = "\n".join(b["text"] for b in blocks if b.get("type") == "text" and b.get("text"))
        if text.strip():
            return "answer", text
    return "continue", RESUMED


def turn_key(conv: Conversation) -> str:
    """The one id of a taken message (the same key the deduper uses)."""
    return f"{conv.channel}:{conv.message_ts}"


class InflightBook:
    """Open turns by key, mirrored to an append-only JSONL file (each step is one short write)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._open: dict[str, OpenTurn] = {}
        self._file: TextIO | None = None  # kept open for appends (opened on the first)
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        for line in lines:
            try:
                self._apply(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                log.debug("skipped a broken line in %s (torn by a crash?)", path.name)
        # compact: only the open turns remain
        write_atomic(path, "".join(json.dumps(self._row(t)) + "\n" for t in self._open.values()))

    def open_turns(self) -> list[OpenTurn]:
        """Turns a previous run took and did not finish, oldest first."""
        return sorted(self._open.values(), key=lambda t: _ts(t.conv.message_ts))

    def add(self, conv: Conversation, text: str, files: list[dict[str, Any]]) -> None:
        turn = OpenTurn(conv, text, list(files))
        self._write(self._row(turn), lambda: self._open.__setitem__(turn.key, turn))

    def started(self, conv: Conversation, session_length: int) -> None:
        self._step(conv, "start", entries=session_length)

    def answered(self, conv: Conversation) -> None:
        self._step(conv, "answer")

    def stop_offered(self, conv: Conversation, ts: str) -> None:
        """The turn's Stop line is in the thread (its ts): the restart deletes it if this process dies first."""
        self._step(conv, "stop", ts=ts)

    def stream_opened(self, conv: Conversation, ts: str) -> None:
        """The turn opened a streamed message (its first steps, then its answer): a process killed before the turn
        answered leaves it open with steps in progress forever, so the restart deletes it and answers afresh."""
        self._step(conv, "stream", ts=ts)

    def done(self, conv: Conversation) -> None:
        self._step(conv, "done")

    def _step(self, conv: Conversation, op: str, **extra: Any) -> None:
        key = turn_key(conv)
        if key in self._open:
            row = {"op": op, "key": key, **extra}
            self._write(row, lambda: self._apply(row))

    def _write(self, row: dict[str, Any], then: Any) -> None:
        """Append one row, flushed at once (in the OS as soon as written, as with an open-write-close per row; the
        file stays open: opening and closing it for each row cost the event loop ~0.1 ms a row, two rows per thread
        before a burst's last first step, bench/slack_latency.py)."""
        with self._lock:
            if self._file is None or self._file.closed:
                self._file = self.path.open("a", encoding="utf-8")
                weakref.finalize(self, self._file.close)  # a book let go of without close() closes it too
            self._file.write(json.dumps(row) + "\n")
            self._file.flush()
            then()
            if not self._open:  # nothing open: start the file afresh, so it never grows with the bot's age
                self._file.truncate(0)  # appends go on at the (new) end

    def close(self) -> None:
        """Every row is already in the file (flushed as written); this lets go of it."""
        with self._lock:
            if self._file is not None:
                self._file.close()

    def _apply(self, row: dict[str, Any]) -> None:
        op = row["op"]
        if op == "add":
            turn = OpenTurn(Conversation(**row["conv"]), str(row["text"]), list(row.get("files") or []),
                            row.get("started"), bool(row.get("answered")), row.get("stop_line"),
                           _stamps(row.get("streams")))
            self._open[turn.key] = turn
        elif op == "done":
            self._open.pop(row["key"], None)
        elif (known := self._open.get(row["key"])) is not None:
            if op == "start":
                known.started = int(row["entries"])
            elif op == "answer":
                known.answered = True
            elif op == "stop":
                known.stop_line = str(row["ts"])
            elif op == "stream":
                known.streams.append(str(row["ts"]))

    @staticmethod
    def _row(turn: OpenTurn) -> dict[str, Any]:
        return {"op": "add", "conv": asdict(turn.conv), "text": turn.text, "files": turn.files,
                "started": turn.started, "answered": turn.answered, "stop_line": turn.stop_line,
                "streams": turn.streams}


def _stamps(value: Any) -> list[str]:
    """A record's stream stamps: a list of strings, or none (a record of another shape is read without them)."""
    return [ts for ts in value if isinstance(ts, str)] if isinstance(value, list) else []


def _ts(ts: str) -> float:
    try:
        return float(ts)
    except ValueError:
        return float("inf")
