"""The scheduler thread: survives failing jobs, never overlaps a job with itself, coroutines on the main loop."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.config import Settings
from bot.objects.when import parse_when
from bot.scheduling.heartbeat.checklist import scheduled_items
from bot.scheduling.inputs import SchedulerInputs
from bot.scheduling.scheduler import Scheduler
from tests.bot.monitor_helpers import JPEG, Clock, FakePipelines, make_router, result
from tests.fakes.waits import patience
from workspace.memory import MemoryStore


def hb_settings(settings: Settings, **hb: object) -> Settings:
    return settings.model_copy(update={"heartbeat": settings.heartbeat.model_copy(update=hb)})


@pytest.fixture
async def sched(settings: Settings):
    s = Scheduler(SchedulerInputs(settings), tick_seconds=0.01)
    yield s
    s.stop()


async def wait_for(cond, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + patience(timeout)
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


async def test_survives_a_failing_job_and_keeps_running_the_others(sched: Scheduler, caplog) -> None:
    good: list[float] = []

    def broken() -> None:
        raise RuntimeError("camera exploded")

    sched.every(0.03, broken, "broken")
    sched.every(0.03, lambda: good.append(time.monotonic()), "good")
    with caplog.at_level(logging.ERROR, logger="bot.scheduling.scheduler"):
        sched.start()
        await wait_for(lambda: sched.failures["broken"] >= 3 and len(good) >= 3)
    assert sched._thread is not None and sched._thread.is_alive()
    assert "scheduled job broken failed: camera exploded" in caplog.text


async def test_a_slow_job_never_overlaps_itself(sched: Scheduler) -> None:
    active, peak = [0], [0]
    lock = threading.Lock()

    def slow() -> None:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.25)
        with lock:
            active[0] -= 1

    sched.every(0.02, slow, "slow")
    sched.start()
    await wait_for(lambda: sched.runs["slow"] >= 2 and sched.skipped["slow"] >= 3)
    assert peak[0] == 1


async def test_coroutine_jobs_run_on_the_main_loop(sched: Scheduler) -> None:
    loop = asyncio.get_running_loop()
    seen: list[bool] = []

    async def job() -> None:
        seen.append(asyncio.get_running_loop() is loop)

    sched.every(0.02, job, "async")
    sched.start()
    await wait_for(lambda: len(seen) >= 2)
    assert all(seen)


async def test_stop_cancels_a_running_coroutine_job_and_ends_the_thread(sched: Scheduler) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def long_job() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    sched.every(0.02, long_job, "long")
    sched.start()
    thread = sched._thread
    await asyncio.wait_for(started.wait(), 3)
    await asyncio.to_thread(sched.stop)
    await asyncio.wait_for(cancelled.wait(), 3)
    assert thread is not None and not thread.is_alive()
    assert sched.failures["long"] == 0


async def test_heartbeat_runs_at_a_fractional_interval_and_an_idle_one_calls_nothing(settings: Settings) -> None:
    s = Scheduler(SchedulerInputs(hb_settings(settings, interval_minutes=0.001)), tick_seconds=0.01)  # every 60 ms
    outcomes: list[str] = []
    run = s.heartbeat.run

    async def recorded() -> str:
        outcomes.append(await run())
        return outcomes[-1]

    s.heartbeat.run = recorded  # type: ignore[method-assign]
    s.start()
    try:
        await wait_for(lambda: len(outcomes) >= 3)
    finally:
        s.stop()
    assert set(outcomes) == {"idle"}


def test_cron_jobs_persist_and_the_daily_summary_is_seeded_once(settings: Settings) -> None:
    s = Scheduler(SchedulerInputs(settings))
    assert [j.describe() for j in s.jobs()] == ["daily_summary: daily_summary, daily at 18:00"]
    s.add_job("cam1-hourly", "snapshot", camera="cam1", **parse_when("every hour"))
    assert s.remove_job("daily_summary")

    again = Scheduler(SchedulerInputs(settings))  # a restart: jobs come back, the deleted default stays deleted
    assert [j.describe() for j in again.jobs()] == ["cam1-hourly: snapshot of cam1, every 60 min"]
    with pytest.raises(ValueError, match="unknown job action"):
        again.add_job("x", "launch_rockets", at="10:00")
    with pytest.raises(ValueError, match="needs a camera"):
        again.add_job("x", "snapshot", at="10:00")
    with pytest.raises(ValueError, match="either a daily time"):
        again.add_job("x", "daily_summary")


def test_parse_when() -> None:
    assert parse_when("at 18:00") == {"at": "18:00"}
    assert parse_when("daily at 6:30") == {"at": "06:30"}
    assert parse_when("every hour") == {"every_minutes": 60}
    assert parse_when("every 15 minutes") == {"every_minutes": 15}
    assert parse_when("every 2 days") == {"every_minutes": 2880}
    for bad in ("tomorrow-ish", "at 25:00", "every 0 minutes"):
        with pytest.raises(ValueError):
            parse_when(bad)


def test_heartbeat_tags_and_cron_jobs_read_the_same_phrases() -> None:
    """One parser: what `/vision schedule` accepts, a HEARTBEAT.md tag accepts too, with the same meaning."""
    phrases = ["at 18:00", "daily at 6:30", "every hour", "every 15 minutes", "every 2h", "every 30 min"]
    items = scheduled_items("\n".join(f"- check {i} [{p}]" for i, p in enumerate(phrases)))
    assert [i.text for i in items] == [f"check {i}" for i in range(len(phrases))]
    for item, phrase in zip(items, phrases, strict=True):
        want = parse_when(phrase)
        got = {"at": item.at} if item.at else {"every_minutes": item.every.total_seconds() / 60}
        assert got == want, phrase
    # an impossible time is no schedule: the line stays an ordinary (untagged) item
    assert scheduled_items("- look at the gate [at 25:00]\n- count [every 0 minutes]") == []


async def test_snapshot_job_posts_the_latest_frame_of_the_camera(settings: Settings, tmp_path: Path) -> None:
    clock = Clock()
    router, sink = make_router(tmp_path, clock)
    pipes = FakePipelines()
    pipes.add("cam1")
    pipes.push("cam1", result(faces=2))
    memory = MemoryStore(tmp_path, clock=clock, use_embeddings=False)
    s = Scheduler(SchedulerInputs(settings, router=router, pipelines=pipes, memory=memory), tick_seconds=0.01)
    s.add_job("cam1-hourly", "snapshot", camera="cam1", every_minutes=60)
    s.start()
    try:
        s.run_now("cam1-hourly")
        await wait_for(lambda: sink.alerts)
    finally:
        s.stop()
    [alert] = sink.alerts
    assert (alert.camera, alert.rule, alert.frame) == ("cam1", "snapshot", JPEG)
    assert alert.text == "scheduled snapshot (2 faces)"
    assert "snapshot: 2 faces" in memory.get_daily_observations(camera="cam1")


async def test_interval_jobs_wait_for_active_hours(settings: Settings) -> None:
    three_am = datetime(2026, 3, 4, 3, 0, tzinfo=UTC).timestamp()
    s = Scheduler(SchedulerInputs(hb_settings(settings, active_hours="07:00-22:00"), clock=lambda: three_am),
                  tick_seconds=0.01)
    fired: list[str] = []
    s.actions["snapshot"] = lambda job: fired.append(job.name)
    s.add_job("night", "snapshot", camera="cam1", every_minutes=1)  # a saved job repeats at most every minute
    s.every(0.01, lambda: fired.append("interval"), "interval", active_hours=True)  # what an interval job runs on
    s.start()
    try:
        await asyncio.sleep(0.3)
        assert fired == []
        s.run_now("night")  # an explicit run is not held back
        await wait_for(lambda: fired == ["night"])
    finally:
        s.stop()
