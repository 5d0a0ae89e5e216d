"""Trajectories: the turns whose tool calls changed something and ended with a reply, kept per session (JSONL)."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.media.redaction import redact
from workspace.atomic import write_atomic
from workspace.jsonl import read_jsonl

log = logging.getLogger(__name__)
KEEP = 50  # per session: a recipe is saved from a recent turn; older ones only make the file grow


def scrub(value: Any) -> Any:
    """Every string in value credential-redacted (inputs the model sent may hold a camera URL with a password)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


class TrajectoryLog:
    """`<sessions>/trajectories/<session>.jsonl`: one record per successful changing turn, newest last."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._lock = threading.Lock()

    def path_for(self, key: str) -> Path:
        readable = re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("._")[:80] or "session"
        return self.folder / f"{readable}-{hashlib.sha1(key.encode()).hexdigest()[:10]}.jsonl"

    def record(self, key: str, user: str | None, channel: str | None, calls: list[dict[str, Any]], answer: str) -> None:
        rec = {"time": datetime.now(UTC).isoformat(timespec="seconds"), "session": key, "user": user,
               "channel": channel, "calls": scrub(calls), "answer": redact(answer)}
        path = self.path_for(key)
        with self._lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            kept = self._read(path)[-(KEEP - 1):]
            lines = [json.dumps(r, ensure_ascii=False) for r in [*kept, rec]]
            write_atomic(path, "\n".join(lines) + "\n")  # rewritten whole: a kill -9 never leaves half of it

    def last(self, key: str) -> dict[str, Any] | None:
        """The newest trajectory of this session."""
        found = self._read(self.path_for(key))
        return found[-1] if found else None

    def last_in_channel(self, channel: str) -> dict[str, Any] | None:
        """The newest trajectory of any session in this channel (a Slack slash command has no thread)."""
        best: dict[str, Any] | None = None
        for path in self.folder.glob("*.jsonl") if self.folder.is_dir() else []:
            for rec in self._read(path):
                if rec.get("channel") == channel and (best is None or rec["time"] >= best["time"]):
                    best = rec
        return best

    @staticmethod
    def _read(path: Path) -> list[dict[str, Any]]:
        return [rec for rec in read_jsonl(path) if isinstance(rec.get("calls"), list)]
