"""The model gets camera names, never camera URLs (issue 22 item 4): CAMERAS.md in the system prompt, tool results,
the turn context's pipeline lines and later turns name each camera; a URL the user typed still starts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bot.media.redaction import redact
from tests.bot.media.test_redaction_vendors import CORPUS
from tests.fakes.anthropic_api import FakeAnthropic, text, tool_use
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.slack import RunningBot, await_answers, start_bot, stop_bot
from tests.tools.fake_backend import FakeBackend

# Every vendor URL form of the redaction corpus, registered as a camera (cam0, cam1, …).
URLS = [(t, secrets) for t, secrets, _ in CORPUS if t.split("://")[0] in ("rtsp", "http", "https", "rtmp")
        and " is " not in t]
CAMS = {f"cam{n}": url for n, (url, _) in enumerate(URLS)}
SECRETS = [s for _, secrets in URLS for s in secrets]
# Not registered: the user pastes it into the chat (userinfo, and the DVR style with the password in the path).
TYPED = ["rtsp://admin:Typ3dPass9@93.184.216.34:554/live",
         "rtsp://93.184.216.35:554/user=admin_password=Typ3dPass9_channel=1_stream=0.sdp"]


@pytest.fixture
async def cameras_bot(slack_env: dict[str, str], slack_api: SlackEmulator) -> AsyncIterator[RunningBot]:
    rows = "\n".join(f"| {name} | {url} | site {name} |" for name, url in CAMS.items())
    Path(slack_env["VISION_AGENT_WORKSPACE"], "CAMERAS.md").write_text(
        f"# Cameras\n\n| Name | URL | Location |\n|---|---|---|\n{rows}\n")
    running = await start_bot(slack_env, slack_api, backend=FakeBackend())
    try:
        yield running
    finally:
        await stop_bot(running)


def seen_by_model(body: dict) -> str:
    return json.dumps({k: body.get(k) for k in ("system", "messages", "tools")}, ensure_ascii=False)


def leaks(seen: str) -> list[str]:
    """Any camera's URL (as registered or redacted), host or secret in what the model received."""
    found = [s for s in SECRETS if s in seen]
    for url in CAMS.values():
        host = urlsplit(url.replace(" ", "%20").replace("#", "%23")).hostname or ""
        found += [f for f in (url, redact(url), host) if f and f in seen]
    return found


async def test_a_camera_started_by_name_reaches_the_model_only_by_name(
    cameras_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    backend = cameras_bot.runtime.pipelines.backend
    started = ["cam4", "cam0", "cam12"]  # path-style DVR password, Hikvision userinfo, Reolink with '#'
    anthropic_api.enqueue(
        tool_use(*[("start_pipeline", {"video_reference": c, "pipeline_name": c, "model_id": "builtin/people"})
                   for c in started]),
        tool_use(("list_pipelines", {}), ("get_pipeline_results", {"pipeline_id": "cam4"})),
        text("Watching three cameras."), text("Still watching."))
    root, _ = slack_api.mention("watch cam4, cam0 and cam12")
    await await_answers(slack_api, "C0GENERAL", root, 1)
    slack_api.message("how are they doing?", thread_ts=root)
    await await_answers(slack_api, "C0GENERAL", root, 2)

    assert [c[1]["video_reference"] for c in backend.calls if c[0] == "start_pipeline"] == [CAMS[c] for c in started]
    bodies = [seen_by_model(r.body) for r in anthropic_api.ok_requests]
    assert all(leaks(b) == [] for b in bodies), [leaks(b) for b in bodies]
    last = bodies[-1]
    assert all(f'| {c} | camera \\"{c}\\" |' in last for c in CAMS)  # CAMERAS.md: each row names its camera
    assert 'Processing camera \\"cam4\\"' in last and 'source camera \\"cam12\\"' in last  # tool result, turn context


@pytest.mark.parametrize("typed", TYPED)
async def test_a_url_the_user_types_still_starts_and_comes_back_named(
    cameras_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic, typed: str
) -> None:
    backend = cameras_bot.runtime.pipelines.backend
    anthropic_api.enqueue(
        tool_use(("start_pipeline", {"video_reference": typed, "pipeline_name": "gate", "model_id": "builtin/people"})),
        tool_use(("list_pipelines", {})), text("Watching the gate."), text("Fine."))
    root, _ = slack_api.mention(f"watch {typed} and call it gate")
    await await_answers(slack_api, "C0GENERAL", root, 1)
    slack_api.message("and now?", thread_ts=root)
    await await_answers(slack_api, "C0GENERAL", root, 2)

    assert [c[1]["video_reference"] for c in backend.calls if c[0] == "start_pipeline"] == [typed]
    for rec in anthropic_api.ok_requests:
        # The password is only where the user typed it (and in the model's own call, which passed it through);
        # everything the bot adds (system prompt, turn context, tool results) names the pipeline, the host at most.
        added = [rec.body["system"], rec.body.get("tools")] + [
            b for m in rec.body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if not b.get("text", "").startswith("<message from_user=")]
        assert "Typ3dPass9" not in json.dumps(added)
    seen = seen_by_model(anthropic_api.ok_requests[-1].body)
    assert "Pipeline 'gate' started" in seen and "gate (id" in seen
