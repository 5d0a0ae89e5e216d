"""The REST API's watches: added as `/vision watch` adds them (same checks), listed, cancelled; errors are one line."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import load_settings
from tests.bot.api.test_api import CAMERAS, TOKEN, Api, run_api, serve_api, started
from tests.bot.monitoring.test_webhooks import Receiver
from tests.fakes.waits import patience
from tests.tools.fake_backend import result


@pytest.fixture
async def api(base_env: dict[str, str], workspace_dir: Path) -> AsyncIterator[Api]:
    async for a in serve_api(dict(base_env, VISION_AGENT_API_TOKEN=TOKEN), workspace_dir):
        yield a


async def test_a_watch_is_added_listed_and_cancelled_over_the_api(api: Api) -> None:
    status, body = await api.call("POST", "/api/watches", json={"camera": "dock", "condition": "count person<1",
                                                                "for_seconds": 600, "about": "last one out"})
    assert status == 201, body
    watch = body["watch"]
    assert watch["camera"] == "dock" and watch["description"] == "fewer than 1 person is in view"
    assert watch["expires_at"] - watch["created_at"] == 600 and watch["channel"] is None  # the camera's alert route
    assert "No pipeline runs on dock now" in body["note"]
    status, body = await api.call("GET", "/api/watches")
    assert status == 200 and [w["id"] for w in body["watches"]] == [watch["id"]]
    status, body = await api.call("DELETE", f"/api/watches/{watch['id']}")
    assert (status, body["removed"]) == (200, watch["id"])
    status, body = await api.call("DELETE", f"/api/watches/{watch['id']}")
    assert status == 404 and "GET /api/watches lists them" in body["error"]
    assert api.rt.watches.all() == []


async def test_a_bad_watch_is_refused_with_what_to_do(api: Api) -> None:
    status, body = await api.call("POST", "/api/watches", json={"camera": "nowhere", "condition": "appears person"})
    assert status == 400 and "Unknown camera 'nowhere'" in body["error"] and "dock" in body["error"]
    status, body = await api.call("POST", "/api/watches", json={"camera": "dock", "condition": "hovers"})
    assert status == 400 and body["error"].startswith("Usage: `/vision watch CAMERA")
    status, body = await api.call("POST", "/api/watches", json={"camera": "dock", "condition": "line",
                                                                "for_seconds": 1})
    assert status == 400 and "a watch lasts between 5 s and 24 h, not 1 s" in body["error"]  # for_seconds: an alias
    assert api.rt.watches.all() == []


async def test_a_rest_watch_answers_at_the_webhook_and_its_reply_says_so(base_env: dict[str, str],
                                                                          workspace_dir: Path) -> None:
    """Field test (issue 33): a REST watch's answer was only in /api/events, and the reply named no place."""
    rx = await Receiver().start()
    env = dict(base_env, VISION_AGENT_API_TOKEN=TOKEN, VISION_AGENT_WEBHOOK_URL=rx.url,
               VISION_AGENT_MEDIA_DIRS=str(workspace_dir))
    try:
        async for api in run_api(load_settings(env), CAMERAS, background=True):  # as `vision-agent api` runs
            video = workspace_dir / "dock.mp4"
            video.write_bytes(b"\x00\x00\x00\x18ftypmp42")
            status, body = await api.call("POST", "/api/pipelines", json={"source": str(video), "name": "dock"})
            pid = (await started(api, body))["pipeline_id"]
            status, body = await api.call("POST", "/api/watches", json={"camera": "dock", "condition": "count person>2"})
            assert status == 201, body
            host = rx.url.split("/hook")[0]
            assert body["answers_to"] == [f"the webhook at {host}", "GET /api/events?camera=dock"], body
            assert body["note"].startswith(f"The answer goes to the webhook at {host}, GET /api/events?camera=dock.")
            api.backend.emit(pid, result({"person": 3}))
            deadline = time.monotonic() + patience(30)
            events = lambda: [e for b in rx.bodies()  # noqa: E731 - a batch's events count one by one
                              for e in (b["events"] if b.get("event_type") == "batch" else [b])]
            while not (answers := [e for e in events() if e["rule"] == f"watch:{body['watch']['id']}"]):
                assert time.monotonic() < deadline, rx.bodies()
                await asyncio.sleep(0.05)
            assert answers[0]["camera"] == "dock" and answers[0]["counts"] == {"person": 3}
    finally:
        await rx.stop()
