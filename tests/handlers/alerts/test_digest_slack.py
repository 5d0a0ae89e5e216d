"""The digest in Slack: `/vision digest` and the scheduled job post Slack's table and chart blocks with a text fallback,
and the emulator refuses malformed ones the way Slack does."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.monitoring.alerts import Alert, AlertRouter
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.slack_socket import Envelope
from tests.fixtures.slack import RunningBot, await_answers, start_bot, stop_bot

WORKING = ":hourglass_flowing_sand:"


@pytest.fixture
async def alerts_bot(slack_env: dict[str, str], slack_api: SlackEmulator) -> AsyncIterator[RunningBot]:
    running = await start_bot({**slack_env, "VISION_AGENT_ALERT_CHANNEL": "C0ALERTS"}, slack_api)
    try:
        yield running
    finally:
        await stop_bot(running)


def crossings(router: AlertRouter, start: float, totals: list[tuple[int, int]]) -> None:
    """line_crossed events every 10 minutes from `start`, written through the real event-log path."""
    for i, (cin, cout) in enumerate(totals):
        router.record(Alert("door", "line_crossed", f"line crossed (totals in {cin} / out {cout})",
                            {"person": 1, "count_in": cin, "count_out": cout}, start + i * 600, None, "p1"))


async def reply_to(slack_api: SlackEmulator, env: Envelope) -> dict[str, Any]:
    """What the person saw: the ack's payload, or (a slow answer) the response_url post that replaced it."""
    acked = await slack_api.await_ack(env)
    assert acked.ack_error is None, acked.ack_error  # Slack would have refused the blocks
    if not acked.ack_payload["text"].startswith(WORKING):
        return acked.ack_payload
    rid = env.payload["response_url"].rsplit("/", 1)[-1]
    [post] = await slack_api.await_for("response_url", lambda c: c.params["rid"] == rid)
    return post.params


def kinds(blocks: list[dict[str, Any]]) -> list[str]:
    return [b["type"] for b in blocks]


