"""Through the Slack emulator: `/vision status` shows what a counting pipeline counted, and a file that runs out tells
its final totals where it was started (the `/vision start` asker alone, or the thread whose turn started it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.anthropic_api import FakeAnthropic, text, tool_use
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fixtures.slack import RunningBot, await_answers, start_bot, stop_bot
from tests.tools.fake_backend import FakeBackend, result


@pytest.fixture
async def fake_bot(slack_env: dict[str, str], slack_api: SlackEmulator) -> AsyncIterator[RunningBot]:
    running = await start_bot(slack_env, slack_api, backend=FakeBackend())
    try:
        yield running
    finally:
        await stop_bot(running)


def _video(running: RunningBot) -> Path:
    video = Path(running.settings.workspace) / "walkway.mp4"
    video.write_bytes(b"frames")
    return video


async def _run_out(running: RunningBot, name: str, crossings: list[tuple[int, int]]) -> None:
    """Results with these running totals, then the file ends (seen by the next refresh, as the health tick does)."""
    pipelines = running.runtime.pipelines
    pid = pipelines.resolve(name).pipeline_id
    for n, (cin, cout) in enumerate(crossings):
        pipelines.backend.emit(pid, result({"person": 1}, frame_id=n, count_in=cin, count_out=cout))
    backend = pipelines.backend
    backend.handles[pid] = backend.handles[pid].with_(status="finished")
    await pipelines.list()


async def test_status_shows_the_totals_and_the_asker_hears_when_the_file_runs_out(
    fake_bot: RunningBot, slack_api: SlackEmulator
) -> None:
    env = await slack_api.await_ack(slack_api.slash(f"start {_video(fake_bot)} line=10,0,10,99 name=walkway"))
    assert "Starting" in env.ack_payload["text"]  # a first start acks at once; its result replaces that line
    assert "Started *walkway*" in (await slack_api.await_for("response_url"))[0].params["text"]
    pid = fake_bot.runtime.pipelines.resolve("walkway").pipeline_id
    for n, totals in enumerate([(0, 0), (2, 1), (5, 3)]):
        fake_bot.runtime.pipelines.backend.emit(pid, result({"person": 1}, frame_id=n, count_in=totals[0],
                                                            count_out=totals[1]))
    status = (await slack_api.await_ack(slack_api.slash("status"))).ack_payload["text"]
    assert "counted in 5 / out 3" in status and "counting line (10,0)→(10,99)" in status
    await _run_out(fake_bot, "walkway", [(7, 4)])
    told = (await slack_api.await_for("chat.postEphemeral"))[0].params
    assert told["channel"] == "C0GENERAL" and told["user"] == HUMAN
    assert told["text"] == "walkway finished (the file ran out after 4 frames): counted in 7 / out 4."
    assert slack_api.calls_to("chat.postMessage") == []  # nothing public: the start was answered to the asker alone


async def test_a_turn_that_started_a_file_gets_its_totals_in_its_thread(
    fake_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(
        tool_use(("start_pipeline", {"video_reference": str(_video(fake_bot)), "pipeline_name": "walk",
                                     "model_id": "builtin/people", "line": "0,50,99,50"})),
        text("Counting people on the walkway."),
    )
    ts, _ = slack_api.mention("count people crossing on walkway.mp4")
    await await_answers(slack_api, "C0GENERAL", ts)
    await _run_out(fake_bot, "walk", [(1, 0), (12, 9)])
    found = await await_answers(slack_api, "C0GENERAL", ts, count=2)
    assert found[-1] == "walk finished (the file ran out after 2 frames): counted in 12 / out 9."
    assert slack_api.calls_to("chat.postEphemeral") == []
