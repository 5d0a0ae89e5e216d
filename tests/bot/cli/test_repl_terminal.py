"""The terminal chat on a real terminal (a pty): `/vision` replies without Slack markup, every start option in the
help, a file's totals in status and one line when it runs out, drawn above the prompt, which comes back."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bot.pipelines.request import START_OPTIONS
from tests.bot.cli.test_cli import _screen
from tests.fakes.waits import patience

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "fixtures" / "data"
_KEEP = ("PATH", "HOME", "LANG", "NO_PROXY", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TMPDIR")


class Terminal:
    """`vision-agent chat` on a pty, as a person's terminal runs it; `screen()` is what they would see."""

    def __init__(self, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        code = "import sys; from bot.cli import main; sys.exit(main(sys.argv[1:]))"
        self.proc = subprocess.Popen([sys.executable, "-c", code, "chat"], stdin=slave, stdout=slave, stderr=slave,
                                     env=env, cwd=ROOT, close_fds=True)
        os.close(slave)
        self.raw = ""

    def read(self) -> None:
        while select.select([self.master], [], [], 0.05)[0]:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.raw += chunk.decode("utf-8", "replace")

    def screen(self) -> str:
        self.read()
        return _screen(self.raw)

    def wait_for(self, pattern: str, after: int = 0, timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + patience(timeout)
        while time.monotonic() < deadline:
            found = re.compile(pattern).search(self.screen(), after)
            if found:
                return found
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} never showed; the screen:\n{self.screen()[-3000:]}")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        os.close(self.master)


def test_a_file_runs_out_while_the_prompt_waits_and_the_terminal_shows_its_totals(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    clip = shutil.copy(DATA / "crossing.mp4", workspace / "walkway.mp4")
    env = {**{k: v for k, v in os.environ.items() if k in _KEEP}, "PYTHONPATH": str(ROOT), "TERM": "xterm",
           "VISION_AGENT_WORKSPACE": str(workspace), "VISION_AGENT_HEARTBEAT_MINUTES": "0", "COLUMNS": "400"}
    term = Terminal(env)
    try:
        term.wait_for(r"you>$")
        term.type("/vision help\n")
        start = term.wait_for(r"- start SOURCE").start()
        term.wait_for(r"- status — pipelines.*\nyou>$", start)
        help_text = term.screen()[start:]
        for syntax, _ in START_OPTIONS.values():
            assert syntax in help_text  # every option the parser allows, listed
        assert not re.search(r"[•`]|\*\w", help_text), help_text  # no Slack markup on a terminal

        term.type(f"/vision start {clip} line=120,0,120,300 name=walkway\n")
        started = term.wait_for(r"Started walkway pipe_\w+ on .* — \w+\.", timeout=120).end()
        term.type("/vision st")  # typing, not sent, when the file runs out
        done = term.wait_for(r"walkway finished \(the file ran out after (\d+) frames\): counted in (\d+) / out (\d+)\.",
                             started, timeout=120)
        assert int(done[1]) > 0 and int(done[3]) >= 1  # the clip's three men cross right to left
        assert term.wait_for(r"\nyou> /vision st$", done.end())  # the prompt is back below it, with what was typed
        term.type("atus\n")
        status = term.wait_for(r"walkway pipe_\w+: finished.*\n", done.end())
        assert f"counted in {done[2]} / out {done[3]}" in status[0]
        assert "model builtin/people" in status[0] and "visualization" not in status[0]
        assert not re.search(r"[•`]|\*walkway", status[0])
    finally:
        term.close()


def test_saved_frames_are_named_by_camera_and_time_and_never_overwritten(tmp_path: Path) -> None:
    from bot.cli.render import save_frame

    paths = [save_frame(tmp_path, {"image": b"\xff\xd8one"}, "alert-Front door!") for _ in range(3)]
    names = [Path(p).name for p in paths if p]
    assert len(set(names)) == 3 and all(re.fullmatch(r"alert-Front-door_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d(-\d)?\.jpg", n)
                                        for n in names), names
    assert save_frame(tmp_path, {"image": None}, "x") is None
