"""Search the past at the REST and MCP doors: the same moments the tool finds, as data, and each event's picture."""

from __future__ import annotations

import io
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PIL import Image

from bot.config import load_settings
from bot.monitoring.alerts import Alert
from tests.bot.objects.doors import TOKEN, Doors, open_doors, settings_env
from tests.fakes.waits import patience

DATA = Path(__file__).resolve().parents[2] / "fixtures" / "data"


@pytest.fixture
async def doors(base_env) -> AsyncIterator[Doors]:
    async for d in open_doors(load_settings(settings_env(base_env))):
        yield d


def seed(doors: Doors) -> None:
    """Two people on the real street frame, one of them walking left, and a car at the gate, through the router."""
    jpeg = (DATA / "street.jpg").read_bytes()
    box = json.loads((DATA / "street.json").read_text())["people"][2]
    w, h = Image.open(io.BytesIO(jpeg)).size
    frac = (box[0] / w, box[1] / h, box[2] / w, box[3] / h)
    now = time.time()
    for i, (camera, seen) in enumerate([
            ("street", "black person (medium, 82 px tall, centre, walking left)"),
            ("street", "black person (medium, 80 px tall, right, standing)"),
            ("gate", "white car vehicle (large, 300 px tall, centre, driving right)")]):
        doors.rt.router.record(Alert(camera, "class_appears:person", "appears", {}, now - 600 * (3 - i), jpeg,
                                     seen=seen, box=frac))
    assert doors.rt.events.pictures is not None and doors.rt.events.pictures.flush(patience(30))


async def test_rest_and_mcp_answer_the_same_moments_with_their_pictures(doors: Doors) -> None:
    seed(doors)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with doors.http.get(doors.base + "/api/events/search", params={"q": "someone walking left", "limit": "2",
                                                                          "utm_source": "x"}, headers=auth) as resp:
        assert resp.status == 200, await resp.text()
        body = await resp.json()
    assert [m["what"] for m in body["moments"]][:1] == ["black person (medium, 82 px tall, centre, walking left)"]
    assert len(body["moments"]) <= 2 and body["searched"] == 3
    first = body["moments"][0]
    async with doors.http.get(f"{doors.base}/api/events/{first['id']}/picture", headers=auth) as resp:
        assert resp.status == 200 and resp.content_type == "image/jpeg"
        crop = Image.open(io.BytesIO(await resp.read()))
    assert crop.height > crop.width  # the person, not the wide street
    async with doors.http.get(doors.base + "/api/events/999999/picture", headers=auth) as resp:
        assert resp.status == 404 and "no picture for that event" in (await resp.json())["error"]
    async with doors.http.get(doors.base + "/api/events/search", params={"q": "car", "camera": "nowhere"},
                              headers=auth) as resp:
        assert resp.status == 400 and "its cameras: " in (await resp.json())["error"]
    result = await doors.mcp_result("search_events", {"query": "someone walking left", "limit": 2})
    assert not result.isError and result.structuredContent is not None
    assert [m["id"] for m in result.structuredContent["moments"]] == [m["id"] for m in body["moments"]]
    assert any(c.type == "image" for c in result.content)  # the best frame, as image content
