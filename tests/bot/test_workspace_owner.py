"""One long-running process per workspace (workspace/owner.py, held by the background Runtime): a second REPL on a
held workspace exits with one line naming the holder, a one-shot runs beside it, and a `--standby` process takes
over (restoring the saved pipelines) once the holder is killed -9. Real subprocesses of `vision-agent`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from bot.config import Settings
from bot.runtime import Runtime
from tests.bot.cli.test_cli import EXE, ROOT, _run
from tests.bot.cli.test_cli_vision import _env
from tests.fakes.waits import patience


def _wait(what: str, ok: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + patience(seconds)
    while not ok():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.1)


def _saved_by(state: Path) -> set[str]:
    """The pids active_state.json names as running its pipelines."""
    try:
        return {p["process"].split(":")[0] for p in json.loads(state.read_text())["pipelines"] if p.get("process")}
    except (OSError, ValueError):
        return set()


async def test_a_second_repl_on_a_held_workspace_exits_naming_the_holder(
    settings: Settings, base_env: dict[str, str]
) -> None:
    async with Runtime(settings) as rt:
        assert rt.owner.held
        out = subprocess.run([EXE, "chat"], env=_env(base_env), stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=patience(120), cwd=ROOT)
        assert out.returncode == 1, out.stderr
        line = out.stderr.strip().splitlines()[-1]
        assert f"is run by another vision-agent (pid {os.getpid()})" in line and "--standby" in line
        # one-shots take no lock and are answered by the holder (bot/commands/relay.py), which runs here: its loop
        # must stay free while they run
        beside = await asyncio.to_thread(_run, ["chat", "-m", "/vision status"], _env(base_env), None, 120)
        assert beside.returncode == 0 and "No pipelines" in beside.stdout, beside.stderr
        assert "another vision-agent" not in beside.stderr  # nothing hidden: the holder answered
        (rt.workspace.root / "CAMERAS.md").write_text("| Name | URL |\n|---|---|\n| cam1 | rtsp://10.0.0.7/s1 |\n")
        watch = await asyncio.to_thread(_run, ["chat", "-m", "/vision watch cam1 appears person for 1h"],
                                        _env(base_env), None, 120)
        assert watch.returncode == 0 and "Watching cam1" in watch.stdout, watch
        assert [w.camera for w in rt.watches.all()] == ["cam1"]  # kept by the process that checks it
    async with Runtime(settings) as rt:  # closed: the workspace is free again
        assert rt.owner.held


def test_a_standby_takes_over_when_the_holder_is_killed(base_env: dict[str, str], workspace_dir: Path) -> None:
    state = workspace_dir / "active_state.json"
    state.write_text(json.dumps({"version": 1, "pipelines": [
        {"pipeline_id": "pipe_abc123", "name": "porch", "video_reference": str(workspace_dir / "porch.jpg"),
         "model_id": "builtin/motion"}]}))  # a picture: listed as `error` at restore, no backend needed
    env = _env(base_env)
    first = subprocess.Popen([EXE, "mcp"], env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    second = None
    try:
        _wait("the first process restored the workspace's pipelines", lambda: _saved_by(state) == {str(first.pid)})
        second = subprocess.Popen([EXE, "mcp", "--standby"], env=env, cwd=ROOT, stdin=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert second.stderr is not None
        assert "standby:" in second.stderr.readline()  # waiting, not running anything
        assert second.poll() is None and _saved_by(state) == {str(first.pid)}
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=patience(30))
        _wait("the standby took over", lambda: _saved_by(state) == {str(second.pid)})
        assert (workspace_dir / ".state" / "owner.lock").read_text().strip() == str(second.pid)
        assert "took over workspace" in second.stderr.readline()
    finally:
        for proc in (first, second):
            if proc is not None:
                if proc.poll() is None:
                    proc.kill()
                proc.wait(timeout=patience(30))
                for pipe in (proc.stdin, proc.stderr):
                    if pipe is not None:
                        pipe.close()
