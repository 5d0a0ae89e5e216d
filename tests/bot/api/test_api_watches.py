"""The REST API's watches: added as `/vision watch` adds them (same checks), listed, cancelled; errors are one line."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.bot.api.test_api import TOKEN, Api, serve_api


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
