"""`/vision cameras` through the Slack emulator: one table block (validated as Slack validates it: at most 100 rows
of at most 20 cells), a row per camera of CAMERAS.md and per pipeline, each saying whether it can count and what to
change; more cameras than a table holds say how many were left out; a camera nobody knows gets a line to act on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.backends.faults.kinds import Fault
from bot.pipelines.readiness import COLUMNS
from bot.pipelines.request import StartRequest
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fixtures.slack import RunningBot, start_bot, stop_bot
from tests.fixtures.street import street_frames
from tests.tools.fake_backend import FakeBackend, result


def registry(names: list[str]) -> str:
    return "| Name | URL |\n|---|---|\n" + "".join(f"| {n} | rtsp://10.1.{i // 250}.{i % 250 + 1}/live |\n"
                                                for i, n in enumerate(names))


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
async def bot(slack_env: dict[str, str], slack_api: SlackEmulator, backend: FakeBackend) -> AsyncIterator[RunningBot]:
    Path(slack_env["VISION_AGENT_WORKSPACE"], "CAMERAS.md").write_text(registry(["gate", "dock", "yard"]))
    running = await start_bot(slack_env, slack_api, backend=backend, clips={"enabled": False})
    try:
        yield running
    finally:
        await stop_bot(running)


def cells(env) -> list[list[str]]:
    [table] = [b for b in env.ack_payload["blocks"] if b["type"] == "table"]
    return [[c["text"] for c in row] for row in table["rows"]]


async def test_vision_cameras_is_one_table_of_every_camera_and_pipeline(
    bot: RunningBot, slack_api: SlackEmulator, backend: FakeBackend
) -> None:
    mgr = bot.runtime.pipelines
    gate = await mgr.start(StartRequest("gate", "gate", model_id="builtin/people", owner=HUMAN))
    yard = await mgr.start(StartRequest("yard", "yard", model_id="builtin/people", owner=HUMAN))
    frame = street_frames()[0]
    camera = {"settled": True, "person_px": 31.0, "smallest_px": 60.0, "blind_seconds": 0.0, "luma": 121.0,
              "poor_light": None}
    backend.emit(gate.pipeline_id, result({"person": 2}, frame=frame, camera=camera))
    backend.handles[yard.pipeline_id] = backend.handles[yard.pipeline_id].with_(
        faults=(Fault("frozen", 0.0, "the picture is frozen"),))
    env = await slack_api.await_ack(slack_api.slash("cameras"))
    assert env.ack_error is None and env.ack_payload["response_type"] == "ephemeral"
    rows = cells(env)
    assert rows[0] == list(COLUMNS) and [r[0] for r in rows[1:]] == ["gate", "dock", "yard"]
    by = {r[0]: dict(zip(COLUMNS, r, strict=True)) for r in rows[1:]}
    assert by["gate"]["Can count"].startswith("no — people here are about 31 px tall")
    assert by["gate"]["Light"] == "ok (luma 121)" and by["gate"]["Person height"] == "31 px"
    assert by["dock"]["State"] == "not running" and "`/vision start dock`" in by["dock"]["Can count"]
    assert by["yard"]["Motion"] == "frozen" and "restart the camera" in by["yard"]["Can count"]
    assert "0 of 3 can count" in env.ack_payload["text"]
    status = await slack_api.await_ack(slack_api.slash("status"))
    assert "*Cameras*: 0 of 3 can count; gate: no — people here are about 31 px" in status.ack_payload["text"]


@pytest.mark.parametrize("n", [100, 180])
async def test_more_cameras_than_a_table_holds_fit_and_say_how_many_more(
    slack_env: dict[str, str], slack_api: SlackEmulator, n: int
) -> None:
    Path(slack_env["VISION_AGENT_WORKSPACE"], "CAMERAS.md").write_text(registry([f"cam{i:03d}" for i in range(n)]))
    running = await start_bot(slack_env, slack_api, backend=FakeBackend())
    try:
        env = await slack_api.await_ack(slack_api.slash("cameras"))
        assert env.ack_error is None
        rows = cells(env)
        assert len(rows) == 100 and rows[-1][0] == f"… and {n - 98} more"
        one = await slack_api.await_ack(slack_api.slash(f"cameras cam{n - 1:03d}"))
        assert [r[0] for r in cells(one)[1:]] == [f"cam{n - 1:03d}"]
    finally:
        await stop_bot(running)


async def test_an_unknown_camera_gets_the_names_it_could_use(bot: RunningBot, slack_api: SlackEmulator) -> None:
    env = await slack_api.await_ack(slack_api.slash("cameras gaet"))
    assert env.ack_payload["text"] == ("No camera or pipeline called 'gaet': known cameras: dock, gate, yard; did you "
                                       "mean `gate`?")
    assert "blocks" not in env.ack_payload
