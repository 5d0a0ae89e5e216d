"""The README's examples work as written: every code block is read, and each command, REST request and payload that
needs no Slack token or Roboflow key is run (the model's answers come from the Messages API emulator) against a real
`vision-agent api` on a workspace set up as the README says (`cam1` a row of CAMERAS.md). What is not run is listed
with why (printed with `-s`, and named in the failure if a new kind of example appears that nothing decides)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.monitoring.alerts import Alert
from bot.monitoring.webhooks.body import alert_record, event_body, post_body
from bot.monitoring.webhooks.signing import signed_headers
from tests.bot.cli.test_cli import EXE, ROOT
from tests.bot.cli.test_cli_vision import _env
from tests.fakes.anthropic_api import API_KEY, FakeAnthropic, text
from tests.fakes.waits import patience
from tests.fixtures.common import free_port
from tests.fixtures.inference import make_video

README = ROOT / "README.md"
TOKEN = "readme-token-0123456789abcdef"
BLOCK = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)  # in a list too
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9_]*\b|[\[\]|…]")  # `SOURCE`, `[fps=N]`, `stop|pause`: the grammar
LONG_RUNNING = {"chat", "run", "serve", "api", "mcp", "inference-server"}  # without -m: a process that stays


@dataclass(frozen=True)
class Example:
    line: int  # where its block starts in README.md
    lang: str
    text: str

    def __str__(self) -> str:
        return f"README.md:{self.line} {self.text.splitlines()[0][:90]}"


def blocks() -> list[tuple[int, str, str]]:
    source = README.read_text()
    return [(source[: m.start()].count("\n") + 1, m["lang"], textwrap.dedent(m["body"])) for m in BLOCK.finditer(source)]


def commands(body: str) -> list[str]:
    """The shell commands of a block: continuation lines joined; blank and comment lines dropped (a comment after a
    command stays: the shell drops it)."""
    joined = re.sub(r"\\\n\s*", " ", body)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def examples() -> tuple[list[Example], list[tuple[Example, str]]]:
    """What this test runs, and what it does not with why."""
    run: list[Example] = []
    skipped: list[tuple[Example, str]] = []
    for line, lang, body in blocks():
        if lang in ("", "text") and body.lstrip().startswith("/vision"):
            for cmd in (c.strip() for c in body.splitlines()):
                ex = Example(line, "vision", cmd)
                if not cmd.startswith("/vision"):
                    continue
                if PLACEHOLDER.search(cmd.removeprefix("/vision")):
                    skipped.append((ex, "grammar with placeholders, not a command to type as is"))
                else:
                    run.append(ex)
        elif lang in ("sh", "bash", "shell", "console"):
            for cmd in commands(body):
                ex = Example(line, "sh", cmd)
                why = why_not(cmd)
                (skipped.append((ex, why)) if why else run.append(ex))
        elif lang in ("json", "python"):
            run.append(Example(line, lang, body))
        else:
            skipped.append((Example(line, lang or "text", body), "not a command or request (a layout or an output)"))
    return run, skipped


def why_not(cmd: str) -> str | None:
    """Why a shell line is not run here, or None to run it."""
    words = shlex.split(cmd, comments=True)
    program = Path(words[0]).name
    if program == "make":
        return "installs .venv and runs the suite or the bot: what this very run does (make test)"
    if program in ("export", "source", ".", "set") or "=" in words[0]:
        return "shell set-up: sets keys or the environment (the tests set their own)"
    if program in ("git", "cd", "pip", "pip3", "python", "python3", "tmux", "sudo", "apt-get", "brew", "ls", "cat"):
        return "sets up or looks at the machine or the checkout: a new user's pass from a fresh clone covers it"
    if any(w.startswith(("xoxb-", "xapp-")) for w in words) or "ROBOFLOW_API_KEY" in cmd or "SLACK_" in cmd:
        return "needs Slack tokens or a Roboflow key"
    if program == "vision-agent":
        verb = next((w for w in words[1:] if not w.startswith("-")), "")
        if verb in LONG_RUNNING and "-m" not in words:
            return f"`vision-agent {verb}` stays running: its start and stop are tested in tests/bot/cli and tests/bot/api"
        return None
    if program == "curl":
        return None
    return f"`{program}` is not a command this test knows how to run"


# the holder the README's requests and one-shots go to ---------------------------------------------------------------
@dataclass
class Holder:
    port: int
    env: dict[str, str]
    llm: FakeAnthropic

    def get(self, path: str) -> dict[str, Any]:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}",
                                     headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(req, timeout=patience(30)) as resp:
            return json.loads(resp.read())


@pytest.fixture
def holder(base_env: dict[str, str], workspace_dir: Path, tmp_path: Path) -> Iterator[Holder]:
    """`vision-agent api` on a workspace whose CAMERAS.md has the README's `cam1` (a video file standing for the
    camera), and the Messages API emulator for the README's chat examples."""
    clip = make_video(workspace_dir / "cam1.mp4", frames=1800, fps=15, size=(320, 240))  # plays 2 min at fps=
    (workspace_dir / "CAMERAS.md").write_text(f"| Name | URL | Location |\n|---|---|---|\n| cam1 | {clip} | Front door |\n")
    port = free_port()
    with FakeAnthropic() as llm:
        env = _env({**base_env, "VISION_AGENT_API_TOKEN": TOKEN}) | {"ANTHROPIC_BASE_URL": llm.url,
                                                                      "ANTHROPIC_API_KEY": API_KEY}
        proc = subprocess.Popen([EXE, "api", "--port", str(port)], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        held = Holder(port, env, llm)
        try:
            deadline = time.monotonic() + patience(120)
            while True:
                try:
                    held.get("/api/health")
                    break
                except (urllib.error.URLError, ConnectionError):
                    assert proc.poll() is None and time.monotonic() < deadline, "vision-agent api did not come up"
                    time.sleep(0.2)
            yield held
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=patience(30))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# running one example ------------------------------------------------------------------------------------------------
def run_sh(cmd: str, held: Holder, cwd: Path) -> subprocess.CompletedProcess:
    """A README line as typed, through bash ($VISION_AGENT_API_TOKEN expanded there), `vision-agent` being this
    checkout's and the API's port the one the test's `vision-agent api` listens on."""
    words = shlex.split(cmd, comments=True)
    if Path(words[0]).name == "vision-agent":
        cmd = shlex.join([EXE, *words[1:]])
    return subprocess.run(["bash", "-c", cmd.replace("127.0.0.1:8081", f"127.0.0.1:{held.port}")], env=held.env,
                          cwd=cwd, capture_output=True, text=True, timeout=patience(180))


