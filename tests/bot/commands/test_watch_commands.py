"""/vision watch|watches|unwatch through run_command: the grammar and its one-line refusals, and a watch's words shown
only where it answers, to its asker and to the operator."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.commands.dispatch import USAGE, CommandContext, run_command
from bot.config import Settings
from bot.monitoring.watches import WatchBook
from bot.services import Services
from bot.storage import open_storage
from tests.bot.monitor_helpers import Clock, make_router
from workspace import Workspace

CAMERAS = "| Name | URL | Location |\n|---|---|---|\n| dock | rtsp://10.0.0.5/s1 | Loading dock |\n"


@pytest.fixture
def services(settings: Settings, workspace_dir: Path, tmp_path: Path) -> Services:
    (workspace_dir / "CAMERAS.md").write_text(CAMERAS)
    router, _ = make_router(tmp_path, Clock())
    book = WatchBook(open_storage(tmp_path / "watches.json"), router, clock=Clock())
    return Services(workspace=Workspace(workspace_dir), router=router, watches=book)


async def say(services: Services, settings: Settings, line: str, user: str | None = "U1", channel: str = "C1",
              operator: bool = False) -> tuple[bool, str]:
    reply = await run_command(line, CommandContext(settings, services, user, channel, operator=operator))
    return reply.ok, reply.text


async def test_the_grammar_takes_each_condition_and_refuses_the_rest_with_what_to_do(
    services: Services, settings: Settings
) -> None:
    ok, text = await say(services, settings, 'watch dock count person<1 for 90m about="last one out"')
    assert ok and text.startswith("Watching *dock* for 90 min: I'll say so here once fewer than 1 person is in view")
    ok, text = await say(services, settings, "watch Dock absent person 60s confirm")
    assert ok and "no person is in view for 60 s, after the model confirms it on the frame" in text
    ok, text = await say(services, settings, "watch dock count person&gt;2 for 2h")  # as Slack sends '>'
    assert ok and "more than 2 people are in view" in text
    ok, text = await say(services, settings, "watch dock count person&gt;2 confirm for 10m")  # either order
    assert ok and text.startswith("Watching *dock* for 10 min") and "after the model confirms it" in text
    refusals = {
        "watch dock appears truck for 30h": "a watch lasts between 5 s and 24 h, not 108000 s",
        "watch dock appears truck for soon": "`for` takes a duration like 30s, 90m or 2h",
        "watch dock hovers": "Usage: `/vision watch CAMERA",
        "watch dock absent person": "absent takes CLASS SECONDS",
        "watch nowhere appears person": "Unknown camera 'nowhere'; known cameras and pipelines: dock.",
        "watch * appears person": "Name one camera here, not all of them.",
        "unwatch w000000": "No watch `w000000`; the watches that run:",
    }
    for line, said in refusals.items():
        ok, text = await say(services, settings, line)
        assert not ok and said in text, (line, text)
    assert services.watches is not None and len(services.watches.all()) == 4
    assert "`watch CAMERA appears [CLASS]" in USAGE and "`unwatch WATCH_ID`" in USAGE


async def test_a_watch_asked_in_a_dm_is_listed_to_its_asker_and_the_operator_only(
    services: Services, settings: Settings
) -> None:
    ok, text = await say(services, settings, 'watch dock appears car about="my taxi"', user="U1", channel="D1")
    assert ok
    _, mine = await say(services, settings, "watches", user="U1", channel="C9")
    _, theirs = await say(services, settings, "watches", user="U2", channel="C2")
    _, operator = await say(services, settings, "watches", user="cli", channel="cli", operator=True)
    assert "my taxi" in mine and "my taxi" in operator
    assert "my taxi" not in theirs and "…and 1 more asked in other conversations" in theirs
    assert services.watches is not None
    [watch] = services.watches.all()
    assert (watch.channel, watch.thread_ts, watch.user_id) == ("D1", None, "U1")
    ok, text = await say(services, settings, f"unwatch {watch.id}", user="U1", channel="D1")
    assert ok and text == f"Stopped watch `{watch.id}` on *dock* (car appears)."


async def test_where_the_answer_goes_is_said_as_the_asker_will_find_it(services: Services, settings: Settings) -> None:
    """The terminal prints its alerts itself; REST and MCP callers have no place of their own: the alert channel."""
    at_terminal = CommandContext(settings, services, None, None, operator=True, local_files=True)
    text = (await run_command("watch dock appears person for 10m", at_terminal)).text
    assert text.startswith("Watching *dock* for 10 min: I'll say so here once")
    over_api = CommandContext(settings, services, None, None, operator=True)
    text = (await run_command("watch dock appears person for 10m", over_api)).text
    assert text.startswith("Watching *dock* for 10 min: I'll say so in the camera's alert channel once")


async def test_one_person_cannot_take_every_watch_place(services: Services, settings: Settings) -> None:
    per_person = settings.caps.watch.per_person
    for _ in range(per_person):
        assert (await say(services, settings, "watch dock appears person for 1h", user="U1"))[0]
    ok, text = await say(services, settings, "watch dock appears person for 1h", user="U1")
    assert not ok and f"you already have {per_person} watches, the most one person may" in text
    assert (await say(services, settings, "watch dock appears person for 1h", user="U2"))[0]
    assert (await say(services, settings, "watch dock appears person for 1h", user=None, operator=True))[0]
