"""One workspace, one truth: while a long-running `vision-agent` (the REST API, the MCP server) runs a workspace, a
`chat -m '/vision …'` typed beside it answers with that process's pipelines (through its local API,
bot/commands/relay.py), not "No pipelines." and a note; a start or stop typed there acts in it. Real subprocesses,
the real direct backend; `POST /api/pipelines` answers `starting` at once and GET follows it to `running`."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bot.cli.test_cli import EXE, ROOT, _run
from tests.bot.cli.test_cli_vision import _env
from tests.fakes.waits import patience
from tests.fixtures.common import free_port
from tests.fixtures.inference import make_video

TOKEN = "api-token-0123456789abcdef"


def _wait(what: str, ok: Callable[[], Any], seconds: float = 120.0) -> Any:
    deadline = time.monotonic() + patience(seconds)
    while not (got := ok()):
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.2)
    return got


class Api:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        req = urllib.request.Request(self.base + path, method=method, headers={"Authorization": f"Bearer {TOKEN}"},
                                     data=json.dumps(body).encode() if body is not None else None)
        try:
            with urllib.request.urlopen(req, timeout=patience(30)) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def up(self) -> bool:
        try:
            return self.call("GET", "/api/health")[0] == 200
        except (urllib.error.URLError, ConnectionError):
            return False


@pytest.fixture
def holder(request: pytest.FixtureRequest, base_env: dict[str, str]) -> Iterator[tuple[str, Api | None]]:
    """A long-running `vision-agent api` or `vision-agent mcp` on the workspace, ready."""
    kind = request.param
    port = free_port()
    env = _env({**base_env, "VISION_AGENT_API_TOKEN": TOKEN})
    args = ["api", "--port", str(port)] if kind == "api" else ["mcp"]
    proc = subprocess.Popen([EXE, *args], env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    state = Path(base_env["VISION_AGENT_WORKSPACE"]) / ".state" / "local_api.json"
    try:
        api = Api(port) if kind == "api" else None
        _wait("the holder is ready", lambda: proc.poll() is None and state.exists() and (api is None or api.up()))
        yield kind, api
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=patience(30))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdin is not None:
            proc.stdin.close()
    if proc.returncode == 0:  # closed cleanly: gone with it (a stale one names a pid that no longer holds the lock)
        assert not state.exists()


@pytest.mark.parametrize("holder", ["api", "mcp"], indirect=True)
def test_a_one_shot_beside_the_running_process_answers_with_its_pipelines(holder, base_env: dict[str, str],
                                                                          workspace_dir: Path) -> None:
    kind, api = holder
    env = _env(base_env)
    video = make_video(workspace_dir / "yard.mp4", frames=1200, fps=10, size=(320, 240))  # 2 min in real time
    if api is not None:
        asked = time.monotonic()
        status, body = api.call("POST", "/api/pipelines", {"source": str(video), "name": "yard", "fps": 2,
                                                           "model": "builtin/motion"})
        answered = time.monotonic() - asked
        assert status == 201 and body["pipeline"]["status"] == "starting", body
        assert answered < 5  # the detector loads after the answer (it took 17-26 s before the answer)
        assert body["follow"].startswith(f"GET /api/pipelines/{body['pipeline']['pipeline_id']}")
        _wait("GET shows it running", lambda: api.call("GET", "/api/pipelines/yard")[1]["pipeline"]["status"]
              == "running")
    else:  # typed beside it, the file named relative to where it is typed: started there, where it runs on
        started = subprocess.run([EXE, "chat", "-m", f"/vision start {video.name} name=yard fps=2 model=builtin/motion"],
                                 env=env, cwd=workspace_dir, capture_output=True, text=True, timeout=patience(180))
        assert started.returncode == 0 and "Started yard" in started.stdout, started
        assert "not saved, not restored later" not in started.stderr  # it runs on in the holder
    for verb in ("status", "list"):
        out = _run(["chat", "-m", f"/vision {verb}"], env)
        assert out.returncode == 0, out.stderr
        said = " ".join(out.stdout.split())  # the terminal wraps long lines
        assert re.search(r"yard \S+: running, \d+ frames.*model builtin/motion", said), out.stdout
        assert "No pipelines" not in out.stdout and "another vision-agent" not in out.stderr, out
    stop = _run(["chat", "-m", "/vision stop yard"], env)
    assert stop.returncode == 0, stop
    again = _run(["chat", "-m", "/vision list"], env)
    assert re.search(r"yard \S+: stopped", " ".join(again.stdout.split())), again.stdout
    if api is not None:
        assert api.call("GET", "/api/pipelines/yard")[1]["pipeline"]["status"] == "stopped"
