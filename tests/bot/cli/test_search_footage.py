"""Search the past on real footage, in the terminal: the REPL counts OpenCV's crossing clip (three men cross right to
left), then `/vision search` finds the crossings by what was seen and prints the table with the pictures saved."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.monitoring.events_log import EventLog
from tests.bot.cli.test_cli_vision import start_crossing, terminal  # noqa: F401 - the pty fixture

pytestmark = pytest.mark.slow


def test_the_crossings_of_a_real_run_are_found_by_what_was_seen(
    terminal, tmp_path: Path, workspace_dir: Path  # noqa: F811 - the fixture imported above
) -> None:
    term = start_crossing(terminal, tmp_path)
    term.wait_for(r"pipeline finished, [^\n]*totals in (\d+) / out (\d+)", seconds=180)
    events = [e for e in EventLog(workspace_dir / ".state" / "events.jsonl").query(limit=1000)
              if e.get("camera") == "street" and e.get("seen")]
    assert events, "the run's events carry what was seen"
    said = [e["seen"] for e in events]
    assert all(" person (" in s and "px tall" in s for s in said), said
    assert any("walking left" in s for s in said) and not any("walking right" in s for s in said), said  # by eye: left
    pictures = workspace_dir / ".state" / "event_pictures"
    assert {f"{e['id']}.jpg" for e in events if e.get("has_frame")} <= {p.name for p in pictures.glob("*.jpg")}
    term.type("/vision search someone walking left")
    term.wait_for(r"moments? for .someone walking left.", seconds=60)
    row = term.wait_for(r"\n[│| ]*1 *[│|] *\w{3} \d\d \w{3} [\d:]{8} *[│|] *street *[│|] *([^│|\n]*)", seconds=30)
    assert "person" in row[1]
    term.wait_for(r"#1 street: picture saved to \S+\.jpg", seconds=30)
