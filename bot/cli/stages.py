"""A one-shot's progress (`chat -m`): stage lines on stderr while the reply waits, so stdout holds the reply alone.

A stage is named only once it has lasted STAGE_AFTER seconds (a quick answer prints no stage at all) and only once;
while a tool runs, the detector loading is named too (its first use takes 10-30 s). Lines, not a spinner: stderr is
as often a log or a script's pipe as a terminal.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from bot.agent.steps import label as step_label
from bot.events import AgentEvent, EventType

STAGE_AFTER = 1.0  # seconds a stage lasts before it is named (the bound: progress within 2 s)
TICK = 0.2
STARTING = "starting (loading the agent and the workspace)…"
ASKING = "asking the model…"
READING = "the model is reading the results…"
WRITING = "the model is writing the answer…"


class Stages:
    """Names the stage a one-shot waits in, on `stream` (stderr), from a daemon thread; `close()` stops it."""

    def __init__(self, stream: TextIO | None = None, after: float = STAGE_AFTER) -> None:
        self.stream = stream or sys.stderr
        self.after = after
        self.note: Callable[[], str | None] | None = None  # e.g. the detector loading, asked during a tool
        self._lock = threading.Lock()
        self._stage: str | None = None
        self._since = time.monotonic()
        self._said = False
        self._tool = False
        self._noted: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="one-shot-stages", daemon=True)

    def start(self, stage: str | None = STARTING) -> Stages:
        self.stage(stage)
        self._thread.start()
        return self

    def stage(self, text: str | None, tool: bool = False) -> None:
        """The wait now is `text` (None: no wait worth naming)."""
        with self._lock:
            if text == self._stage:
                return
            self._stage, self._since, self._said, self._tool = text, time.monotonic(), False, tool

    def event(self, ev: AgentEvent) -> None:
        """Follow a turn's events: the model thinking, a step running, the answer being written."""
        if ev.type is EventType.TEXT_DELTA:
            self.stage(WRITING)
        elif ev.type is EventType.TOOL_CALL:
            self.stage(step_label(str(ev.data.get("name") or ""), ev.data.get("input")) + "…", tool=True)
        elif ev.type in (EventType.TOOL_RESULT, EventType.FRAME, EventType.MOMENTS):
            self.stage(READING)
        elif ev.type is EventType.THINKING:
            self.stage(ASKING)
        else:  # the reply, a question back, an error: nothing left to wait for
            self.stage(None)

    def close(self) -> None:
        self._stop.set()
        self.stage(None)

    def _run(self) -> None:
        while not self._stop.wait(TICK):
            with self._lock:
                tool = self._tool
            note = self.note() if tool and self.note is not None else None
            note = note if note and note not in self._noted else None
            with self._lock:  # a note comes under its stage's line: the stage is said first, at once
                due = self._stage is not None and not self._said and (
                    note is not None or time.monotonic() - self._since >= self.after)
                line = self._stage if due else None
                if due:
                    self._said = True
            if line:
                self._say(line)
            if note:
                self._noted.add(note)
                self._say(note + "…")

    def _say(self, line: str) -> None:
        if self._stop.is_set():
            return
        try:
            print(f"vision-agent: {line}", file=self.stream, flush=True)
        except (OSError, ValueError):  # stderr gone: nothing to tell
            pass
