"""What outlives a pipeline (bot/monitoring/outlived.py), on the real direct backend and a real Runtime: when a short
video file runs out (and when a pipeline is stopped), a watch, a rule, a scheduled snapshot and an alert route set on
its camera are told where each was set, once, mentioning who set it; the watch ends (not "7 min left" then an expiry
alert), the rule and the snapshot pause and `/vision watches|rules|jobs` say so; they act again once the camera
runs again. The router's sinks are the adapters' real hook (the REPL's and Slack's sinks register the same way)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.backends.provider import BackendProvider
from bot.commands.dispatch import run_command
from bot.config import load_settings
from bot.monitoring.alerts import Alert
from bot.monitoring.outlived import RULE
from bot.places import session_key
from bot.runtime import Runtime
from tests.fakes.waits import patience
from tests.fixtures.inference import make_video


class Sink:
    def __init__(self) -> None:
        self.got: list[tuple[Alert, str | None]] = []

    async def __call__(self, alert: Alert, channel: str | None) -> None:
        self.got.append((alert, channel))

    def ended(self) -> dict[str | None, Alert]:
        return {channel: a for a, channel in self.got if a.rule == RULE}


async def until(what: str, check: Callable[[], Any], seconds: float = 60) -> Any:
    deadline = asyncio.get_running_loop().time() + patience(seconds)
    while not (got := check()):
        assert asyncio.get_running_loop().time() < deadline, f"never: {what}"
        await asyncio.sleep(0.1)
    return got


@pytest.fixture
async def rt(direct_backend, base_env: dict[str, str], workspace_dir: Path) -> AsyncIterator[Runtime]:
    runtime = Runtime(load_settings({**base_env, "VISION_AGENT_MEDIA_DIRS": str(workspace_dir)}))
    runtime.backend = BackendProvider.of(direct_backend)
    await runtime.start()  # background: the scheduler's health tick notices the end, as in every long-running process
    try:
        yield runtime
    finally:
        await runtime.close()


async def say(rt: Runtime, line: str, user: str | None = None, channel: str | None = None) -> str:
    """A /vision line as the terminal (the operator) or as a Slack member in a thread of `channel`."""
    ctx = rt.command_context(operator=True) if user is None else rt.command_context(
        user_id=user, channel_id=channel, session_key=session_key("T1", channel or "", "1700000000.000100"))
    reply = await run_command(line, ctx)
    assert reply.ok, reply.text
    return reply.text


async def test_a_file_that_runs_out_tells_each_object_where_it_was_set_and_they_pause_or_end(
    rt: Runtime, workspace_dir: Path
) -> None:
    sink = Sink()
    rt.router.add_sink(sink)
    short = make_video(workspace_dir / "short.mp4", frames=24, size=(320, 240))
    (workspace_dir / "CAMERAS.md").write_text(f"| Name | URL |\n|---|---|\n| yard | {short} |\n| gate | {short} |\n")
    said = await say(rt, "/vision watch yard count face>20 for 2h", user="U0WATCHER", channel="C0WATCH")
    watch_id = said.split("/vision unwatch ")[1].split("`")[0]
    await say(rt, "/vision rule yard count face>20", user="U0RULER", channel="C0RULE")
    await say(rt, "/vision schedule snapshot yard every 5 minutes name=yard-snap to=C0JOBS")
    await say(rt, "/vision route C0ROUTE camera=yard")
    await say(rt, "/vision start yard model=builtin/faces")

    ended = await until("each place is told", lambda: (e := sink.ended()) and len(e) == 4 and e)
    assert ended["C0WATCH"].text.startswith("<@U0WATCHER> pipeline yard finished (its video file ran out): ")
    assert f"watch `{watch_id}` (" in ended["C0WATCH"].text and "ended without an answer" in ended["C0WATCH"].text
    assert ended["C0WATCH"].thread_ts == "1700000000.000100"  # the thread it was asked in
    assert ended["C0RULE"].text.startswith("<@U0RULER> pipeline yard finished")
    assert "rule `count_over:face>20` paused until yard runs again" in ended["C0RULE"].text
    assert "scheduled snapshot `yard-snap` paused until yard runs again" in ended["C0JOBS"].text
    assert "its alerts, routed here, stop until yard runs again" in ended["C0ROUTE"].text
    assert all("<@" not in ended[c].text for c in ("C0JOBS", "C0ROUTE"))  # the operator's: nobody to mention

    # shown where people look, and the watch is over: nothing left to expire later
    assert rt.watches.all() == []
    ctx = rt.command_context(user_id="U0WATCHER", channel_id="C0WATCH")
    listed = (await run_command("/vision watches", ctx)).text
    assert f"`{watch_id}` on *yard*" in listed and "ended at" in listed and "pipeline yard finished" in listed
    assert "left" not in listed
    gone = await run_command(f"/vision unwatch {watch_id}", ctx)
    assert not gone.ok and "already ended: pipeline yard finished" in gone.text
    rules = await say(rt, "/vision rules yard")
    assert "paused: pipeline yard finished (its video file ran out) at " in rules and "resumes when yard runs" in rules
    jobs = await say(rt, "/vision jobs")
    assert "`yard-snap`" in jobs and "paused: pipeline yard finished" in jobs

    # a scheduled run while paused posts no stale frame and is not said again
    before = len(sink.got)
    assert rt.scheduler is not None
    rt.scheduler.run_now("yard-snap")
    await until("the snapshot job ran", lambda: rt.scheduler is not None and rt.scheduler.runs["cron:yard-snap"])
    assert len(sink.got) == before

    # the camera runs again: the rule and the job act again, and listing says nothing of the pause
    longer = make_video(workspace_dir / "longer.mp4", frames=600, size=(320, 240))
    await say(rt, f"/vision start {longer} name=yard model=builtin/faces fps=5")
    await until("it runs again", lambda: any(h.name == "yard" and h.status == "running" and h.frames
                                              for h in rt.pipelines.snapshot()))
    await until("the health tick saw it run", lambda: rt.monitor.outlived.ended("yard") is None)
    assert "paused" not in await say(rt, "/vision rules yard") and "paused" not in await say(rt, "/vision jobs")
    rt.scheduler.run_now("yard-snap")
    await until("a snapshot is posted", lambda: any(a.rule == "snapshot" and a.frame for a, _ in sink.got))

    # stopped by hand: the same, said as stopped (the watch asked meanwhile ends too)
    await say(rt, "/vision watch yard count face>20 for 1h", user="U0WATCHER", channel="C0WATCH")
    sink.got.clear()
    await say(rt, "/vision stop yard")
    ended = await until("the stop is told", lambda: (e := sink.ended()) and len(e) == 4 and e)
    assert ended["C0WATCH"].text.startswith("<@U0WATCHER> pipeline yard was stopped: watch `")


async def test_a_snapshot_job_of_a_camera_that_never_ran_here_says_so_once(rt: Runtime, workspace_dir: Path) -> None:
    (workspace_dir / "CAMERAS.md").write_text("| Name | URL |\n|---|---|\n| gate | rtsp://10.0.0.7/s1 |\n")
    sink = Sink()
    rt.router.add_sink(sink)
    await say(rt, "/vision schedule snapshot gate every 10 minutes name=gate-snap to=C0JOBS", user="U0SNAP",
              channel="C0JOBS")
    assert rt.scheduler is not None
    jobs = (await run_command("/vision jobs", rt.command_context(operator=True))).text
    assert "paused: no pipeline runs on gate; resumes when gate runs again" in jobs
    for runs in (1, 2, 3):
        rt.scheduler.run_now("gate-snap")
        await until("the job ran", lambda n=runs: rt.scheduler is not None and rt.scheduler.runs["cron:gate-snap"] >= n)
    [(alert, channel)] = sink.got  # once, not at every run
    assert channel == "C0JOBS" and alert.text.startswith("<@U0SNAP> scheduled snapshot `gate-snap` skipped: no "
                                                         "pipeline runs on gate")
