"""get_digest (the agent's tool) and `/vision digest` at the terminal: the same numbers, as plain text."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.agent.blocks import user_message
from bot.agent.sessions import SessionStore
from bot.agent.tools import ToolContext
from bot.config import load_settings
from bot.monitoring.alerts import Alert, AlertRouter
from bot.monitoring.events_log import EventLog
from bot.rights import Requester
from bot.services import Services
from tests.bot.cli.test_cli import _run
from tests.bot.cli.test_cli_vision import _env
from tools import build_registry
from workspace import Workspace

ASKER = Requester.slack("U0ASKER", "C0DOOR", place="public", name="Ann")


def door(router: AlertRouter, t: float, cin: int) -> None:
    router.record(Alert("door", "line_crossed", f"line crossed (totals in {cin} / out 0)",
                        {"person": 1, "count_in": cin, "count_out": 0}, t, None, "p1"))


async def test_the_tool_reads_since_the_askers_previous_message_here(tmp_path: Path, base_env: dict[str, str]) -> None:
    settings = load_settings(base_env)
    ws = Workspace(settings.workspace)
    ws.init()
    events = EventLog(tmp_path / "events.jsonl")
    router = AlertRouter(tmp_path / "alerts.json", events=events)
    sessions = SessionStore(ws.sessions_dir)
    door(router, time.time() - 600, 2)  # seen before the asker last wrote
    sessions.append("slack:T1:C0DOOR:111.1", user_message("back in an hour", author=ASKER))
    sessions.append("slack:T1:C0OTHER:222.2", user_message("elsewhere", author=ASKER))  # another place
    door(router, time.time(), 5)  # while they were away: 3 more in
    sessions.append("slack:T1:C0DOOR:333.3", user_message("what happened while I was away?", author=ASKER))
    ctx = ToolContext(settings=settings, services=Services(workspace=ws, events=events, router=router),
                      requester=ASKER, session_key="slack:T1:C0DOOR:333.3")
    reg = build_registry()
    schema = next(d for d in reg.definitions() if d["name"] == "get_digest")["input_schema"]
    assert set(schema["properties"]) == {"since", "camera"}  # generated from the argument model

    res = await reg.execute("get_digest", {}, ctx)
    assert not res.is_error, res.text
    assert "since you last wrote here" in res.text
    row = next(line for line in res.text.splitlines() if line.startswith("door"))
    assert row.split() == ["door", "1", "0", "0", "3", "0", "0"]  # one event, in 5-2 = 3
    bad = await reg.execute("get_digest", {"since": "whenever"}, ctx)
    assert bad.is_error and "yesterday 18:00" in bad.text


def test_the_terminal_prints_the_digest_as_plain_text(base_env: dict[str, str]) -> None:
    settings = load_settings(base_env)
    ws = Workspace(settings.workspace)
    ws.init()
    log = EventLog(ws.state_dir / "events.jsonl")  # what a running `serve` would have written
    for i, cin in enumerate((1, 4, 6)):
        log.append({"camera": "door", "rule": "line_crossed", "event_type": "line_crossed", "text": "line crossed",
                    "counts": {"count_in": cin, "count_out": 0}, "pipeline_id": "p1",
                    "time": time.time() - 4500 + i * 1500})
    out = _run(["chat", "-m", "/vision digest 1h"], _env(base_env))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    header = next(line for line in lines if line.startswith("Camera"))
    assert header.split()[:3] == ["Camera", "Alerts", "Held"]
    row = next(line for line in lines if line.startswith("door"))
    assert row.split()[4] == "5"  # the first event (1 in) is the baseline before the hour: 4 and 6 are news
    assert "door in" in out.stdout and "*" not in out.stdout and "`" not in out.stdout
    # a camera known only from the log (its pipeline long gone), in another case, is found; a misspelt one is named
    logged = _run(["chat", "-m", "/vision digest 1h camera=DOOR"], _env(base_env))
    assert logged.returncode == 0 and next(x for x in logged.stdout.splitlines() if x.startswith("door")).split()[4] == "5"
    wrong = _run(["chat", "-m", "/vision digest 1h camera=dor"], _env(base_env))
    assert wrong.returncode == 1 and "Unknown camera 'dor'" in wrong.stdout + wrong.stderr


def test_a_scheduled_digest_reaches_the_terminal_as_its_text(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from bot.cli.render import Renderer
    from bot.monitoring.digest import build
    from bot.monitoring.digest_text import digest_text

    now = time.time()
    events = [{"camera": "door", "rule": "line_crossed", "event_type": "line_crossed", "text": "line crossed",
               "counts": {"count_in": n, "count_out": 0}, "time": now - 3000 + n * 600} for n in (1, 2, 3)]
    d = build(events, now - 3600, now, "since the last digest")
    buf = io.StringIO()
    Renderer(Console(file=buf, width=200, color_system=None)).alert(
        Alert("*", "digest", digest_text(d, "UTC"), digest=d), tmp_path)
    shown = buf.getvalue()
    assert "ALERT" not in shown and "What happened since the last digest" in shown
    assert next(line for line in shown.splitlines() if line.startswith("door")).split()[4] == "3"


def test_a_clock_time_still_ahead_today_is_yesterdays_and_the_header_says_so(base_env: dict[str, str]) -> None:
    from datetime import UTC, datetime

    from bot.commands.digest import resolve_since

    settings = load_settings(base_env, heartbeat={"timezone": "UTC"})
    now = datetime(2026, 11, 26, 17, 42, tzinfo=UTC).timestamp()
    start, note = resolve_since("23:59", settings, ASKER, now, None)
    assert start == datetime(2026, 11, 25, 23, 59, tzinfo=UTC).timestamp() and note == "since yesterday 23:59"
    start, note = resolve_since("since 09:00", settings, ASKER, now, None)  # already past today: today's
    assert start == datetime(2026, 11, 26, 9, tzinfo=UTC).timestamp() and note == ""
    assert resolve_since("90d", settings, ASKER, now, None)[0] == now - 90 * 86400


def test_a_since_further_back_than_90_days_is_refused_in_one_line(base_env: dict[str, str]) -> None:
    from bot.commands.digest import resolve_since

    settings = load_settings(base_env)
    for since in ("99999d", "91 days", "9" * 400, "1900-01-01T00:00"):
        with pytest.raises(ValueError, match=r"^A digest looks back at most 90 days, not .*; write e\.g\. ") as caught:
            resolve_since(since, settings, ASKER, time.time(), None)
        assert "\n" not in str(caught.value)
