"""Progress where the person is, whenever the wait is over a couple of seconds: the terminal chat shows what the turn
waits for (the model, a step, the detector loading on its first use) and clears it when text arrives; a one-shot
names its stages on stderr and prints the reply alone on stdout. Each sentence is printed once."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from bot.cli.render import Renderer
from bot.events import AgentEvent, EventType
from tests.bot.cli.test_cli import _screen
from tests.bot.cli.test_repl_terminal import Terminal
from tests.fakes.anthropic_api import FakeAnthropic, text, tool_use
from tests.fakes.waits import patience

ROOT = Path(__file__).resolve().parents[3]
EXE = str(Path(sys.executable).with_name("vision-agent"))
STREET = ROOT / "tests" / "fixtures" / "data" / "street.jpg"
_KEEP = ("PATH", "HOME", "LANG", "NO_PROXY", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TMPDIR")


def terminal_env(llm_env: dict[str, str]) -> dict[str, str]:
    return {**llm_env, "PYTHONPATH": str(ROOT), "TERM": "xterm", "COLUMNS": "200"}


def test_the_sentence_before_a_step_is_printed_once(tmp_path: Path) -> None:
    """It streamed live, stayed printed when the step came, then came again as the call's THINKING text."""
    for terminal in (True, False):
        buf = io.StringIO()
        out = Renderer(Console(file=buf, width=120, force_terminal=terminal))

        def event(kind: EventType, out: Renderer = out, **data: object) -> None:
            out.event(AgentEvent(kind, data), tmp_path)

        for piece in ("Let me look ", "at the ", "photo."):
            event(EventType.TEXT_DELTA, text=piece)
        event(EventType.THINKING, text="Let me look at the photo.")
        event(EventType.TOOL_CALL, id="t1", name="list_pipelines", input={})
        event(EventType.TOOL_RESULT, id="t1", name="list_pipelines", text="No pipelines.")
        event(EventType.THINKING, text="A second thought, not streamed.")  # extended thinking: shown
        for piece in ("The people ", "stand by the door."):
            event(EventType.TEXT_DELTA, text=piece)
        event(EventType.RESPONSE, text="The people stand by the door.")
        out.end_turn()
        screen = _screen(buf.getvalue())
        assert screen.count("Let me look at the photo.") == 1, screen
        assert screen.count("The people stand by the door.") == 1 and "A second thought" in screen, screen
        assert screen.index("Let me look") < screen.index("No pipelines.") < screen.index("The people stand")


@pytest.mark.slow
def test_the_terminal_shows_thinking_while_the_model_works_and_clears_it_for_the_answer(
    llm_env: dict[str, str], anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("The yard is quiet.", delay=20))
    term = Terminal(terminal_env(llm_env))
    try:
        prompt = term.wait_for(r"you>$", timeout=120).end()
        term.type("how is the yard?\n")
        term.wait_for(r"thinking…", prompt)  # at once, while the prompt is built and the request goes out
        deadline = time.monotonic() + patience(60)
        while not anthropic_api.requests:
            assert time.monotonic() < deadline, term.screen()[-2000:]
            time.sleep(0.05)
        term.wait_for(r"thinking… \d+ s", prompt)  # with the seconds waited so far
        [asked] = anthropic_api.requests
        assert asked.answered == 0.0  # shown while the model is still working, not after
        done = term.wait_for(r"The yard is quiet\.\n+you>$", prompt, timeout=60)
        assert "thinking…" not in term.screen()[prompt:done.end()]  # cleared: the answer took its place
    finally:
        term.close()


