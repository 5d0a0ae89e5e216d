"""/vision in Slack as a new user meets it: start says it is working at once, rules keep the line's alerts and name
the model's classes, what the cooldown holds reaches the channel, and a file outside the folders says where to put it."""

from __future__ import annotations

import re
from typing import Any

from bot.pipelines.request import StartRequest
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fixtures.slack import RunningBot
from tests.fixtures.slow_start import SlowStartBackend, say, slow_start_backend, slow_start_bot  # noqa: F401 - fixtures
from tests.tools.fake_backend import result


async def door(bot: RunningBot, backend: SlowStartBackend, line_totals: bool = True) -> str:
    """A builtin/people pipeline called door that has shown its first result (so its defaults are guessed)."""
    backend.release.set()
    video = bot.settings.workspace / "door.mp4"
    video.write_bytes(b"not really a video")
    # started by the person who then sets its rules (theirs to change: bot/objects/owner.py)
    handle = await bot.runtime.pipelines.start(StartRequest(str(video), "door", model_id="builtin/people", owner=HUMAN,
                                                            owner_channel="C0GENERAL", owner_place="public"))
    values = {"line_counter_count_in": 0, "line_counter_count_out": 0} if line_totals else {}
    backend.emit(handle.pipeline_id, result({"person": 1}, **values))
    return handle.pipeline_id


async def test_start_shows_a_line_at_once_then_the_result_in_its_place(
    bot: RunningBot, slack_api: SlackEmulator, backend: SlowStartBackend
) -> None:
    video = bot.settings.workspace / "yard.mp4"
    video.write_bytes(b"not really a video")
    env = await slack_api.await_ack(slack_api.slash(f"start {video} name=yard fps=5"))
    assert "loading the detector" in env.ack_payload["text"]  # while the start itself still waits
    assert slack_api.calls_to("response_url") == []
    backend.release.set()
    answer = (await slack_api.await_for("response_url"))[0]
    assert answer.params["replace_original"] is True and "Started *yard*" in answer.params["text"]
    assert "sampling 5 frames per second of video" in answer.params["text"]


async def test_a_rule_keeps_the_line_alerts_and_names_the_models_classes(
    bot: RunningBot, slack_api: SlackEmulator, backend: SlowStartBackend
) -> None:
    await door(bot, backend)
    added = await say(slack_api, "rule door count people&gt;3")  # Slack sends '>' as '&gt;'
    assert "`count_over:person&gt;3`" in added and "`people` taken as `person`" in added
    assert "`line_crossed`" in added and "stays on" in added
    assert [r.id for r in bot.runtime.monitor.effective_rules("door")] == ["count_over:person>3", "line_crossed"]
    assert re.search(r"`line_crossed` \(.*?; cooldown \d+ s\) \(default\)", await say(slack_api, "rules door"))
    refused = await say(slack_api, "rule door appears car")
    assert "never reports `car`" in refused and "`person`" in refused and "builtin/people" in refused
    assert all(r.class_name != "car" for r in bot.runtime.monitor.rules())
    again = await say(slack_api, "rule door count person&gt;3 cooldown=45")
    assert "cooldown changed from 300 s to 45 s" in again
    same = await say(slack_api, "rule door count person&gt;3 cooldown=45")
    assert "nothing changed" in same
    off = await say(slack_api, "unrule door line_crossed")
    assert "Turned off the default `line_crossed`" in off and "/vision rule door line" in off
    assert [r.id for r in bot.runtime.monitor.effective_rules("door")] == ["count_over:person>3"]


async def test_a_plain_detector_says_its_appears_default_is_replaced(
    bot: RunningBot, slack_api: SlackEmulator, backend: SlowStartBackend
) -> None:
    await door(bot, backend, line_totals=False)
    added = await say(slack_api, "rule door count person&gt;2")
    assert "replaces the default `appears` alerts" in added


async def test_what_the_cooldown_held_reaches_the_channel(
    bot: RunningBot, slack_api: SlackEmulator, backend: SlowStartBackend
) -> None:
    pid = await door(bot, backend)
    for cin, cout in ((1, 0), (2, 1), (4, 1), (5, 3)):  # one alert, then three frames the cooldown holds
        backend.emit(pid, result({"person": 2}, **{"line_counter_count_in": cin, "line_counter_count_out": cout}))
    first = (await slack_api.await_for("chat.postMessage"))[0]
    assert "line crossed (in +1" in first.params["text"]
    listed = await say(slack_api, "rules door")
    assert re.search(r"alerts held for \d+ s more: \+7 crossed since the last alert: in 4 / out 3", listed), listed
    await bot.runtime.pipelines.stop("door")
    await bot.runtime.monitor.check_health()  # the scheduler's health tick
    posts = await slack_api.await_for("chat.postMessage", count=2)
    assert "+7 crossed since the last alert: in 4 / out 3 (held by the cooldown)" in posts[1].params["text"]
    assert "totals in 5 / out 3" in posts[1].params["text"]


async def test_a_file_outside_the_folders_names_the_folder_to_copy_into(
    bot: RunningBot, slack_api: SlackEmulator, backend: SlowStartBackend, tmp_path: Any
) -> None:
    backend.release.set()
    outside = tmp_path / "elsewhere" / "clip.mp4"
    outside.parent.mkdir()
    outside.write_bytes(b"not really a video")
    text = await say(slack_api, f"start {outside}")  # refused before anything starts: no "Starting…" line first
    assert f"copy it into {bot.settings.workspace.resolve()}" in text and "Starting" not in text
