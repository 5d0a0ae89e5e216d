"""A pipeline's camera faults as health alerts: each fault said once when it starts and once when it ends, with how
long it lasted (`cam1: video back after 2 min 13 s`); a size change once. The faults are judged from the frames
(bot/backends/faults/); here only what was said is kept."""

from __future__ import annotations

from collections import deque

from bot.backends.base import PipelineHandle
from bot.backends.faults.kinds import Fault

SAID = 64  # (kind, since) said per pipeline, newest kept: a fault is named by when it began


class CameraNews:
    """What each pipeline's camera faults still have to say; not thread-safe (the monitor's health check holds its
    lock)."""

    def __init__(self) -> None:
        self._started: dict[str, deque[tuple[str, float]]] = {}
        self._ended: dict[str, deque[tuple[str, float]]] = {}

    def news(self, h: PipelineHandle) -> list[tuple[str, str]]:
        """(rule, text) for each fault start or end of this pipeline's camera not said yet."""
        started = self._started.setdefault(h.pipeline_id, deque(maxlen=SAID))
        ended = self._ended.setdefault(h.pipeline_id, deque(maxlen=SAID))
        out: list[tuple[str, str]] = []
        for fault in sorted(h.faults, key=lambda f: f.since):
            key = (fault.kind, fault.since)
            if fault.ended is None:
                if key not in started:
                    started.append(key)
                    out.append((fault.about.rule, _start(h.name, fault)))
            elif key not in ended:
                ended.append(key)
                out.append(_end(h.name, fault))  # ... also one that began and ended between two checks
                started.append(key)
        return out

    def forget(self, pipeline_id: str) -> None:
        self._started.pop(pipeline_id, None)
        self._ended.pop(pipeline_id, None)


def _start(name: str, fault: Fault) -> str:
    return f"{name}: {fault.text}: {fault.about.advice}."


def _end(name: str, fault: Fault) -> tuple[str, str]:
    kind = fault.about
    if kind.back_rule is None:  # a one-off change (a new size)
        return kind.rule, f"{name}: {fault.text}: {kind.advice}."
    return kind.back_rule, f"{name}: {kind.back} after {fault.how_long()}."
