"""What scheduling drives and reads, typed: `SchedulerInputs` (the scheduler's, the heartbeat's) and `DrivenAgent`."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from bot.agent.tools import Attachment
    from bot.config import Settings
    from bot.events import AgentEvent
    from bot.monitoring.alerts import AlertRouter
    from bot.monitoring.monitor import Monitor
    from bot.pipelines.manager import PipelineManager
    from bot.rights import Requester
    from workspace import Workspace
    from workspace.memory import MemoryStore


class DrivenAgent(Protocol):
    """What scheduling asks of the agent (`bot.agent.loop.Agent`; the idle-day bench drives a counting fake)."""

    @property
    def llm_available(self) -> bool: ...

    def busy(self, prefix: str = "") -> bool: ...

    async def wait_idle(self, prefix: str = "", poll: float = 0.05) -> None: ...

    def process_heartbeat(self, text: str, frames: Sequence[bytes] = (), session_key: str = "heartbeat",
                          who: Requester = ...) -> AsyncIterator[AgentEvent]: ...

    def process_message(self, session_key: str, text: str, attachments: Sequence[Attachment] | None = None,
                        requester: Requester | None = None) -> AsyncIterator[AgentEvent]: ...


@dataclass(frozen=True)
class SchedulerInputs:
    """Everything the scheduler and its heartbeat use, built by the composition root; a piece this process does not
    run is None (a test of cron jobs leaves the agent out), and nothing is guessed from another piece."""

    settings: Settings
    agent: DrivenAgent | None = None
    monitor: Monitor | None = None  # its news feeds the heartbeat; its health check runs every tick
    router: AlertRouter | None = None  # where heartbeat alerts, summaries and snapshots go
    pipelines: PipelineManager | None = None
    memory: MemoryStore | None = None
    workspace: Workspace | None = None  # HEARTBEAT.md's scheduled items
    clock: Callable[[], float] = time.time
