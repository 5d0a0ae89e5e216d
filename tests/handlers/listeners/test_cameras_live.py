"""`/vision cameras` over real pipelines (the direct backend's InferencePipeline, builtin/people) on loopback cameras
made from real footage, in the conditions a camera fails in: a live street, a frozen picture, a black one, one that
is away (connections refused) and one registered but never started. The table comes back through the Slack
emulator (validated as Slack validates a table block) and each row says what the camera watch and the detector saw."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from bot.pipelines.readiness import COLUMNS
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.waits import patience
from tests.fixtures import faulty
from tests.fixtures.mjpeg import MjpegCamera
from tests.fixtures.slack import RunningBot, start_bot, stop_bot

pytestmark = pytest.mark.slow


@pytest.fixture
def cameras() -> AsyncIterator[dict[str, MjpegCamera]]:
    street = faulty.street()
    rng = np.random.default_rng(7)
    cams = {"street": MjpegCamera(faulty.jpegs(faulty.live(street, 118)), fps=5),
            "frozen": MjpegCamera(faulty.jpegs([street[20]]), fps=5),
            "black": MjpegCamera(faulty.jpegs(faulty.black(street[0].shape, 30, rng)), fps=5),
            "away": MjpegCamera(faulty.jpegs([street[0]]), fps=5)}
    cams["away"].away()
    try:
        yield cams
    finally:
        for c in cams.values():
            c.stop()


@pytest.fixture
async def bot(slack_env: dict[str, str], slack_api: SlackEmulator,
              cameras: dict[str, MjpegCamera]) -> AsyncIterator[RunningBot]:
    rows = "".join(f"| {n} | {c.url} |\n" for n, c in cameras.items()) + "| spare | rtsp://127.0.0.1:9/none |\n"
    Path(slack_env["VISION_AGENT_WORKSPACE"], "CAMERAS.md").write_text("| Name | URL |\n|---|---|\n" + rows)
    running = await start_bot(slack_env, slack_api)
    try:
        yield running
    finally:
        await stop_bot(running)


async def table(slack_api: SlackEmulator) -> dict[str, dict[str, str]]:
    env = await slack_api.await_ack(slack_api.slash("cameras"), timeout=30)
    assert env.ack_error is None, env.ack_error
    [block] = [b for b in env.ack_payload["blocks"] if b["type"] == "table"]
    rows = [[c["text"] for c in r] for r in block["rows"]]
    assert rows[0] == list(COLUMNS)
    return {r[0]: dict(zip(COLUMNS, r, strict=True)) for r in rows[1:]}


async def test_the_table_tells_a_live_a_frozen_a_black_an_away_and_an_idle_camera_apart(
    bot: RunningBot, slack_api: SlackEmulator
) -> None:
    for name in ("street", "frozen", "black", "away"):
        env = await slack_api.await_ack(slack_api.slash(f"start {name} fps=5"), timeout=60)
        assert env.ack_payload is not None
    deadline = time.monotonic() + patience(90)
    while True:
        got = await table(slack_api)
        done = (got["frozen"]["Motion"] == "frozen" and got["street"]["Motion"] == "moving" and got["black"]["Light"].startswith("black")
                and got["street"]["Last frame"] != "—" and got["away"]["Can count"].startswith("no"))
        if done or time.monotonic() > deadline:
            break
        await asyncio.sleep(1.0)
    print("\n".join(" | ".join(r.values()) for r in got.values()))
    street, frozen, black, away, spare = (got[n] for n in ("street", "frozen", "black", "away", "spare"))
    assert street["Resolution"] == "384×288" and street["State"] == "running" and street["Motion"] == "moving"
    asked, delivered = street["FPS asked / delivered"].split(" / ")
    assert asked == "5" and 0 < float(delivered.split()[0]) <= 6
    assert not street["Can count"].startswith("no — the picture")
    assert frozen["Motion"] == "frozen" and frozen["Can count"].startswith("no — the picture is frozen")
    assert black["Light"].startswith("black or covered") and black["Can count"].startswith("no — the picture is black")
    assert away["Can count"].startswith("no") and away["Last frame"] == "—"
    assert spare["State"] == "not running" and "`/vision start spare`" in spare["Can count"]