@pytest.mark.slow
def test_the_first_image_says_the_detector_is_loading(
    llm_env: dict[str, str], anthropic_api: FakeAnthropic, workspace_dir: Path
) -> None:
    """The detector loads on first use (10-30 s): the terminal says so during the step, not a silent wait."""
    photo = shutil.copy(STREET, workspace_dir / "street.jpg")
    anthropic_api.enqueue(tool_use(("run_inference", {"image": str(photo), "model_id": "builtin/people"}),
                                   text="Let me count them."),
                          text("I count several people."))
    term = Terminal(terminal_env(llm_env))
    try:
        prompt = term.wait_for(r"you>$", timeout=120).end()
        term.type("how many people are in street.jpg?\n")
        step = term.wait_for(r"→ Looking at the image \(run_inference", prompt, timeout=60).end()
        term.wait_for(r"Looking at the image….*loading the detector", step, timeout=120)
        done = term.wait_for(r"I count several people\.\n+you>$", step, timeout=180)
        final = term.screen()
        assert "loading the detector" not in final[step:done.end()]  # the spinner went with the wait
        assert final.count("Let me count them.") == 1
    finally:
        term.close()


def _one_shot(args: list[str], env: dict[str, str], err: Path) -> subprocess.Popen:
    with err.open("wb") as stderr:
        return subprocess.Popen([EXE, "chat", *args], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr,
                                stdin=subprocess.DEVNULL, text=True)


def _wait_line(path: Path, needle: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + patience(timeout)
    while needle not in path.read_text(errors="replace"):
        assert proc.poll() is None, f"ended before {needle!r}: {path.read_text()}"
        assert time.monotonic() < deadline, f"{needle!r} never came: {path.read_text()}"
        time.sleep(0.05)


@pytest.mark.slow
def test_a_one_shot_names_its_stages_on_stderr_and_prints_the_reply_alone(
    llm_env: dict[str, str], anthropic_api: FakeAnthropic, workspace_dir: Path, tmp_path: Path
) -> None:
    """`chat -m … --image` on a cold start was silent for 56 s; the reply stays the only thing on stdout."""
    photo = shutil.copy(STREET, workspace_dir / "street.jpg")
    anthropic_api.enqueue(tool_use(("run_inference", {"image": str(photo), "model_id": "builtin/people"})),
                          text("Several people walk down the street.", delay=15))
    env = {**{k: v for k, v in os.environ.items() if k in _KEEP}, **llm_env, "PYTHONPATH": str(ROOT)}
    err = tmp_path / "stderr.log"
    proc = _one_shot(["-m", "how many people?", "--image", str(photo)], env, err)
    try:
        _wait_line(err, "vision-agent: Looking at the image…\nvision-agent: loading the detector", proc)  # first use
        _wait_line(err, "vision-agent: the model is reading the results…", proc, timeout=180)
        assert len(anthropic_api.requests) == 2 and anthropic_api.requests[1].answered == 0.0  # said while waiting
        out, _ = proc.communicate(timeout=patience(120))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.read_text()
    assert out == "Several people walk down the street.\n"
    lines = [line for line in err.read_text().splitlines() if not line.startswith("annotated frame: ")]
    assert all(line.startswith("vision-agent: ") for line in lines), lines
    assert len(lines) == len(set(lines)), lines  # each stage named once


def test_a_clip_that_comes_after_another_alert_names_its_own(tmp_path: Path) -> None:
    """Clips are cut after their alert was shown: under a busy terminal another camera's ALERT line came between,
    and "▶ alert clip saved to …" read as that one's (field test). It names its camera, rule and time."""
    from dataclasses import replace

    from bot.monitoring.alerts import Alert

    buf = io.StringIO()
    out = Renderer(Console(file=buf, width=200, force_terminal=False))
    gate = Alert("gate", "line_crossed", "line crossed (in +1)", time=1_800_000_000.0)
    dock = Alert("dock", "class_appears:truck", "truck appeared", time=1_800_000_003.0)
    out.alert(gate, tmp_path)
    out.alert(dock, tmp_path)
    out.clip(replace(gate, clip_path=str(tmp_path / "clips" / "c1.mp4")))
    out.clip(dock)  # none was cut
    at = time.strftime("%H:%M:%S", time.localtime(gate.time))
    lines = _screen(buf.getvalue()).splitlines()
    assert f"▶ gate [line_crossed] {at}: alert clip saved to {tmp_path / 'clips' / 'c1.mp4'}" in lines[-2], lines
    assert "no clip for the dock [class_appears:truck]" in lines[-1], lines
