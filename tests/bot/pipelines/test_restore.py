"""Saved pipelines come back in the background: nothing waits for a dead camera, failures back off and end as error."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bot.backends.base import BackendError, PipelineHandle
from bot.backends.provider import BackendProvider
from bot.commands.dispatch import run_command
from bot.config import Settings
from bot.pipelines.manager import PipelineManager
from bot.pipelines.restore import GIVE_UP_AFTER, restore_all
from bot.pipelines.state import PipelineConfig, load_state, save_state
from bot.runtime import Runtime
from tests.fakes.waits import patience
from tests.fixtures.slack import start_bot, stop_bot
from tests.tools.fake_backend import FakeBackend

DEAD = [f"rtsp://cam{i}.example/live" for i in range(3)]


class DeadCameras(FakeBackend):
    """Opening a dead stream blocks a worker thread until it times out, as OpenCV does (here `hang` seconds, or until
    `timed_out` is set: a test that asks whether anything waited for the cameras needs no clock)."""

    def __init__(self, hang: float = 1.5, fail_times: int = 10**6) -> None:
        super().__init__()
        self.hang, self.fail_times, self.tries = hang, fail_times, 0
        self.timed_out: threading.Event | None = None
        self.answered = 0  # opens that have returned (failed or not)

    async def start_pipeline(self, pipeline_id: str, name: str, video_reference: str, on_result=None,
                             **kw: Any) -> PipelineHandle:
        self.tries += 1
        if self.timed_out is not None:
            await asyncio.to_thread(self.timed_out.wait, patience(120))
        else:
            await asyncio.to_thread(time.sleep, self.hang)
        self.answered += 1
        if self.tries <= self.fail_times:
            raise BackendError(f"cannot open video source {video_reference}: timed out")
        return await super().start_pipeline(pipeline_id, name, video_reference, on_result=on_result, **kw)


def save_dead_cameras(path: Path, failures: int = 0) -> None:
    save_state(path, [PipelineConfig(f"pipe_{i}", f"cam{i}", url, "builtin/people", restore_failures=failures)
                      for i, url in enumerate(DEAD)])


def dead_until_released() -> DeadCameras:
    """Cameras whose opens hang until the test lets them time out: whatever returns before that did not wait."""
    backend = DeadCameras()
    backend.timed_out = threading.Event()
    return backend


async def test_runtime_start_does_not_wait_for_three_dead_cameras(settings: Settings) -> None:
    rt = Runtime(settings)
    backend = dead_until_released()
    rt.backend = BackendProvider.of(backend)
    save_dead_cameras(rt.workspace.active_state_path)
    assert backend.timed_out is not None
    await rt.start()
    try:
        assert backend.answered == 0  # started while every camera's open still hung (in line, they took 3 × 3 s)
        listing = await run_command("list", rt.command_context())
        assert all(f"*cam{i}*" in listing.text for i in range(3)) and "starting" in listing.text
        backend.timed_out.set()  # the opens time out, in the background
        deadline = time.monotonic() + patience(20)
        restored = rt.pipelines.snapshot()
        while not all(h.status == "error" for h in restored):
            assert time.monotonic() < deadline, [h.status for h in restored]
            await asyncio.sleep(0.05)
            restored = rt.pipelines.snapshot()
        listing = await run_command("list", rt.command_context())
    finally:
        backend.timed_out.set()
        await rt.close()  # does not wait for the 15 s back-off
    assert [h.status for h in restored] == ["error"] * 3
    assert all("timed out" in (h.error or "") and "retrying in 15 s" in (h.error or "") for h in restored)
    assert listing.text.count("retrying in 15 s") == 3


async def test_failing_source_backs_off_then_runs(tmp_path: Path, settings: Settings) -> None:
    backend = DeadCameras(hang=0.0, fail_times=2)
    mgr = PipelineManager(lambda: backend, tmp_path / "active_state.json", settings)
    save_state(mgr.state_path, [PipelineConfig("pipe_1", "door", DEAD[0], "builtin/people")])
    [handle] = await restore_all(mgr, backoff=(0.05, 0.05))
    assert handle.status == "running" and backend.tries == 3
    assert load_state(mgr.state_path)[0].restore_failures == 0  # a success clears the record


async def test_error_says_when_it_retries_and_the_user_can_remove_it(tmp_path: Path, settings: Settings) -> None:
    backend = DeadCameras(hang=0.0)
    mgr = PipelineManager(lambda: backend, tmp_path / "active_state.json", settings)
    save_state(mgr.state_path, [PipelineConfig("pipe_1", "door", DEAD[0], "builtin/people")])
    task = asyncio.create_task(restore_all(mgr, backoff=(30.0,)))
    for _ in range(100):
        await asyncio.sleep(0.01)
        if mgr.snapshot() and mgr.snapshot()[0].status == "error":
            break
    [h] = mgr.snapshot()
    assert h.status == "error" and "retrying in 30 s" in (h.error or "")
    await mgr.stop("door")  # the user removes it while it backs off
    assert await asyncio.wait_for(task, 5) and backend.tries == 1  # the retry is dropped, not run
    assert load_state(mgr.state_path) == []  # and it stays gone after a restart


async def test_a_source_that_failed_at_every_restart_is_listed_not_opened(tmp_path: Path, settings: Settings) -> None:
    backend = DeadCameras(hang=0.0)
    mgr = PipelineManager(lambda: backend, tmp_path / "active_state.json", settings)
    save_dead_cameras(mgr.state_path, failures=GIVE_UP_AFTER)
    restored = await restore_all(mgr, backoff=(0.01,))
    assert backend.tries == 0 and [h.status for h in restored] == ["error"] * 3
    assert f"failed at the last {GIVE_UP_AFTER} start-ups" in (restored[0].error or "")
    assert len(load_state(mgr.state_path)) == 3  # kept until the user removes them


async def test_one_try_per_restart_counts_towards_giving_up(tmp_path: Path, settings: Settings) -> None:
    backend = DeadCameras(hang=0.0)
    path = tmp_path / "active_state.json"
    save_state(path, [PipelineConfig("pipe_1", "door", DEAD[0], "builtin/people")])
    for _ in range(GIVE_UP_AFTER):
        await restore_all(PipelineManager(lambda: backend, path, settings))
    assert backend.tries == GIVE_UP_AFTER
    await restore_all(PipelineManager(lambda: backend, path, settings))
    assert backend.tries == GIVE_UP_AFTER  # the next start-up no longer opens it


async def test_slack_connects_while_three_dead_cameras_still_hang(slack_env, slack_api, workspace_dir) -> None:
    """Connected before any camera's open returned (in line, 3 dead cameras held the connection 3 × their timeout).
    No clock: on a busy machine a bound in seconds fails when nothing waited (CI, 2026-11-28: 4.0 s of a 3 s bound)."""
    save_dead_cameras(workspace_dir / "active_state.json")
    backend = dead_until_released()
    assert backend.timed_out is not None
    try:
        running = await start_bot(slack_env, slack_api, backend=backend)
        try:
            assert backend.answered == 0 and backend.tries >= 1  # the opens had begun, and none had returned
        finally:
            backend.timed_out.set()
            await stop_bot(running)
    finally:
        backend.timed_out.set()


async def test_the_log_warns_on_the_first_failure_and_when_retries_end_not_at_each_retry(
        tmp_path: Path, settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    """The REPL printed two more WARNING lines at each retry of each dead camera, beside its pipeline_error alert."""
    backend = DeadCameras(hang=0.0)
    mgr = PipelineManager(lambda: backend, tmp_path / "active_state.json", settings)
    save_state(mgr.state_path, [PipelineConfig("pipe_1", "door", DEAD[0], "builtin/people")])
    with caplog.at_level(logging.INFO, logger="bot.pipelines.restore"):
        [handle] = await restore_all(mgr, backoff=(0.01, 0.01, 0.01))
    assert handle.status == "error" and backend.tries == 4
    said = [(r.levelno, r.getMessage()) for r in caplog.records if "could not be restored" in r.getMessage()]
    assert [level for level, _ in said] == [logging.WARNING, logging.INFO, logging.INFO, logging.WARNING]
    assert "retrying in 0.01 s" in said[0][1] and "not retried" in said[-1][1]