def check_sh(ex: Example, held: Holder, cwd: Path) -> None:
    words = shlex.split(ex.text, comments=True)
    if words[0] == "curl":
        done = run_sh(ex.text, held, cwd)
        assert done.returncode == 0, (str(ex), done.stderr)
        body = json.loads(done.stdout)
        assert body["status"] == "ok", (str(ex), body)
        if "pipeline" in body and body["pipeline"]["status"] == "starting":  # a start: followed as the README says
            pid = body["pipeline"]["pipeline_id"]
            deadline = time.monotonic() + patience(120)
            while (got := held.get(f"/api/pipelines/{pid}")["pipeline"])["status"] == "starting":
                assert time.monotonic() < deadline, got
                time.sleep(0.3)
            assert got["status"] == "running", (str(ex), got)
        return
    if "--image" in words:  # the README's photo: any photo of people
        for name in words[words.index("--image") + 1:][:1]:
            shutil.copy(ROOT / "tests" / "fixtures" / "data" / "street.jpg", cwd / name)
    asks_model = "-m" in words and not words[words.index("-m") + 1].startswith("/vision")
    if asks_model:
        held.llm.enqueue(text("There are several people."))
    done = run_sh(ex.text, held, cwd)
    assert done.returncode == 0, (str(ex), done.stdout, done.stderr)
    if asks_model:
        assert done.stdout.strip() == "There are several people.", (str(ex), done.stdout)


