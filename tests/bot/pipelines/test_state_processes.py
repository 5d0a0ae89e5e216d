"""active_state.json with two processes on one workspace: a one-shot `chat -m "/vision start …"` and a second
long-running process beside this one (a real subprocess each, the real direct backend) lose none of its pipelines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from bot.backends.direct.backend import DirectBackend
from bot.config import Settings
from bot.pipelines.manager import PipelineManager
from bot.pipelines.request import StartRequest
from bot.pipelines.restore import restore_all
from tests.bot.cli.test_cli import ROOT, _run
from tests.bot.cli.test_cli_vision import _env
from tests.fakes.waits import patience
from tests.fixtures.inference import make_video

# A second long-running process: its own manager on the same file, one pipeline, alive until its stdin closes.
OTHER = """
import asyncio, sys
from bot.backends.direct.backend import DirectBackend
from bot.config import load_settings
from bot.pipelines.manager import PipelineManager
from bot.pipelines.request import StartRequest

async def main():
    s = load_settings()
    mgr = PipelineManager(lambda: DirectBackend(s), s.workspace / "active_state.json", s)
    await mgr.start(StartRequest(sys.argv[1], "yard", model_id="builtin/motion", max_fps=2))
    print("started", flush=True)
    await asyncio.to_thread(sys.stdin.read)

asyncio.run(main())
"""


def _names(state: Path) -> list[str]:
    return sorted(p["name"] for p in json.loads(state.read_text())["pipelines"])


async def _manager(settings: Settings) -> PipelineManager:
    return PipelineManager(lambda: DirectBackend(settings), settings.workspace / "active_state.json", settings)


async def test_a_one_shot_start_leaves_the_running_bots_pipelines_and_none_of_its_own(
    settings: Settings, base_env: dict[str, str], workspace_dir: Path
) -> None:
    state = workspace_dir / "active_state.json"
    bot = await _manager(settings)
    try:
        await bot.start(StartRequest(str(make_video(workspace_dir / "dock.mp4", frames=300)), "dock",
                                     model_id="builtin/motion", max_fps=2))
        assert _names(state) == ["dock"]
        gate = make_video(workspace_dir / "gate.mp4", frames=10, size=(320, 240))
        out = _run(["chat", "-m", f"/vision start {gate} model=builtin/motion name=gate"], _env(base_env),
                   timeout=patience(120))
        assert out.returncode == 0 and "Started gate" in out.stdout, out.stderr
        assert "not saved, not restored later" in out.stderr  # what it leaves behind, said where it is started
        # before: the one-shot rewrote the file with only "gate", and the next `serve` lost "dock"
        assert _names(state) == ["dock"]
        await bot.stop("dock")  # this process's own entry still goes when it stops it
        assert _names(state) == []
    finally:
        await bot.close()


async def test_a_live_process_keeps_its_pipelines_and_they_are_restored_once_it_died(
    settings: Settings, base_env: dict[str, str], workspace_dir: Path
) -> None:
    state = workspace_dir / "active_state.json"
    yard = make_video(workspace_dir / "yard.mp4", frames=300)
    other = subprocess.Popen([sys.executable, "-c", OTHER, str(yard)], env=_env(base_env), cwd=ROOT,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    bot = await _manager(settings)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "started", other.stderr
        await bot.start(StartRequest(str(make_video(workspace_dir / "dock.mp4", frames=300)), "dock",
                                     model_id="builtin/motion", max_fps=2))
        assert _names(state) == ["dock", "yard"]  # merged, not replaced
        saved = {p["name"]: p["process"] for p in json.loads(state.read_text())["pipelines"]}
        assert saved["yard"].split(":")[0] == str(other.pid) and saved["dock"].split(":")[0] == str(os.getpid())
        await bot.close()

        bot = await _manager(settings)  # a restart beside the live process: yard is not started a second time
        assert [h.name for h in await restore_all(bot)] == ["dock"]
        await bot.close()

        os.kill(other.pid, signal.SIGKILL)
        other.wait(timeout=patience(30))
        bot = await _manager(settings)  # its owner died: the next start brings it back, as its own now
        assert sorted(h.name for h in await restore_all(bot)) == ["dock", "yard"]
        assert {p["process"].split(":")[0] for p in json.loads(state.read_text())["pipelines"]} == {str(os.getpid())}
    finally:
        await bot.close()
        if other.poll() is None:
            other.kill()
            other.wait()
        for pipe in (other.stdin, other.stdout, other.stderr):
            if pipe is not None:
                pipe.close()
