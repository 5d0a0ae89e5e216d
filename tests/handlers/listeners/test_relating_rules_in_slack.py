"""Rules that relate things, set in Slack: `near` checks both classes against the camera's model, `then` links two
cameras, `/vision rules` reads them back, what they see reaches the alert channel, and the agent sets them from
plain words with set_alert_rule."""

from __future__ import annotations

from bot.backends.base import Detection, InferenceResult
from bot.monitoring.rules import Rule
from bot.pipelines.request import StartRequest
from tests.fakes.anthropic_api import FakeAnthropic, text, tool_use
from tests.fakes.slack_api import ApiCall, SlackEmulator
from tests.fixtures.slack import RunningBot
from tests.fixtures.slow_start import SlowStartBackend, say, slow_start_backend, slow_start_bot  # noqa: F401 - fixtures
from tests.handlers.listeners.test_rights import result_text, tool_results


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


def alert_to(camera: str, channel: str = "C0GENERAL"):
    """A rule's alert: a member's rules (set by /vision in #general) alert where they were set."""
    return lambda c: c.params.get("channel") == channel and camera in c.params.get("text", "")


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
    assert "(alerts when 2 people are less than 0.3× the smaller one's size apart;" in listed

    backend.emit(first, people(20))  # someone passes cam1 ...
    backend.emit(second, people(20))  # ... and reaches cam2, alone
    backend.emit(second, people(20, 100))  # a second person comes within 20 px (0.11 box sizes)
    posts: list[ApiCall] = await slack_api.await_for("chat.postMessage", alert_to("cam2"), count=2)
    said = sorted(p.params["text"] for p in posts)
    assert "person here 0 s after cam1 saw it (within 60 s)" in said[0] + said[1]
    assert any("2 people near each other (0.11× the smaller one's size apart, within 0.3)" in s for s in said)


async def test_asked_in_plain_words_the_agent_sets_them_with_set_alert_rule(
    bot: RunningBot, slack_api: SlackEmulator, backend: SlowStartBackend, anthropic_api: FakeAnthropic
) -> None:
    await camera(bot, backend, "cam1")
    await camera(bot, backend, "cam2")
    anthropic_api.enqueue(
        tool_use(("set_alert_rule", {"camera": "cam2", "rule": "near person car"})),  # cam2's model has no car
        tool_use(("set_alert_rule", {"camera": "cam1", "rule": "then cam2 people 30", "cooldown_seconds": 120})),
        text("Set: I alert when someone seen on cam1 reaches cam2 within 30 s."))
    slack_api.mention("alert me if a person near a car on cam2, or anyone from cam1 reaches cam2 in 30 s")
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] in ("white_check_mark", "warning"))

    schema = next(t for t in anthropic_api.ok_requests[0].body["tools"] if t["name"] == "set_alert_rule")
    rule_help = schema["input_schema"]["properties"]["rule"]["description"]
    assert "near CLASS OTHER [GAP]" in rule_help and "then CAMERA2 [CLASS] [SECONDS]" in rule_help
    [refused] = tool_results(anthropic_api.ok_requests[1].body)
    assert refused["is_error"] and "cam2 never reports `car`" in result_text(refused)
    [added] = tool_results(anthropic_api.ok_requests[2].body)
    assert not added.get("is_error") and "`then:person@cam1<=60s`" not in result_text(added)
    assert "`then:person@cam1<=30s` (alerts when person is seen on cam1, then on cam2 within 30 s; cooldown 120 s)" \
        in result_text(added)
    assert bot.runtime.monitor.rules() == [
        Rule("then", "cam2", class_name="person", threshold=30, cooldown_seconds=120, after_camera="cam1")]
