"""The REST API and the webhook on the real in-process inference engine: a pipeline started over HTTP on a test
video, its frame as a JPEG, the line crossing it sees in /api/events and at the webhook receiver, signed."""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path

import aiohttp
import pytest
from PIL import Image

from bot.api.server import ApiServer
from bot.backends.provider import BackendProvider
from bot.config import load_settings
from bot.monitoring.webhooks.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from bot.runtime import Runtime
from tests.bot.monitoring.test_webhooks import Receiver, bodies_of
from tests.fakes.waits import patience

TOKEN = "api-token-0123456789abcdef"
HOOK = "hook-secret-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.mark.slow
async def test_pipeline_over_rest_on_the_real_engine_reaches_events_and_the_webhook(
    direct_backend, face_video: Path, base_env: dict[str, str]
) -> None:
    rx = await Receiver().start()
    env = {**base_env, "VISION_AGENT_API_TOKEN": TOKEN, "VISION_AGENT_MEDIA_DIRS": str(face_video.parent),
           "VISION_AGENT_WEBHOOK_URL": rx.url, "VISION_AGENT_WEBHOOK_TOKEN": HOOK}
    rt = Runtime(load_settings(env))  # background: the monitor turns results into events
    rt.backend = BackendProvider.of(direct_backend)
    await rt.start()
    server = ApiServer(rt, "127.0.0.1", 0)
    base = f"http://127.0.0.1:{await server.start()}"
    started = time.time()
    try:
        async with aiohttp.ClientSession(headers=AUTH) as http:
            async with http.post(f"{base}/api/pipelines", json={"source": str(face_video), "name": "door",
                                                                "model": "builtin/faces", "line": "middle"}) as r:
                assert r.status == 201, await r.text()
                pid = (await r.json())["pipeline"]["pipeline_id"]
            frame = b""
            for _ in range(int(patience(20) / 0.1)):
                async with http.get(f"{base}/api/pipelines/{pid}/frame") as r:
                    if r.status == 200:
                        frame = await r.read()
                        break
                await asyncio.sleep(0.1)
            assert Image.open(io.BytesIO(frame)).format == "JPEG"
            events: list[dict] = []
            for _ in range(int(patience(30) / 0.1)):  # the 60-frame video ends within seconds; its crossing alert with it
                async with http.get(f"{base}/api/events", params={"since": "600", "camera": "door"}) as r:
                    events = (await r.json())["events"]
                if any(e["event_type"] == "line_crossed" for e in events):
                    break
                await asyncio.sleep(0.1)
            assert any(e["event_type"] == "line_crossed" and e["time"] >= started - 1 for e in events), events
            async with http.post(f"{base}/api/pipelines/{pid}/stop") as r:
                assert r.status == 200 and (await r.json())["pipeline"]["status"] in ("stopped", "finished")
        crossing: list[dict] = []
        for _ in range(int(patience(30) / 0.1)):  # the webhook follows the alert's clip (cut seconds after it)
            if crossing := [b for b in bodies_of(rx) if b["event_type"] == "line_crossed"]:
                break
            await asyncio.sleep(0.1)
        assert crossing and crossing[0]["camera"] == "door" and crossing[0]["pipeline_id"] == pid
        headers, body = next((h, b) for h, b in rx.requests if b"line_crossed" in b)
        assert verify(HOOK, headers[TIMESTAMP_HEADER], body, headers[SIGNATURE_HEADER])
    finally:
        await server.stop()
        await rt.close()
        await rx.stop()
