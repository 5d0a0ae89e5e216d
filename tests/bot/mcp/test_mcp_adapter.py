"""The MCP adapter in-process through the SDK's client session: read-only mode, views and resources, operator rights."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp.shared.memory import create_connected_server_and_client_session
from pydantic import AnyUrl

from bot.config import load_settings
from bot.mcp.adapter import McpAdapter
from bot.monitoring.alerts import Alert
from bot.runtime import Runtime
from tests.bot.mcp.helpers import decoded
from tools import build_registry

CHANGING = {"start_pipeline", "stop_pipeline", "pause_pipeline", "resume_pipeline", "remember", "export_script"}


@pytest.fixture
async def runtime(base_env: dict[str, str], workspace_dir: Path) -> AsyncIterator[Runtime]:
    (workspace_dir / "CAMERAS.md").write_text("| Name | URL |\n|---|---|\n| dock | rtsp://admin:hunter2@10.0.0.5/s1 |\n")
    # Slack allowlists name someone else: an MCP client is the operator all the same
    settings = load_settings(base_env, slack={"allowed_users": ["U_SOMEONE_ELSE"]})
    async with Runtime(settings, background=False) as rt:
        yield rt


async def test_read_only_lists_and_runs_only_tools_that_change_nothing(runtime: Runtime) -> None:
    async with create_connected_server_and_client_session(McpAdapter(runtime, read_only=True).server) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        changing = {n for n in runtime.tools.names if runtime.tools.get(n).changes}  # type: ignore[union-attr]
        assert CHANGING <= changing and not names & changing
        assert {"run_inference", "list_pipelines", "get_events", "recall", "list_cameras"} <= names
        text, _, err = decoded(await session.call_tool("start_pipeline", {
            "video_reference": "dock", "pipeline_name": "dock", "model_id": "builtin/faces"}))
        assert err and "read-only" in text and "mcp.read_only" in text
        assert runtime.pipelines.snapshot() == []  # nothing started
        text, _, err = decoded(await session.call_tool("remember", {"content": "the dock door is blue"}))
        assert err and "read-only" in text
        assert "blue" not in runtime.memory.get_daily_observations()
        text, _, err = decoded(await session.call_tool("export_script", {"name": "door-count"}))
        assert err and "export_script changes recipes" in text and "read-only" in text  # refused before the lookup
        assert not runtime.workspace.exports_dir.exists() or not any(runtime.workspace.exports_dir.iterdir())


async def test_full_mode_offers_every_registry_tool_and_the_operator_may_change(runtime: Runtime) -> None:
    async with create_connected_server_and_client_session(McpAdapter(runtime, read_only=False).server) as session:
        names = [t.name for t in (await session.list_tools()).tools]
        assert names[: len(build_registry().names)] == build_registry().names
        text, _, err = decoded(await session.call_tool("remember", {"content": "the dock door is blue"}))
        assert not err, text  # allowlisted Slack users do not bind the operator
        assert "blue" in runtime.memory.get_daily_observations()
        text, _, err = decoded(await session.call_tool("run_inference", {"image": "/etc/passwd", "model_id": "builtin/faces"}))
        assert err and "outside the folders I may read" in text  # the operator's tools keep the media boundary
        text, _, err = decoded(await session.call_tool("remember", {"nonsense": 1}))
        assert err and text == "content is required; unknown option 'nonsense'; it takes content, category, camera."  # the one line every door gives


async def test_views_and_resources_mask_credentials_and_show_events(runtime: Runtime) -> None:
    runtime.router.record(Alert("dock", "line_crossed", "line crossed (in +1; totals in 4 / out 0)",
                                {"count_in": 4, "count_out": 0}, pipeline_id="p1"))
    async with create_connected_server_and_client_session(McpAdapter(runtime).server) as session:
        cams, _, _ = decoded(await session.call_tool("list_cameras", {}))
        assert "dock: rtsp://admin:***@10.0.0.5/s1" in cams and "hunter2" not in cams
        uris = {str(r.uri) for r in (await session.list_resources()).resources}
        assert {"vision-agent://cameras", "vision-agent://rules", "vision-agent://watches", "vision-agent://status",
                "vision-agent://events"} == uris
        events = (await session.read_resource(AnyUrl("vision-agent://events"))).contents[0]
        assert "dock: line_crossed 1; crossings in 4 / out 0" in getattr(events, "text", "")
        rules = (await session.read_resource(AnyUrl("vision-agent://rules"))).contents[0]
        assert "*dock*" in getattr(rules, "text", "")  # the `/vision rules` listing, one implementation
        with pytest.raises(Exception, match="no resource"):
            await session.read_resource(AnyUrl("vision-agent://secrets"))


async def test_run_inference_hands_its_boxes_on_as_structured_content(base_env: dict[str, str], workspace_dir: Path) -> None:
    """The boxes REST answers are MCP's too: a client reads them without parsing the summary."""
    from PIL import Image

    from bot.backends.provider import BackendProvider
    from tests.tools.fake_backend import FakeBackend, result

    Image.new("RGB", (32, 24), (9, 9, 9)).save(workspace_dir / "yard.png")
    rt = Runtime(load_settings(base_env), background=False)
    rt.backend = BackendProvider.of(FakeBackend(single=result({"person": 2}, frame_id=None)))
    async with rt, create_connected_server_and_client_session(McpAdapter(rt, read_only=True).server) as session:
        out = await session.call_tool("run_inference", {"image": "yard.png", "model_id": "builtin/people"})
    text, images, err = decoded(out)
    assert not err and "2 detections: 2 person" in text and images, text
    assert out.structuredContent is not None and out.structuredContent["counts"] == {"person": 2}
    assert [d["xyxy"] for d in out.structuredContent["detections"]] == [[0.0, 0.0, 5.0, 5.0], [10.0, 0.0, 15.0, 5.0]]


async def test_get_events_pages_after_an_id_with_a_next_cursor(runtime: Runtime) -> None:
    """An MCP client pages the event log as the REST API does: `after` the last id seen, a `next` to go on with;
    events that arrive between pages are in the next one, none twice."""
    import re

    for i in range(4):
        runtime.router.record(Alert("dock", "line_crossed", f"crossing {i}"), "cooldown")
    async with create_connected_server_and_client_session(McpAdapter(runtime, read_only=True).server) as session:
        seen: list[str] = []
        after = "0"
        for page in range(4):
            text, _, err = decoded(await session.call_tool("get_events", {"after": after, "limit": 3}))
            assert not err, text
            seen += re.findall(r"^- #(\d+) .*dock line_crossed: (crossing \d+)", text, re.M)
            after = re.search(r"^next: after=(\d+)", text, re.M).group(1)  # type: ignore[union-attr]
            if page == 0:  # a pipeline goes on counting meanwhile
                runtime.router.record(Alert("dock", "line_crossed", "crossing 4"), "cooldown")
        last, _, _ = decoded(await session.call_tool("get_events", {"after": after}))
        bad, _, bad_err = decoded(await session.call_tool("get_events", {"after": "x1"}))
    assert [t for _, t in seen] == [f"crossing {i}" for i in range(5)]
    assert [int(i) for i, _ in seen] == sorted({int(i) for i, _ in seen})  # in id order, none twice
    assert "none more yet" in last and f"next: after={after}" in last
    assert bad_err and "after" in bad  # a malformed cursor is named
