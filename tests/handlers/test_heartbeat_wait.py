"""The heartbeat waits only for chat turns in the alert channel once auth.test has told us the team id."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from bot.monitoring.alerts import AlertRouter
from handlers.app import narrow_heartbeat_wait
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.slack import start_bot, stop_bot


async def test_serving_narrows_the_wait_to_the_alert_channel(slack_env: dict[str, str], slack_api: SlackEmulator):
    running = await start_bot({**slack_env, "VISION_AGENT_ALERT_CHANNEL": "C0ALERTS1"}, slack_api)
    try:
        heartbeat = running.runtime.scheduler.heartbeat
        assert heartbeat.chat_prefixes == ["cli:", f"slack:{slack_api.team_id}:C0ALERTS1:"]
    finally:
        await stop_bot(running)


def _runtime(tmp_path: Path, channel: str | None, route: str | None = None) -> SimpleNamespace:
    router = AlertRouter(tmp_path / "alerts.json", default_channel=channel)
    if route:
        router.set_route(route)
    heartbeat = SimpleNamespace(chat_prefixes=["cli:", "slack:"])
    return SimpleNamespace(router=router, scheduler=SimpleNamespace(heartbeat=heartbeat))


@pytest.mark.parametrize(
    ("channel", "route", "expected"),
    [
        ("C0ALERTS1", None, ["cli:", "slack:T1:C0ALERTS1:"]),
        ("<#C0ALERTS1|alerts>", None, ["cli:", "slack:T1:C0ALERTS1:"]),
        ("#alerts", "G0PRIVATE9", ["cli:", "slack:T1:G0PRIVATE9:"]),  # a /vision route for all cameras wins
        ("#alerts", None, ["cli:", "slack:"]),  # a name needs channels:read to resolve: keep the broad default
        ("alerts", None, ["cli:", "slack:"]),
    ],
)
def test_which_channels_narrow(tmp_path: Path, channel: str, route: str | None, expected: list[str]) -> None:
    rt = _runtime(tmp_path, channel, route)
    narrowed = narrow_heartbeat_wait(rt, "T1")
    assert rt.scheduler.heartbeat.chat_prefixes == expected
    assert narrowed == (expected if expected[-1] != "slack:" else None)


def test_no_scheduler_no_change(tmp_path: Path) -> None:
    assert narrow_heartbeat_wait(SimpleNamespace(router=None, scheduler=None), "T1") is None
