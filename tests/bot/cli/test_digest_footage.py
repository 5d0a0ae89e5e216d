"""The digest of a real pipeline on real footage: the REPL starts a line count on OpenCV's street clip, then
`/vision digest` shows the crossings the pipeline counted and the events its log holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.monitoring.digest import crossing_moves
from bot.monitoring.events_log import EventLog
from tests.bot.cli.test_cli_vision import start_crossing, terminal  # noqa: F401 - the pty fixture

pytestmark = pytest.mark.slow


def test_the_digest_of_a_real_run_matches_its_event_log_and_totals(
    terminal, tmp_path: Path, workspace_dir: Path  # noqa: F811 - the fixture imported above
) -> None:
    term = start_crossing(terminal, tmp_path)
    done = term.wait_for(r"pipeline finished, [^\n]*totals in (\d+) / out (\d+)", seconds=180)
    term.type("/vision digest 1h")
    row = term.wait_for(r"\n\s*street +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+)", seconds=60)
    posted, held, _, crossed_in, crossed_out, health = (int(n) for n in row.groups())
    assert (crossed_in, crossed_out) == (int(done[1]), int(done[2]))  # the digest says what the pipeline counted
    assert crossed_in + crossed_out > 0
    events = [e for e in EventLog(workspace_dir / ".state" / "events.jsonl").query(limit=1000)
              if e.get("camera") == "street"]
    assert posted + held + health == len(events)  # every event of the run: posted, held by the cooldown, health
    moved = [(i, o) for _, i, o in crossing_moves(events)]
    assert (sum(i for i, _ in moved), sum(o for _, o in moved)) == (crossed_in, crossed_out)
    term.wait_for(r"Over time \(")  # and the trend, as text
