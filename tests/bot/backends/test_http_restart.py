"""HTTP backend restart: a bot killed without close() leaves its hosted pipeline running; the next start adopts it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.backends.http.backend import HttpBackend
from bot.config import load_settings
from bot.pipelines.manager import PipelineManager
from bot.pipelines.restore import restore_all
from tests.fakes.waits import patience
from tests.fixtures.inference import REPO, make_video

pytestmark = pytest.mark.slow

# With both cores busy (the other test worker, a build) one server call can take longer than the 30 s default:
# a bound that only a failure waits out.
SLOW_SERVER = {"request_timeout": 180}

# One bot process: starts a pipeline through the manager, says its id, then waits to be killed (no close()).
CRASHING_BOT = """
import asyncio, sys
from pathlib import Path
from bot.backends.http.backend import HttpBackend
from bot.config import load_settings
from bot.pipelines.manager import PipelineManager
from bot.pipelines.request import StartRequest

async def main(workspace, url, video, state):
    settings = load_settings({"VISION_AGENT_WORKSPACE": workspace, "VISION_AGENT_HEARTBEAT_MINUTES": "0",
                              "INFERENCE_SERVER_URL": url}, inference={"request_timeout": 180})
    manager = PipelineManager(lambda: HttpBackend(settings), Path(state), settings)
    handle = await manager.start(StartRequest(video, "door", model_id="builtin/faces", max_fps=10))
    print(handle.pipeline_id, handle.status, flush=True)
    await asyncio.sleep(300)

asyncio.run(main(*sys.argv[1:]))
"""


async def _until(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + patience(timeout)
    while not await predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.2)


def _server_id(state: Path) -> str:
    return json.loads(state.read_text())["pipelines"][0]["server_id"]


async def _run_and_kill_bot(workspace: Path, url: str, video: Path, state: Path) -> str:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    err_path = workspace.parent / "crashing_bot.err"
    err = err_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHING_BOT, str(workspace), url, str(video), str(state)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True,
    )
    try:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), patience(200))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # a crash: nothing is closed, the server keeps the pipeline
        proc.wait(timeout=10)
        proc.stdout.close()
        err.close()
    assert line.strip(), f"the bot process said nothing; its stderr ends:\n{err_path.read_text()[-3000:]}"
    pipeline_id, status = line.split()
    assert status == "running"
    return pipeline_id


async def test_restart_adopts_the_pipeline_the_server_kept_and_restarts_one_it_lost(
    own_inference_server, base_env, workspace_dir, tmp_path
):
    inference_server = own_inference_server  # it counts and, failing, ends what is new on the server: its own
    settings = load_settings({**base_env, "INFERENCE_SERVER_URL": inference_server}, inference=SLOW_SERVER)
    probe = HttpBackend(settings)
    before = set(await probe.server_pipelines())
    video = make_video(tmp_path / "long.mp4", size=(320, 240), frames=400)  # ~40 s at 10 fps: outlives the test
    state = workspace_dir / "active_state.json"
    managers: list[PipelineManager] = []
    try:
        pipeline_id = await _run_and_kill_bot(workspace_dir, inference_server, video, state)
        old = _server_id(state)
        assert old in await probe.server_pipelines()

        backend = HttpBackend(settings)
        managers.append(PipelineManager(lambda: backend, state, settings))
        seen = []
        managers[0].add_result_listener(lambda h, r: seen.append(h.pipeline_id))
        restored = await restore_all(managers[0])
        assert [(h.pipeline_id, h.status) for h in restored] == [(pipeline_id, "running")]
        assert set(await probe.server_pipelines()) - before == {old}  # adopted: no second copy on the server
        await _until(lambda: asyncio.sleep(0, bool(seen)))  # and its results flow to this process
        assert set(seen) == {pipeline_id} and _server_id(state) == old

        await managers[0].close()  # graceful: ends it on the server, keeps it in active_state.json
        await _until(lambda: _gone(probe, old))
        fresh = HttpBackend(settings)
        managers.append(PipelineManager(lambda: fresh, state, settings))
        restored = await restore_all(managers[1])
        assert [(h.pipeline_id, h.status) for h in restored] == [(pipeline_id, "running")]
        new = _server_id(state)
        assert new != old and set(await probe.server_pipelines()) - before == {new}
    finally:
        for manager in managers:
            await manager.close()
        for leftover in set(await probe.server_pipelines()) - before:  # a failed test leaves nothing running
            probe.client().terminate_inference_pipeline(leftover)


async def _gone(backend: HttpBackend, server_id: str) -> bool:
    return server_id not in await backend.server_pipelines()
