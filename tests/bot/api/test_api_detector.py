"""POST /api/pipelines takes the detector settings `/vision start` takes (the one StartRequest path), and refuses
out-of-range ones with one line before any source is opened."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bot.api.test_api import Api, api  # noqa: F401 - the fixture


@pytest.mark.parametrize(("confidence", "min_height"), [(0.2, 30), (1, 8), (0, 2000)])
async def test_detector_settings_reach_the_detector(api: Api, workspace_dir: Path, confidence, min_height) -> None:  # noqa: F811
    video = workspace_dir / "yard.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42")
    status, body = await api.call("POST", "/api/pipelines", json={"source": str(video), "name": "yard",
                                                                  "confidence": confidence, "min_height": min_height})
    assert status == 201, body
    call = next(c[1] for c in api.backend.calls if c[0] == "start_pipeline")
    detector = next(s for s in call["workflow_spec"]["steps"] if s["name"] == "detector")
    assert (detector["confidence"], detector["min_height"]) == (confidence, min_height)


@pytest.mark.parametrize("extra", [{"confidence": 1.2}, {"confidence": -0.5}, {"min_height": 7}, {"min_height": 5000},
                                   {"model": "builtin/faces", "min_height": 40}, {"workflow": "acme/ppe", "confidence": 0.5}])
async def test_out_of_range_settings_get_one_line(api: Api, extra) -> None:  # noqa: F811
    status, body = await api.call("POST", "/api/pipelines", json={"source": "dock", **extra})
    assert status in (400, 422) and "\n" not in body["error"], body
    assert next(iter(extra if len(extra) == 1 else list(extra)[1:])) in body["error"]
    assert not any(c[0] == "start_pipeline" for c in api.backend.calls)
