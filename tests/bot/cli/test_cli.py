"""The `vision-agent` command, run as a real subprocess (and in-process for the cheap error paths)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.cli import main
from tests.fakes.anthropic_api import FakeAnthropic, error, text, tool_use
from tests.fakes.waits import patience

ROOT = Path(__file__).resolve().parents[3]
EXE = str(Path(sys.executable).with_name("vision-agent"))
_KEEP = ("PATH", "HOME", "LANG", "NO_PROXY", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TMPDIR")


def _env(base_env: dict[str, str], **extra: str) -> dict[str, str]:
    """A clean environment: nothing from the developer's shell but PATH/HOME (so no real keys leak in)."""
    return {**{k: v for k, v in os.environ.items() if k in _KEEP}, **base_env, **extra}


def _run(args: list[str], env: dict[str, str], stdin: str | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    # A bound only a failure waits out: a process that imports inference takes ~15 s idle, minutes with both cores busy.
    return subprocess.run([EXE, *args], env=env, input=stdin, capture_output=True, text=True,
                          timeout=patience(timeout), cwd=ROOT)


def _png(path: Path) -> Path:
    from PIL import Image

    Image.new("RGB", (32, 24), (200, 30, 30)).save(path, format="PNG")
    return path


def test_help_is_fast_and_lists_the_commands() -> None:
    t0 = time.perf_counter()
    out = subprocess.run([EXE, "--help"], capture_output=True, text=True, timeout=30)
    elapsed = time.perf_counter() - t0
    assert out.returncode == 0 and out.stderr == ""
    for cmd in ("init", "chat", "run", "serve", "inference-server"):
        assert cmd in out.stdout
    # Fast because nothing heavy loads for it: the proof is what is imported, not a stopwatch on a busy machine.
    probe = "import sys\ntry:\n    from bot.cli import main; main(['--help'])\nexcept SystemExit: pass\n" \
            "print([m for m in ('torch', 'inference', 'anthropic', 'slack_bolt', 'cv2') if m in sys.modules])"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert loaded.stdout.strip().splitlines()[-1] == "[]", loaded.stdout[-300:]
    assert elapsed < 10.0, f"--help took {elapsed:.2f}s"  # ~0.3 s idle; only a pathological start fails this


def test_cli_module_imports_nothing_heavy() -> None:
    code = ("import sys, bot.cli; bot.cli.build_parser(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'inference', 'torch', 'cv2', 'supervision', 'anthropic', 'pydantic', 'rich', 'slack_bolt'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_one_shot_without_key_exits_2_with_one_line(base_env: dict[str, str]) -> None:
    out = _run(["chat", "-m", "hello"], _env(base_env))
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "ANTHROPIC_API_KEY" in lines[0] and "export" in lines[0]
    assert "Traceback" not in out.stderr


def test_invalid_setting_exits_2_naming_it(base_env: dict[str, str], monkeypatch, capsys) -> None:
    for k, v in _env(base_env, VISION_AGENT_BACKEND="grpc").items():
        monkeypatch.setenv(k, v)
    assert main(["chat", "-m", "hi"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "VISION_AGENT_BACKEND" in err and "inference.backend" in err and "'direct', 'http' or 'webrtc'" in err


def test_missing_image_exits_2(llm_env: dict[str, str], monkeypatch, capsys) -> None:
    for k, v in llm_env.items():
        monkeypatch.setenv(k, v)
    assert main(["chat", "-m", "look", "--image", "/nonexistent/cat.jpg"]) == 2
    assert "/nonexistent/cat.jpg does not exist" in capsys.readouterr().err


def test_an_image_over_the_pixel_limit_exits_2_before_it_is_decoded(
    llm_env: dict[str, str], monkeypatch, capsys, tmp_path: Path, png_12000: bytes, anthropic_api: FakeAnthropic
) -> None:
    for k, v in llm_env.items():
        monkeypatch.setenv(k, v)
    (tmp_path / "huge.png").write_bytes(png_12000)
    assert main(["chat", "-m", "look", "--image", str(tmp_path / "huge.png")]) == 2
    err = capsys.readouterr().err
    assert "huge.png is 12000×12000 (144 MP); the limit is 40 MP — send a smaller image." in err
    assert anthropic_api.requests == []


def test_one_shot_prints_only_the_reply(llm_env: dict[str, str], anthropic_api: FakeAnthropic) -> None:
    anthropic_api.enqueue(text("Two cameras are registered."))
    out = _run(["chat", "-m", "-", "--session", "t1"], llm_env, stdin="what cameras do I have?\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Two cameras are registered.\n"
    [req] = anthropic_api.ok_requests
    assert "what cameras do I have?" in str(req.body["messages"][-1]["content"])
    assert (Path(llm_env["VISION_AGENT_WORKSPACE"]) / "AGENTS.md").is_file()  # the workspace was initialised


def test_image_reaches_the_model_as_image_block(llm_env: dict[str, str], anthropic_api: FakeAnthropic,
                                                tmp_path: Path) -> None:
    img = _png(tmp_path / "red.png")
    anthropic_api.enqueue(text("A red rectangle."))
    out = _run(["chat", "-m", "what is this?", "--image", str(img)], llm_env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "A red rectangle."
    content = anthropic_api.ok_requests[0].body["messages"][-1]["content"]
    images = [b for b in content if b.get("type") == "image"]
    assert len(images) == 1 and images[0]["source"]["type"] == "base64"
    note = " ".join(b.get("text", "") for b in content if b.get("type") == "text")
    assert str(img.resolve()) in note  # tools can open it by path


@pytest.mark.slow
def test_one_shot_prints_only_the_reply_when_the_vlm_is_offline(
    llm_env: dict[str, str], anthropic_api: FakeAnthropic, tmp_path: Path
) -> None:
    """ask_about_image's VLM cannot load offline: inference logs a long rich traceback (on stdout) before the tool
    falls back to Claude's own vision. The reply must come out alone, the fallback reach the model."""
    img = _png(tmp_path / "red.png")
    anthropic_api.enqueue(
        tool_use(("ask_about_image", {"image": str(img.resolve()), "question": "what colour is it?"})),
        text("It is red."),
    )
    out = _run(["chat", "-m", "what colour is this?", "--image", str(img)], llm_env)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "It is red.\n"
    assert "Traceback" not in out.stderr and "Loading weights" not in out.stderr
    fallback = str(anthropic_api.ok_requests[-1].body["messages"][-1]["content"])
    assert "florence2 is not available" in fallback and "Answer the question from this image yourself" in fallback


def test_one_shot_error_event_is_nonzero(llm_env: dict[str, str], anthropic_api: FakeAnthropic) -> None:
    anthropic_api.enqueue(error(400, message="messages: bad request"))
    out = _run(["chat", "-m", "hi"], llm_env)
    assert out.returncode == 1
    assert out.stdout == ""
    assert "Traceback" not in out.stderr and out.stderr.strip()


@pytest.mark.slow
def test_repl_shows_no_progress_bars_when_recall_loads_the_embedding_model(
    llm_env: dict[str, str], anthropic_api: FakeAnthropic
) -> None:
    memory = Path(llm_env["VISION_AGENT_WORKSPACE"]) / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "2026-01-05.md").write_text("# Observations 2026-01-05\n\n## cam1\n- 10:00:00 seen: 2 people\n")
    anthropic_api.enqueue(tool_use(("recall", {"query": "people on cam1"})), text("Two people on cam1."))
    out = _run(["chat", "--session", "bars"], llm_env, stdin="who was on cam1?\n")
    assert out.returncode == 0, out.stderr
    assert "Two people on cam1." in out.stdout
    assert "seen: 2 people" in str(anthropic_api.ok_requests[-1].body["messages"][-1]["content"])  # recall ran
    assert "Loading weights" not in out.stdout + out.stderr and "it/s]" not in out.stdout + out.stderr


def test_repl_vision_help_works_without_key(base_env: dict[str, str]) -> None:
    out = _run(["chat"], _env(base_env), stdin="/vision help\nhello\n/quit\n")
    assert out.returncode == 0, out.stderr
    assert "Usage" in out.stdout and "snapshot" in out.stdout and "route" in out.stdout
    assert out.stdout.count("ANTHROPIC_API_KEY") >= 2  # in the banner and again for the free-text line
    assert "Traceback" not in out.stderr


def test_repl_renders_tool_calls_results_and_reply(llm_env: dict[str, str], anthropic_api: FakeAnthropic) -> None:
    anthropic_api.enqueue(
        tool_use(("think", {"thought": "plan the check"}), ("no_such_tool", {}), text="Checking first."),
        text("Hello **there**."),
    )
    out = _run(["chat", "--session", "r1"], llm_env, stdin="/image /nope.png\nhi\n")  # EOF ends the REPL
    assert out.returncode == 0, out.stderr
    assert "Checking first." in out.stdout  # text next to tool calls is shown as thinking
    # steps carry the label Slack shows (bot/agent/steps.py), with the tool id and arguments after it
    assert "→ Thinking it through (think" in out.stdout and "plan the check" in out.stdout
    assert "→ Working on it (no_such_tool" in out.stdout and "Unknown tool" in out.stdout  # the is_error result
    assert "Hello there." in out.stdout and "**" not in out.stdout  # markdown rendered, not raw
    assert len(anthropic_api.ok_requests) == 2
    assert "/nope.png does not exist" in out.stdout


def test_repl_image_goes_with_the_next_message_only(llm_env: dict[str, str], anthropic_api: FakeAnthropic,
                                                    tmp_path: Path) -> None:
    img = _png(tmp_path / "a.png")
    anthropic_api.enqueue(text("A red image."), text("Still red."))
    out = _run(["chat"], llm_env, stdin=f"/image {img}\nwhat is it?\nand now?\n")
    assert out.returncode == 0, out.stderr
    first, second = (r.body["messages"][-1]["content"] for r in anthropic_api.ok_requests)
    assert [b["type"] for b in first].count("image") == 1
    assert [b["type"] for b in second].count("image") == 0


def test_run_without_slack_tokens_starts_the_repl(base_env: dict[str, str], tmp_path: Path) -> None:
    ws = tmp_path / "fresh"
    out = _run(["run"], _env(base_env, VISION_AGENT_WORKSPACE=str(ws)), stdin="/quit\n")
    assert out.returncode == 0, out.stderr
    assert "you>" in out.stdout
    assert (ws / "CAMERAS.md").is_file() and "Created the workspace" in out.stderr


def test_init_reports_created_then_nothing(base_env: dict[str, str], monkeypatch, capsys) -> None:
    for k, v in base_env.items():
        monkeypatch.setenv(k, v)
    assert main(["init"]) == 0
    first = capsys.readouterr().out
    assert "created skills/ppe-compliance/SKILL.md" in first and "created config.yaml" in first
    assert main(["init"]) == 0
    assert "nothing to create" in capsys.readouterr().out


@pytest.mark.parametrize("port", ["0", "70000"])
def test_inference_server_rejects_bad_port(port: str, capsys) -> None:
    assert main(["inference-server", "--port", port]) == 2
    assert "--port" in capsys.readouterr().err


def test_unwritable_workspace_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("VISION_AGENT_WORKSPACE", str(blocker / "ws"))
    monkeypatch.setenv("VISION_AGENT_HEARTBEAT_MINUTES", "0")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert main(["init"]) == 1
    assert main(["chat", "-m", "hi"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("cannot create the workspace" in e and "VISION_AGENT_WORKSPACE" in e for e in err)


def test_alerts_and_frames_are_printed_and_saved(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from bot.cli.render import Renderer
    from bot.events import AgentEvent, EventType
    from bot.monitoring.alerts import Alert

    buf = io.StringIO()
    out = Renderer(Console(file=buf, width=200))
    out.alert(Alert(camera="dock", rule="person_count", text="2 people at the dock", frame=b"\xff\xd8jpeg"), tmp_path)
    out.event(AgentEvent(EventType.FRAME, {"image": b"\xff\xd8x", "caption": "faces", "path": None}), tmp_path)
    out.event(AgentEvent(EventType.ERROR, {"text": "camera unreachable"}), tmp_path)
    text_out = buf.getvalue()
    saved = sorted(tmp_path.rglob("*.jpg"))
    assert "ALERT" in text_out and "dock" in text_out and "2 people at the dock" in text_out
    assert len(saved) == 2 and all(str(p) in text_out for p in saved)
    assert saved[0].read_bytes().startswith(b"\xff\xd8")
    assert "error: camera unreachable" in text_out


def test_ctrl_c_stops_the_answer_not_the_repl(llm_env: dict[str, str], anthropic_api: FakeAnthropic) -> None:
    import signal

    anthropic_api.enqueue(text("too slow", delay=4), text("second answer"))  # teardown waits out the delay
    proc = subprocess.Popen([EXE, "chat"], env=llm_env, cwd=ROOT, text=True, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdin.write("first\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 20
        while not anthropic_api.requests and time.monotonic() < deadline:  # the slow request is in flight
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate("second\n", timeout=30)  # then EOF: the REPL ends
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "(stopped)" in out and "too slow" not in out and "second answer" in out
    assert len(anthropic_api.requests) == 2


def _screen(raw: str) -> str:
    """What a terminal shows after `raw`: lines, carriage returns, cursor-up and erase-line (what rich's live
    view uses to draw and remove itself); colours and cursor visibility are ignored."""
    import re

    rows, row, col = [""], 0, 0
    for token in re.findall(r"\x1b\[[0-9;?]*[A-Za-z]|\n|\r|[^\x1b\n\r]+", raw):
        if token == "\n":
            row, col = row + 1, 0
            rows += [""] * (row + 1 - len(rows))
        elif token == "\r":
            col = 0
        elif token.startswith("\x1b["):
            if token.endswith("A"):
                row = max(0, row - int(token[2:-1] or 1))
            elif token == "\x1b[2K":
                rows[row] = ""
        else:
            line = rows[row].ljust(col)
            rows[row], col = line[:col] + token + line[col + len(token):], col + len(token)
    return "\n".join(r.rstrip() for r in rows).strip()


def test_answer_streams_live_on_a_terminal_and_prints_once_on_a_pipe(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from bot.cli.render import Renderer
    from bot.events import AgentEvent, EventType

    def run(terminal: bool) -> tuple[str, list[str]]:
        buf = io.StringIO()
        out = Renderer(Console(file=buf, width=100, force_terminal=terminal))
        seen = []
        for piece in ("Let me ", "look."):
            out.event(AgentEvent(EventType.TEXT_DELTA, {"text": piece}), tmp_path)
            seen.append(_screen(buf.getvalue()))
        out.event(AgentEvent(EventType.TOOL_CALL, {"id": "t1", "name": "list_pipelines", "input": {}}), tmp_path)
        out.event(AgentEvent(EventType.TEXT_DELTA, {"text": "Wrong start"}), tmp_path)
        out.event(AgentEvent(EventType.TEXT_DELTA, {"text": "", "restart": True}), tmp_path)
        out.event(AgentEvent(EventType.TEXT_DELTA, {"text": "Two **cameras** are up."}), tmp_path)
        out.event(AgentEvent(EventType.RESPONSE, {"text": "Two **cameras** are up."}), tmp_path)
        return _screen(buf.getvalue()), seen

    final, seen = run(terminal=True)
    assert seen == ["Let me", "Let me look."]  # shown while it is generated, before the turn ends
    assert final.count("Let me look.") == 1 and final.count("Two cameras are up.") == 1
    assert "Wrong start" not in final  # a retried call's void text does not stay
    assert final.index("Let me look.") < final.index("Two cameras are up.")
    final, seen = run(terminal=False)
    assert seen == ["", ""]  # a pipe gets no partial text
    assert final.count("Two cameras are up.") == 1