async def test_vision_digest_answers_with_a_table_a_chart_and_a_text_fallback(
    slack_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    crossings(slack_bot.runtime.router, time.time() - 5400, [(2, 0), (5, 1), (9, 1), (12, 4)])
    reply = await reply_to(slack_api, slack_api.slash("digest 2h"))
    assert {"table", "data_visualization"} <= set(kinds(reply["blocks"]))
    table = next(b for b in reply["blocks"] if b["type"] == "table")
    header, door = ([c["text"] for c in row] for row in table["rows"])
    # the first event's totals are crossings of this run (counted from 0): in 12 / out 4 in all
    assert dict(zip(header, door, strict=True)) == {
        "Camera": "door", "Alerts": "4", "Held": "0", "False alarms": "0", "In": "12", "Out": "4", "Health": "0"}
    chart = next(b for b in reply["blocks"] if b["type"] == "data_visualization")
    series = {s["name"]: sum(p["value"] for p in s["data"]) for s in chart["chart"]["series"]}
    assert series == {"door in": 12, "door out": 4}
    assert "door in" in reply["text"] and "█" in reply["text"]  # the text fallback draws the trend as a sparkline


@pytest.mark.parametrize(("since", "says"), [
    ("last tuesday", ("'2h'", "yesterday 18:00")),
    ("99999d", ("at most 90 days", "`/vision digest 7d`")),  # not 'one bar per 199998 h'
])
async def test_an_unreadable_since_is_one_line_saying_what_to_write(
    slack_bot: RunningBot, slack_api: SlackEmulator, since: str, says: tuple[str, ...]
) -> None:
    reply = await reply_to(slack_api, slack_api.slash(f"digest {since}"))
    assert "blocks" not in reply or not reply["blocks"]
    assert "\n" not in reply["text"] and all(s in reply["text"] for s in says), reply["text"]


async def test_without_since_the_digest_starts_when_the_asker_last_wrote_here(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    router = slack_bot.runtime.router
    crossings(router, time.time() - 3000, [(3, 0)])  # before the person wrote: they saw it
    anthropic_api.enqueue(text("Hello."))
    ts, _ = slack_api.mention("hi, I am leaving for lunch")
    await await_answers(slack_api, "C0GENERAL", ts)
    router.record(Alert("yard", "class_appears:person", "a person appeared", {"person": 1}, time.time()))
    reply = await reply_to(slack_api, slack_api.slash("digest"))
    assert "since you last wrote here" in reply["text"]
    table = next(b for b in reply["blocks"] if b["type"] == "table")
    assert [row[0]["text"] for row in table["rows"]] == ["Camera", "yard"]  # the door's crossing was before


async def test_a_members_scheduled_digest_posts_its_table_where_it_was_asked(
    alerts_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    crossings(alerts_bot.runtime.router, time.time() - 3000, [(1, 0), (4, 2)])
    ack = await reply_to(slack_api, slack_api.slash("schedule digest every 60 minutes"))
    assert "digest-hourly" in ack["text"]
    scheduler = alerts_bot.runtime.scheduler
    assert scheduler is not None
    scheduler.run_now("digest-hourly")
    # a member's job posts where they asked for it (#general), not in the operator's alert channel
    [post] = await slack_api.await_for("chat.postMessage", lambda c: c.params.get("channel") == "C0GENERAL")
    assert "table" in kinds(post.params["blocks"]) and "actions" not in kinds(post.params["blocks"])
    assert "What happened since" in post.params["text"] and "door" in post.params["text"]


async def test_the_emulator_refuses_malformed_tables_and_charts_as_slack_does(slack_api: SlackEmulator) -> None:
    client = AsyncWebClient(token=slack_api.bot_token, base_url=slack_api.api_url)
    cell = {"type": "raw_text", "text": "door"}
    table = {"type": "table", "rows": [[cell, {"type": "raw_text", "text": "4"}]]}
    line = {"type": "data_visualization", "title": "Crossings over time", "chart": {
        "type": "line", "series": [{"name": "door in", "data": [{"label": "09:00", "value": 3}]}],
        "axis_config": {"categories": ["09:00"], "x_label": "time"}}}
    ok = await client.chat_postMessage(channel="C0GENERAL", text="fallback", blocks=[table, line])
    assert ok["ok"]
    bad = {
        "invalid_attachments": [table, table],  # one table per message
        "invalid_blocks": [{**table, "rows": [[{"type": "raw_text", "text": ""}]]}],
    }
    bad_chart = [
        {**line, "title": "x" * 51},
        {**line, "chart": {**line["chart"], "series": [{"name": "door in", "data": [{"label": "10:00", "value": 3}]}]}},
        {**table, "column_settings": [{"align": "middle"}]},
        {**table, "column_setting": [{"align": "left"}]},  # a field the reference does not list
        {**line, "chart": {**line["chart"], "axis_config": {"categories": ["09:00"], "xlabel": "time"}}},
    ]
    for error, blocks in [*bad.items(), *(("invalid_blocks", [b]) for b in bad_chart)]:
        with pytest.raises(SlackApiError) as caught:
            await client.chat_postMessage(channel="C0GENERAL", text="fallback", blocks=blocks)
        assert caught.value.response["error"] == error


def test_long_camera_names_and_many_cameras_still_make_blocks_slack_takes() -> None:
    from bot.monitoring.digest import build
    from handlers.alerts.digest_blocks import digest_blocks
    from tests.fakes.slack_methods import check_blocks

    now = time.time()
    events = [{"camera": f"loading-dock-north-{n}", "rule": "line_crossed", "event_type": "line_crossed",
               "text": "x" * 400, "counts": {"count_in": i + 1, "count_out": i}, "pipeline_id": f"p{n}",
               "time": now - 3500 + i * 300 + n, "alert_id": f"a{n}{i}"} for n in range(8) for i in range(10)]
    d = build(events, now - 3600, now, "")
    blocks = digest_blocks(d, "Europe/Berlin")
    check_blocks(blocks)  # raises Slack's error if any limit is broken
    chart = next(b for b in blocks if b["type"] == "data_visualization")
    names = [s["name"] for s in chart["chart"]["series"]]
    assert len(names) == 6 and all(len(n) <= 20 for n in names) and len(set(names)) == 6
    assert {n.rsplit(" ", 1)[-1] for n in names} <= {"in", "out"}
    table = next(b for b in blocks if b["type"] == "table")
    assert len(table["rows"]) == 9  # the header and the eight cameras


def test_a_day_across_midnight_dates_the_title_and_the_chart_categories() -> None:
    from datetime import UTC, datetime

    from bot.monitoring.digest import build
    from handlers.alerts.digest_blocks import digest_blocks
    from tests.fakes.slack_methods import check_blocks

    start = datetime(2026, 11, 25, 17, 29, tzinfo=UTC).timestamp()  # a Wednesday
    events = [{"camera": "door", "rule": "class_appears:person", "event_type": "class_appears", "text": "a person",
               "time": start + i * 3 * 3600} for i in range(8)]
    blocks = digest_blocks(build(events, start, start + 86400, ""), "UTC")
    check_blocks(blocks)
    assert "Wed 25 Nov 17:29 – Thu 26 Nov 17:29 UTC" in blocks[0]["text"]["text"]
    categories = next(b for b in blocks if b["type"] == "data_visualization")["chart"]["axis_config"]["categories"]
    assert categories[0] == "Wed 17:29" and categories[-1] == "Thu 15:29"  # read in order, not 17:29 → 15:29
    alerts = next(b for b in blocks if b["type"] == "section" and b["text"]["text"].startswith("*Alerts*"))
    assert "• Thu 26 Nov 14:29 door" in alerts["text"]["text"]


async def test_a_slow_digest_replaces_the_working_line_with_its_blocks(
    slack_bot: RunningBot, slack_api: SlackEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handlers.listeners import commands

    monkeypatch.setattr(commands, "ACK_BUDGET", 0.0)  # answered through response_url, as a slow one would be
    crossings(slack_bot.runtime.router, time.time() - 1800, [(1, 0), (3, 1)])
    env = slack_api.slash("digest 1h")
    assert (await slack_api.await_ack(env)).ack_payload["text"].startswith(WORKING)
    reply = await reply_to(slack_api, env)
    assert reply["replace_original"] and "table" in kinds(reply["blocks"]) and "door" in reply["text"]
    assert slack_api.calls_to("response_url")  # accepted: the emulator checked the blocks


async def test_the_digest_links_each_alert_to_the_message_that_shows_its_frame(
    alerts_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    from tests.handlers.transport.test_files import jpeg

    alert = Alert("yard", "class_appears:person", "a person appeared", {"person": 1}, time.time() - 60, jpeg(32, 24))
    assert await alerts_bot.runtime.router.dispatch(alert) is None
    [post] = await slack_api.await_for("chat.postMessage", lambda c: c.params.get("channel") == "C0ALERTS")
    reply = await reply_to(slack_api, slack_api.slash("digest 1h"))
    section = next(b for b in reply["blocks"] if b["type"] == "section" and "*Alerts*" in b["text"]["text"])
    posted_ts = slack_api.channel("C0ALERTS").messages[-1]["ts"]
    link = f"https://emulated.slack.com/archives/{slack_api.channel('C0ALERTS').id}/p{posted_ts.replace('.', '')}"
    assert f"<{link}|alert>" in section["text"]["text"] and "a person appeared" in section["text"]["text"]
    assert post.params["blocks"]  # the alert itself went out with its frame block
