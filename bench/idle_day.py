"""LLM calls per simulated day: the gated heartbeat (tier 2 only on news) vs a naive always-call heartbeat."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Headline  # noqa: E402

DAY = 24 * 3600
QUICK_MINUTES = 4 * 60  # quick: the first four hours of each day instead of all 24
COST_PER_CALL = 0.01  # USD, the seed's estimate for a cached heartbeat turn


class Clock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class CountingAgent:
    """Stands in for the model: counts heartbeat turns (each is at least one Messages API call), answers OK."""

    llm_available = True

    def __init__(self) -> None:
        self.calls = 0

    async def process_heartbeat(self, text: str, frames=(), session_key: str = "heartbeat"):
        self.calls += 1
        return
        yield  # an async generator that yields nothing: HEARTBEAT_OK is never shown

    def busy(self, prefix: str = "") -> bool:
        return False


class OnePipeline:
    """A running camera whose results the simulation pushes straight into the monitor."""

    def __init__(self, clock: Clock) -> None:
        from bot.backends.base import PipelineHandle

        self.handle = PipelineHandle("p_door", "door", "direct", "rtsp://door/live", "faces + line", clock(), "running")
        self.listeners: list = []

    def add_result_listener(self, fn) -> None:
        self.listeners.append(fn)

    def snapshot(self):
        return [self.handle]

    async def list(self):
        return [self.handle]

    def latest(self, name_or_id: str):
        return None


async def simulate(root: Path, crossings_at: list[int], interval_min: float = 15.0,
                   minutes: int = 24 * 60) -> tuple[int, int, int]:
    """One day (its first `minutes`): a result every minute, crossings at the given minutes. Returns (heartbeats,
    gated calls, alerts)."""
    from bot.backends.base import InferenceResult
    from bot.config import load_settings
    from bot.monitoring.alerts import AlertRouter
    from bot.monitoring.monitor import Monitor
    from bot.scheduling.heartbeat import Heartbeat
    from bot.scheduling.inputs import SchedulerInputs
    from workspace.memory import MemoryStore

    settings = load_settings({"VISION_AGENT_WORKSPACE": str(root), "VISION_AGENT_HEARTBEAT_MINUTES": str(interval_min)})
    clock = Clock(1_772_000_000.0 - 1_772_000_000.0 % DAY)  # a midnight
    router = AlertRouter(root / ".state" / "alerts.json", cooldown_seconds=60, clock=clock)
    alerts: list = []

    async def sink(alert, channel) -> None:
        alerts.append(alert)

    router.add_sink(sink)
    pipes = OnePipeline(clock)
    monitor = Monitor(router, pipes, settings, MemoryStore(root, clock=clock, use_embeddings=False), clock=clock)
    monitor.start()
    agent = CountingAgent()
    hb = Heartbeat(SchedulerInputs(settings, agent=agent, monitor=monitor, router=router, pipelines=pipes, clock=clock))
    beat_every, beats, count_in = int(interval_min * 60), 0, 0
    events = set(crossings_at)
    for minute in range(minutes):
        clock.now += 60
        if minute in events:
            count_in += 1
        for fn in pipes.listeners:
            fn(pipes.handle, InferenceResult(values={"count_in": count_in, "count_out": 0}, timestamp=clock.now))
        await monitor.flush()
        if (minute + 1) * 60 % beat_every == 0:
            beats += 1
            await hb.run()
    return beats, agent.calls, len(alerts)


def main(quick: bool = False) -> Headline:
    """Full: three simulated days. Quick: the same three scenarios over four hours each (same monitor, router and
    heartbeat; the quiet day's six crossings fall in those hours)."""
    if quick:
        minutes = QUICK_MINUTES
        scenarios = [
            ("idle 4 h", []),
            ("quiet 4 h (6 crossings)", [5, 40, 60, 63, 150, 182]),
            ("busy 4 h (a crossing every 7 min)", list(range(0, minutes, 7))),
        ]
    else:
        minutes = 24 * 60
        scenarios = [
            ("idle day", []),
            ("quiet day (6 crossings)", [8 * 60 + 5, 9 * 60 + 40, 12 * 60, 12 * 60 + 3, 17 * 60 + 30, 18 * 60 + 2]),
            ("busy day (a crossing every 7 min)", list(range(0, 24 * 60, 7))),
        ]
    rows: dict[str, tuple[int, int]] = {}
    per = "$/day" if minutes == 24 * 60 else f"$/{minutes // 60} h"
    print(f"{'scenario':<36}{'heartbeats':>11}{'naive calls':>12}{'gated calls':>12}{'gated/naive':>12}{per:>14}")
    for label, crossings in scenarios:
        with tempfile.TemporaryDirectory() as tmp:
            beats, calls, _alerts = asyncio.run(simulate(Path(tmp), crossings, minutes=minutes))
        rows[label] = beats, calls
        naive = beats  # the always-call heartbeat asks the model on every beat
        cost = f"{naive * COST_PER_CALL:.2f} -> {calls * COST_PER_CALL:.2f}"
        print(f"{label:<36}{beats:>11}{naive:>12}{calls:>12}{calls / naive:>12.2f}{cost:>14}")
    # naive = one call per heartbeat; the figure is gated calls / naive calls per scenario
    idle, quiet, busy = (f"{calls}/{beats}" for beats, calls in rows.values())
    return Headline(figure=f"gated/naive LLM calls over {per[2:]}: idle {idle}, quiet {quiet}, busy {busy}",
                    goal="no goal (gated vs naive)", met=None)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
