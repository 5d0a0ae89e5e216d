"""`/vision` at the terminal as a new user meets it: the REPL on a pty with no API key and a video file outside the
workspace, and `chat -m '/vision …'` without a key."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.config import Settings
from bot.media.resolve import MediaError, resolve_video
from tests.bot.cli import test_cli
from tests.bot.cli.test_cli import EXE, ROOT, _run
from tests.fakes.waits import patience
from tests.fixtures.inference import make_video


def _env(base_env: dict[str, str]) -> dict[str, str]:
    """test_cli's clean environment, running this checkout's code (the console script may be installed from another)."""
    return {**test_cli._env(base_env), "PYTHONPATH": str(ROOT)}


FOOTAGE = ROOT / "tests" / "fixtures" / "data"


class Terminal:
    """`vision-agent chat` on a pseudo-terminal: type lines, wait for what the screen shows."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.fd, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 500, 0, 0))  # wide: one reply, one line
        self.proc = subprocess.Popen([EXE, "chat"], env=env, cwd=cwd, stdin=slave,
                                     stdout=slave, stderr=slave, close_fds=True)
        os.close(slave)
        self.screen = ""

    def type(self, line: str) -> None:
        os.write(self.fd, (line + "\n").encode())

    def wait_for(self, pattern: str, seconds: float = 60.0) -> re.Match[str]:
        deadline = time.monotonic() + patience(seconds)
        rx = re.compile(pattern)
        while time.monotonic() < deadline:
            plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", self.screen)
            if m := rx.search(plain):
                return m
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                try:
                    self.screen += os.read(self.fd, 65536).decode(errors="replace")
                except OSError:  # the process ended
                    break
        raise AssertionError(f"{pattern!r} never shown; the screen:\n{self.screen[-3000:]}")

    def close(self) -> None:
        try:
            self.type("/quit")
            self.proc.wait(timeout=patience(30))
        finally:
            self.proc.kill()
            os.close(self.fd)


@pytest.fixture
def terminal(base_env: dict[str, str], tmp_path: Path):
    made: list[Terminal] = []

    def open_in(cwd: Path) -> Terminal:
        made.append(Terminal(_env(base_env), cwd))
        return made[-1]

    yield open_in
    for t in made:
        t.close()


def start_crossing(terminal: Callable[[Path], Terminal], tmp_path: Path) -> Terminal:
    """A terminal in a folder holding the crossing clip, typing the start of `street` on it with the clip's line."""
    street = tmp_path / "footage"
    street.mkdir()
    shutil.copy(FOOTAGE / "crossing.mp4", street / "crossing.mp4")  # three men cross right to left, 5 fps
    line = ",".join(str(v) for point in json.loads((FOOTAGE / "crossing.json").read_text())["line"] for v in point)
    term = terminal(street)
    term.wait_for(r"you> ")
    term.type(f"/vision start {street / 'crossing.mp4'} name=street line={line}")
    return term


def test_one_shot_vision_needs_no_key_and_answers_in_commands(base_env: dict[str, str]) -> None:
    out = _run(["chat", "-m", "/vision status"], _env(base_env))
    assert out.returncode == 0, out.stderr
    assert "Status" in out.stdout and "No pipelines" in out.stdout and "ANTHROPIC_API_KEY" not in out.stderr
    out = _run(["chat", "-m", "/vision stop gate"], _env(base_env))
    assert out.returncode == 1 and "no pipeline 'gate'" in out.stdout
    assert "/vision list" in out.stdout and "list_pipelines" not in out.stdout  # a command, not a tool, to follow
    out = _run(["chat", "-m", "hello"], _env(base_env))
    assert out.returncode == 2 and "ANTHROPIC_API_KEY" in out.stderr  # free text still needs the model


def test_one_shot_start_says_it_is_working_in_plain_text(base_env: dict[str, str], tmp_path: Path) -> None:
    make_video(tmp_path / "gate.mp4", frames=10, fps=10, size=(320, 240))
    out = _run(["chat", "-m", f"/vision start {tmp_path / 'gate.mp4'} model=builtin/motion name=gate"], _env(base_env))
    assert out.returncode == 0, out.stderr
    starting = next(line for line in out.stderr.splitlines() if line.startswith("Starting"))
    assert "builtin/motion" in starting and "`" not in starting  # the core's markup, said as a terminal says it
    assert "Started gate" in out.stdout


def test_the_terminal_starts_a_file_outside_the_workspace_and_says_what_it_runs(
    terminal, tmp_path: Path
) -> None:
    videos = tmp_path / "Downloads"
    videos.mkdir()
    make_video(videos / "door.mp4", frames=40, fps=20, size=(320, 240))
    (videos / "still.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"\0" * 64)
    term = terminal(videos)
    term.wait_for(r"you> ")
    term.type("/vision start door.mp4 fps=4 name=door model=builtin/faces")  # relative to where the chat runs
    term.wait_for(r"Starting door\.mp4 with model `?builtin/faces`?: opening the source and loading the detector")  # at once, before the result
    started = term.wait_for(r"Started door .*", seconds=120).group(0)
    assert "sampling 4 frames per second of video (about 1 in 5 of its 20 fps)" in started
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", term.screen)  # the screen without the terminal's styles
    assert plain.index("loading the detector") < plain.index("Started door")
    term.type(f"/vision start {videos / 'still.jpg'}")
    refusal = term.wait_for(r"still\.jpg' is a still image[^\n]*").group(0)
    assert "ask about it in a chat message" in refusal and "run_inference" not in refusal
    term.type("/vision stop gate")
    assert "list_pipelines" not in term.wait_for(r"no pipeline 'gate'[^\n]*").group(0)


def test_the_terminal_holds_crossings_says_them_and_keeps_rules_to_the_models_classes(
    terminal, tmp_path: Path
) -> None:
    term = start_crossing(terminal, tmp_path)
    term.wait_for(r"Started street [^\n]*every frame of the file as fast as the detector goes", seconds=120)
    first = term.wait_for(r"ALERT [\d:]+ street \[line_crossed\]: line crossed \(([^)]*)\)", seconds=120)
    summary = term.wait_for(r"pipeline finished, \+(\d+) crossed since the last alert: in (\d+) / out (\d+) "
                            r"\(held by the cooldown\); totals in (\d+) / out (\d+)", seconds=120)
    own = sum(int(n) for n in re.findall(r"\+(\d+)", first.group(1)))
    assert own + int(summary[1]) == int(summary[4]) + int(summary[5])  # the alert and the summary add up
    term.type("/vision rule street count people>2")
    added = term.wait_for(r"Rule on street: [^\n]*").group(0)
    assert "people taken as person" in added.replace("`", "") and "line_crossed" in added and "stays on" in added
    term.type("/vision rule street appears car")
    assert "person" in term.wait_for(r"street never reports `?car`?[^\n]*").group(0)
    term.type("/vision rules street")
    term.wait_for(r"line_crossed[^\n]*alerts held for \d+ s more")


@dataclass
class _Scope:
    """What a Slack command, the REST API or a tool call resolves sources with: no local files."""

    settings: Settings
    workspace: None = None
    attachments: tuple = ()


def test_other_surfaces_are_told_which_folder_to_copy_into(tmp_path: Path, settings: Settings) -> None:
    outside = make_video(tmp_path / "elsewhere.mp4", frames=5, fps=5)
    with pytest.raises(MediaError) as err:
        resolve_video(str(outside), _Scope(settings))
    assert f"copy it into {settings.workspace.resolve()}" in str(err.value) and "VISION_AGENT_MEDIA_DIRS" in str(err.value)