def check_vision(ex: Example, held: Holder, cwd: Path) -> None:
    # "Your first hour" names this checkout's clips and says to type its lines in the checkout's folder
    here = ROOT if "tests/fixtures/" in ex.text else cwd
    done = run_sh(shlex.join(["vision-agent", "chat", "-m", ex.text]), held, here)
    assert done.returncode == 0, (str(ex), done.stdout, done.stderr)
    assert "another vision-agent" not in done.stderr, (str(ex), done.stderr)  # answered by the running API


def check_json(ex: Example) -> None:
    data = json.loads(ex.text)
    if data.get("source") == "vision-agent":  # the webhook payload: the fields a receiver gets, all of them
        alert = Alert("door", "line_crossed", "1 crossed the line (in +1)", {"person": 1})
        real = event_body(alert_record(alert), alert, inline=False, api_base="http://127.0.0.1:8081")
        if data.get("event_type") == "batch":  # a batch: its own fields, each element fields of the single shape
            batch = post_body([{**real, "id": "1"}, {**real, "id": "2"}])
            assert set(data) == set(batch), (str(ex), set(data) ^ set(batch))
            assert data["count"] == len(data["events"]) and all(set(e) <= set(real) for e in data["events"]), str(ex)
        else:
            assert set(data) == set(real), (str(ex), set(data) ^ set(real))
    elif "mcpServers" in data:  # Claude Desktop's entry: a command and arguments that start the MCP server
        server = data["mcpServers"]["vision-agent"]
        done = subprocess.run([EXE, *server["args"], "--help"], capture_output=True, text=True,
                              timeout=patience(60), env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert server["command"] == "vision-agent" and done.returncode == 0, (str(ex), done.stderr)
    else:
        raise AssertionError(f"{ex}: a JSON example this test does not know; say here how to check it")


def check_python(ex: Example) -> None:
    scope: dict[str, Any] = {}
    exec(compile(ex.text, str(ex), "exec"), scope)  # noqa: S102 - the README's own code, run as a reader would
    body = b'{"camera": "door"}'
    headers = signed_headers("hook-secret", body, "delivery-1")
    assert scope["verified"]("hook-secret", headers, body)
    assert not scope["verified"]("hook-secret", headers, body + b" ")  # a changed body is refused
    assert not scope["verified"]("other-secret", headers, body)


@pytest.mark.slow
def test_the_readme_examples_work_as_written(holder: Holder, tmp_path: Path) -> None:
    run, skipped = examples()
    print("\nrun:\n" + "\n".join(f"  {ex}" for ex in run)
          + "\nnot run:\n" + "\n".join(f"  {ex}  ({why})" for ex, why in skipped))
    unknown = [(str(ex), why) for ex, why in skipped if "knows how to run" in why]
    assert not unknown, f"README examples nothing decides for: {unknown}"
    assert any(ex.lang == "sh" and ex.text.startswith("curl") for ex in run)  # the REST example is among them
    cwd = tmp_path / "user"
    cwd.mkdir()
    # the README's photo example names a photo in the folder it is typed in: a real street photo stands in
    shutil.copy(Path(__file__).parent / "fixtures" / "data" / "street.jpg", cwd / "street.jpg")
    order = sorted(run, key=lambda ex: ex.lang != "sh")  # the REST start first: the /vision lines then see it
    for ex in order:
        if ex.lang == "sh":
            check_sh(ex, holder, cwd)
        elif ex.lang == "vision":
            check_vision(ex, holder, cwd)
        elif ex.lang == "json":
            check_json(ex)
        else:
            check_python(ex)
    status = run_sh(shlex.join(["vision-agent", "chat", "-m", "/vision status"]), holder, cwd)
    assert re.search(r"cam1 \S+: running", " ".join(status.stdout.split())), status.stdout  # the API's pipeline
