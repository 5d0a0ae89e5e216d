"""Points of the bounds the hostile pass found past them: counts past any camera's, text that is only invisible
characters, names that differ only in width or case, an unclosed quote, a body nested past reading."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.config import load_settings
from bot.rights import Requester
from tests.bot.objects.doors import ALICE, TOKEN, Doors, open_doors, settings_env

BOB = Requester.slack("U0BOB", "C0BOB", "public", "Bob")


@pytest.fixture
async def doors(base_env) -> AsyncIterator[Doors]:
    async for d in open_doors(load_settings(settings_env(base_env))):
        yield d


async def test_a_count_past_any_cameras_is_refused_at_every_door(doors: Doors) -> None:
    assert "up to 1e+06" in await doors.slash("rule dock count person>99999999999999999999999")
    assert "up to 1e+06" in await doors.tool("set_alert_rule", {"camera": "dock", "rule": "count person>2000000"})
    assert "up to 1e+06" in await doors.slash("watch dock count person<100000000000000000000000000")
    assert doors.rt.monitor.rules() == [] and doors.rt.watches.all() == []


async def test_text_of_only_invisible_characters_is_no_text(doors: Doors) -> None:
    assert "content cannot be empty" in await doors.tool("remember", {"content": "\u200b\u2060 \u200d"}, ALICE)
    assert doors.rt.memory.written_today() == []


async def test_names_that_differ_only_in_width_or_case_are_one_name(doors: Doors) -> None:
    assert (await doors.slash("start dock")).startswith("Started *dock*")
    assert "is already running" in await doors.slash("start gate name=ｄｏｃｋ")  # full-width: the same name
    await doors.slash("schedule digest every hour name=ops-digest", ALICE)
    said = await doors.slash("schedule digest every 2 hours name=OPS-DIGEST")  # an operator's change: replaces it
    assert "as job `OPS-DIGEST`" in said
    [job] = [j for j in doors.rt.scheduler.jobs() if "digest" in j.name.lower()]
    assert job.name == "OPS-DIGEST" and job.owner is not None and job.owner.user == ALICE.user_id  # still Alice's
    assert "belongs to <@U0ALICE>" in await doors.slash("unschedule Ops-Digest", BOB)


async def test_an_unclosed_quote_and_a_deep_body_get_one_line(doors: Doors) -> None:
    for text in (await doors.tool("set_alert_rule", {"camera": "dock", "rule": "appears 'person"}),
                 await doors.tool("watch_for", {"camera": "dock", "condition": "appears 'person"})):
        assert "has an unclosed quote" in text
    async with doors.http.post(doors.base + "/api/rules", data="[" * 50_000 + "]" * 50_000,
                               headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}) as resp:
        assert resp.status == 400 and "JSON object" in (await resp.json())["error"]
