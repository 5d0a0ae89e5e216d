"""The one redactor: what it masks, and that the CLI's output and every process's log handlers go through it."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from bot.cli.render import Renderer
from bot.events import AgentEvent, EventType
from bot.media.redaction import RedactingFilter, add_secrets, install_log_redaction, redact
from tests.bot.cli.test_cli import ROOT, _run
from tests.fakes.anthropic_api import FakeAnthropic, text, tool_use

URL = "rtsp://admin:S3cret@10.0.0.5/stream"
MASKED = "rtsp://admin:***@10.0.0.5/stream"


@pytest.mark.parametrize(("raw", "masked"), [
    (URL, MASKED),
    ("rtsp://tok3n@cam/live", "rtsp://***@cam/live"),
    ("http://h/snap?user=a&password=pw1&x=1", "http://h/snap?user=a&password=***&x=1"),
    ("bot xoxb-1111-2222-abcDEF and app xapp-1-A0B-33-ff", "bot xoxb-*** and app xapp-***"),
    ("key sk-ant-api03-Zz_9-xY", "key sk-ant-***"),
    (MASKED, MASKED),  # idempotent: masking twice changes nothing
])
def test_redact_masks_url_credentials_and_token_shapes(raw: str, masked: str) -> None:
    assert redact(raw) == masked


def test_redact_masks_the_literal_values_of_the_bots_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBOFLOW_API_KEY", "rfKEY0123456789")
    add_secrets(["plainsecret-value-42", "short"])  # what Runtime registers from Settings
    out = redact("roboflow rfKEY0123456789, slack plainsecret-value-42, a short word")
    assert out == "roboflow ***, slack ***, a short word"  # too short to be a secret: left alone


def test_a_long_text_masked_once_is_masked_again_for_a_secret_added_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """Long texts (the system prompt's files) are masked once and remembered; a secret set after that, in the
    environment or by add_secrets, is still masked in them, and the remembered text is what masking it gives."""
    cameras = "| dock | rtsp://admin:hunter2@10.0.0.5/s1 |\n" * 60 + "token laterKEY-0123456789 and dockwordZZ9876\n"
    assert len(cameras) > 2048
    first = redact(cameras)
    assert "hunter2" not in first and "laterKEY-0123456789" in first
    assert redact(cameras) == first  # remembered: the same answer
    monkeypatch.setenv("ROBOFLOW_API_KEY", "laterKEY-0123456789")
    assert "laterKEY-0123456789" not in redact(cameras)
    add_secrets(["dockwordZZ9876"])
    again = redact(cameras)
    assert "laterKEY-0123456789" not in again and "dockwordZZ9876" not in again and "hunter2" not in again


@pytest.fixture
def record_factory():
    """Put back the process's log record factory after a test installed the redacting one."""
    saved = logging.getLogRecordFactory()
    yield
    logging.setLogRecordFactory(saved)


def _log_both(logger: logging.Logger) -> None:
    logger.warning("cannot open %s", URL)
    try:
        raise ConnectionError(f"connect to {URL} refused")
    except ConnectionError:
        logger.exception("pipeline failed")


def test_log_handlers_mask_messages_args_and_tracebacks(record_factory: None) -> None:
    stream = io.StringIO()
    logger = logging.getLogger("tests.redaction.handlers")
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    try:
        install_log_redaction(logger)
        install_log_redaction(logger)
        assert sum(isinstance(f, RedactingFilter) for f in handler.filters) == 1  # idempotent
        logging.setLogRecordFactory(logging.LogRecord)  # the handler's filter alone must do it
        _log_both(logger)
    finally:
        logger.removeHandler(handler)
    out = stream.getvalue()
    assert "S3cret" not in out and out.count(MASKED) == 2 and "ConnectionError" in out


def test_a_library_logging_through_its_own_handler_is_masked_too(record_factory: None) -> None:
    stream = io.StringIO()
    library = logging.getLogger("tests.redaction.library")  # like `inference`: own handler, no propagation
    library.propagate = False
    library.addHandler(logging.StreamHandler(stream))
    install_log_redaction(logging.getLogger("tests.redaction.app"))  # filters its handlers, not the library's
    assert not library.handlers[0].filters
    _log_both(library)
    out = stream.getvalue()
    assert "S3cret" not in out and out.count(MASKED) == 2


@pytest.mark.parametrize("entry", [
    "from bot.cli.main import _setup_logging; _setup_logging(0)",
    # `serve` itself, as the adapter's entry point; missing tokens end it before any network is touched
    "logging.basicConfig(); from handlers.app import serve; from bot.config import load_settings; "
    "serve(load_settings({'VISION_AGENT_WORKSPACE': sys.argv[1]}))",
])
def test_cli_and_serve_install_the_filter_on_the_root_handlers(entry: str, tmp_path: Path) -> None:
    code = f"import logging, sys; {entry}; logging.getLogger('bot.x').warning('cannot open %s', '{URL}')"
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60,
                         cwd=ROOT)
    assert "cannot open" in out.stderr and "S3cret" not in out.stderr, out.stderr


def test_terminal_renderer_masks_replies_tool_calls_and_results() -> None:
    buf = io.StringIO()
    out = Renderer(Console(file=buf, width=200, color_system=None))
    for kind, data in [(EventType.TOOL_CALL, {"name": "start_pipeline", "input": {"video_reference": URL}}),
                       (EventType.TOOL_RESULT, {"text": f"started on {URL}"}),
                       (EventType.THINKING, {"text": f"the camera is {URL}"}),
                       (EventType.RESPONSE, {"text": f"Watching **{URL}**"}),
                       (EventType.ERROR, {"text": f"cannot open {URL}"})]:
        out.event(AgentEvent(kind, data), Path("/nonexistent"))
    shown = buf.getvalue()
    assert "S3cret" not in shown and shown.count("***@10.0.0.5") == 5


def test_one_shot_operator_may_remember_and_never_sees_or_prints_the_password(
    llm_env: dict[str, str], anthropic_api: FakeAnthropic
) -> None:
    ws = Path(llm_env["VISION_AGENT_WORKSPACE"])
    (ws / "config.yaml").write_text("slack:\n  allowed_users: [U0BOSS]\n")  # the allowlists are Slack's, not ours
    (ws / "CAMERAS.md").write_text(f"| Name | URL | Location |\n|---|---|---|\n| dock | {URL} | Dock |\n")
    anthropic_api.enqueue(tool_use(("remember", {"content": f"dock moved to {URL}", "category": "knowledge"})),
                          text(f"Noted: dock is {URL}."))
    out = _run(["chat", "-m", "note where the dock camera is"], llm_env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"Noted: dock is {MASKED}." and "S3cret" not in out.stderr
    assert f"dock moved to {MASKED}" in (ws / "memory" / "KNOWLEDGE.md").read_text()
    first, second = anthropic_api.ok_requests
    assert b"S3cret" not in first.raw and MASKED not in str(first.body["system"])
    assert 'camera "dock"' in str(first.body["system"])  # the model gets the camera's name, never its URL
    [result] = [b for b in second.body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert not result.get("is_error")
