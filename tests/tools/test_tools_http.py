"""The tools over the HTTP backend against the real local inference server (describe/serialization formats differ)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agent.tools import ToolContext
from bot.backends.provider import BackendProvider
from bot.config import load_settings
from bot.services import Services
from tools import build_registry

pytestmark = pytest.mark.slow


@pytest.fixture
async def ctx(base_env, workspace_dir: Path, inference_server: str):
    from bot.backends.http.backend import HttpBackend

    settings = load_settings({**base_env, "VISION_AGENT_BACKEND": "http", "INFERENCE_SERVER_URL": inference_server})
    backend = HttpBackend(settings)
    yield ToolContext(settings=settings, services=Services(backend=BackendProvider.of(backend)))
    await backend.close()


async def test_run_inference_over_http_finds_the_face(ctx, workspace_dir: Path, astronaut_jpeg: bytes):
    (workspace_dir / "astronaut.jpg").write_bytes(astronaut_jpeg)
    res = await build_registry().execute("run_inference", {"image": "astronaut.jpg", "model_id": "builtin/faces"}, ctx)
    assert not res.is_error, res.text
    assert "1 detection: 1 face (" in res.text and res.frame and res.frame.startswith(b"\xff\xd8\xff")


async def test_discovery_over_http(ctx):
    reg = build_registry()
    tracking = await reg.execute("list_workflow_blocks", {"category": "tracking"}, ctx)
    assert "roboflow_core/byte_tracker@v3" in tracking.text, tracking.text
    details = await reg.execute("get_block_details", {"block_type": "roboflow_core/line_counter@v2"}, ctx)
    assert "- line_segment (required)" in details.text and "count_in [integer]" in details.text
