"""Rules that relate things, set in Slack: `near` checks both classes against the camera's model, `then` links two
cameras, `/vision rules` reads them back, and what they see reaches the alert channel."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.backends.base import Detection, InferenceResult
from bot.pipelines.request import StartRequest
from tests.fakes.slack_api import ApiCall, SlackEmulator
from tests.fixtures.slack import RunningBot, start_bot, stop_bot
from tests.handlers.listeners.test_commands import SlowStartBackend
from tests.handlers.listeners.test_commands_first_hour import say


@pytest.fixture
def backend() -> SlowStartBackend:
    return SlowStartBackend()


@pytest.fixture
async def bot(slack_env: dict[str, str], slack_api: SlackEmulator, backend: SlowStartBackend
              ) -> AsyncIterator[RunningBot]:
    env = {**slack_env, "VISION_AGENT_ALERT_CHANNEL": "C0ALERTS"}
    running = await start_bot(env, slack_api, backend=backend, clips={"enabled": False})
    try:
        yield running
    finally:
        await stop_bot(running)


async def camera(bot: RunningBot, backend: SlowStartBackend, name: str) -> str:
    """A builtin/people pipeline called `name` (its model says `person`, nothing else)."""
    backend.release.set()
    video = bot.settings.workspace / f"{name}.mp4"
    video.write_bytes(b"not really a video")
    return (await bot.runtime.pipelines.start(StartRequest(str(video), name, model_id="builtin/people"))).pipeline_id


def people(*xs: float) -> InferenceResult:
    """People 60x180 px standing side by side at the given left edges."""
    dets = tuple(Detection("person", 0.9, (x, 100.0, x + 60, 280.0), i) for i, x in enumerate(xs))
    return InferenceResult(dets, image_size=(640, 480))  # no frame: the alert is one chat.postMessage


def alert_to(camera: str):
    return lambda c: c.params.get("channel") == "C0ALERTS" and camera in c.params.get("text", "")


async def test_near_and_then_set_in_slack_check_classes_read_well_and_alert(
    bot: RunningBot, slack_api: SlackEmulator, backend: SlowStartBackend
) -> None:
    first, second = await camera(bot, backend, "cam1"), await camera(bot, backend, "cam2")
    refused = await say(slack_api, "rule cam2 near person car")
    assert "cam2 never reports `car`" in refused and "`/vision rule cam2 near person person 0.5`" in refused
    added = await say(slack_api, "rule cam2 near people person 0.3")
    assert "`near:person+person&lt;=0.3`" in added and "`people` taken as `person`" in added
    linked = await say(slack_api, "rule cam1 then cam2 person 60")
    assert linked.startswith("Rule on *cam2*: `then:person@cam1&lt;=60s` (alerts when person is seen on cam1, "
                             "then on cam2 within 60 s;")
    assert "/vision unrule cam2 then:person@cam1&lt;=60s" in linked
    assert "needs two different cameras" in await say(slack_api, "rule cam1 then cam1 person")
    assert "two named cameras" in await say(slack_api, "rule * then cam2 person")
    listed = await say(slack_api, "rules cam2")
    assert "(alerts when person and person are less than 0.3× the smaller one's size apart;" in listed

    backend.emit(first, people(20))  # someone passes cam1 ...
    backend.emit(second, people(20))  # ... and reaches cam2, alone
    backend.emit(second, people(20, 100))  # a second person comes within 20 px (0.11 box sizes)
    posts: list[ApiCall] = await slack_api.await_for("chat.postMessage", alert_to("cam2"), count=2)
    said = sorted(p.params["text"] for p in posts)
    assert "person here 0 s after cam1 saw it (within 60 s)" in said[0] + said[1]
    assert any("person near person (0.11× the smaller one's size apart, within 0.3)" in s for s in said)
