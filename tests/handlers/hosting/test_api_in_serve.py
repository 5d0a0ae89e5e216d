"""`serve` with the REST API on the /healthz port and a webhook: an alert reaches Slack and the webhook receiver,
its frame_url shows that alert's own frame, and a hanging webhook endpoint does not hold the Slack post."""

from __future__ import annotations

import asyncio
import io
import time

import aiohttp
from PIL import Image

from bot.monitoring.alerts import Alert
from bot.monitoring.webhooks.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from tests.bot.monitoring.test_webhooks import Receiver, bodies_of
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.common import free_port
from tests.fixtures.slack import start_bot, stop_bot
from tests.tools.fake_backend import FakeBackend

API_TOKEN = "api-token-0123456789abcdef"
HOOK_TOKEN = "hook-secret-0123456789"


def jpeg(colour: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), colour).save(buf, "JPEG")
    return buf.getvalue()


async def test_api_shares_the_health_port_and_alerts_reach_slack_and_the_webhook(
    slack_env: dict[str, str], slack_api: SlackEmulator
) -> None:
    port, rx = free_port(), await Receiver().start()
    env = {**slack_env, "VISION_AGENT_API_TOKEN": API_TOKEN, "VISION_AGENT_WEBHOOK_URL": rx.url,
           "VISION_AGENT_WEBHOOK_TOKEN": HOOK_TOKEN, "VISION_AGENT_ALERT_CHANNEL": "C0ALERTS"}
    running = await start_bot(env, slack_api, backend=FakeBackend(), slack={"health_port": port})
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/healthz") as resp:
                assert resp.status == 200
            async with http.get(f"{base}/api/pipelines") as resp:
                assert resp.status == 401
            async with http.get(f"{base}/api/pipelines", headers={"Authorization": f"Bearer {API_TOKEN}"}) as resp:
                assert resp.status == 200 and (await resp.json())["pipelines"] == []
        await running.runtime.router.dispatch(Alert("dock", "line_crossed", "1 crossed the line", pipeline_id="p1"))
        await slack_api.await_for("chat.postMessage", lambda c: "1 crossed the line" in str(c.params.get("text")))
        assert await running.runtime.webhooks.drain(5)
        headers, body = rx.requests[0]
        assert verify(HOOK_TOKEN, headers[TIMESTAMP_HEADER], body, headers[SIGNATURE_HEADER])
        assert bodies_of(rx)[0]["frame_url"] is None  # no frame of its own: never the camera's later one
        assert [e["text"] for e in running.runtime.events.query()] == ["1 crossed the line"]
    finally:
        await stop_bot(running)
        await rx.stop()
    assert running.runtime.webhooks is None  # closed with the runtime


async def test_each_webhook_frame_url_shows_its_own_alerts_frame(slack_env: dict[str, str],
                                                                 slack_api: SlackEmulator) -> None:
    port, rx = free_port(), await Receiver().start()
    env = {**slack_env, "VISION_AGENT_API_TOKEN": API_TOKEN, "VISION_AGENT_WEBHOOK_URL": rx.url,
           "VISION_AGENT_ALERT_CHANNEL": "C0ALERTS"}
    running = await start_bot(env, slack_api, backend=FakeBackend(), slack={"health_port": port},
                              webhook={"min_interval_seconds": 0})
    red, blue = jpeg((220, 20, 20)), jpeg((20, 20, 220))
    try:
        for text, frame in (("1 crossed the line", red), ("2 crossed the line", blue)):  # one camera, one pipeline
            await running.runtime.router.dispatch(Alert("dock", "line_crossed", text, pipeline_id="p1", frame=frame,
                                                        cooldown_seconds=0))
        assert await running.runtime.webhooks.drain(5)
        first, second = bodies_of(rx)  # one POST each, or one batch of both
        assert first["frame_url"] != second["frame_url"]
        assert all(u.startswith(f"http://127.0.0.1:{port}/api/alerts/") for u in (first["frame_url"],
                                                                                 second["frame_url"]))
        async with aiohttp.ClientSession() as http:
            for body, frame in ((second, blue), (first, red)):  # fetched after both were sent, newest first
                async with http.get(body["frame_url"], headers={"Authorization": f"Bearer {API_TOKEN}"}) as resp:
                    assert resp.status == 200 and resp.content_type == "image/jpeg"
                    assert await resp.read() == frame
            async with http.get(first["frame_url"]) as resp:
                assert resp.status == 401  # the same bearer gate as every /api path
            async with http.get(f"http://127.0.0.1:{port}/api/alerts/0123456789ab/frame",
                                headers={"Authorization": f"Bearer {API_TOKEN}"}) as resp:
                assert resp.status == 404 and "no frame for that alert" in (await resp.json())["error"]
    finally:
        await stop_bot(running)
        await rx.stop()
    assert running.runtime.webhooks is None  # closed with the runtime


async def test_a_hanging_webhook_does_not_hold_the_slack_alert(slack_env: dict[str, str],
                                                               slack_api: SlackEmulator) -> None:
    rx = await Receiver().start()
    rx.hang = True
    env = {**slack_env, "VISION_AGENT_WEBHOOK_URL": rx.url, "VISION_AGENT_ALERT_CHANNEL": "C0ALERTS"}
    running = await start_bot(env, slack_api, backend=FakeBackend())
    try:
        start = time.monotonic()
        await running.runtime.router.dispatch(Alert("dock", "line_crossed", "first"))
        await running.runtime.router.dispatch(Alert("dock", "class_appears:car", "second"))
        dispatched = time.monotonic() - start
        await slack_api.await_for("chat.postMessage", lambda c: "second" in str(c.params.get("text")), timeout=5)
        assert dispatched < 1.0, dispatched  # both posted to Slack while the webhook still waits for its first
        await asyncio.wait_for(rx.got.wait(), 5)  # the webhook was being tried meanwhile, and hangs
        assert running.runtime.webhooks.stats["sent"] == 0
    finally:
        await stop_bot(running)
        await rx.stop()
