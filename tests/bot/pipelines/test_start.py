"""One start for every surface: the agent's tool and `/vision start` refuse the same requests with the same line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.agent.tools import ToolContext
from bot.commands.dispatch import CommandContext, run_command
from bot.pipelines.manager import PipelineManager
from bot.pipelines.request import MAX_FPS, StartRequest, check, from_options
from bot.services import Services
from tests.tools.fake_backend import FakeBackend
from tools import build_registry

NEEDS_MODEL = "line= and zone= work with a model (model=), not a saved workflow"


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def services(settings, workspace_dir: Path, backend) -> Services:
    (workspace_dir / "CAMERAS.md").write_text("| Name | URL |\n|---|---|\n| dock | rtsp://10.0.0.5/s1 |\n")
    return Services(pipelines=PipelineManager(lambda: backend, workspace_dir / "active_state.json", settings))


async def _both(settings, services: Services, command: str, tool_input: dict[str, Any]) -> tuple[str, str]:
    """(the /vision reply, the tool's error) for one request said both ways; both must have refused it."""
    reply = await run_command(command, CommandContext(settings, services, user_id="cli", channel_id="cli", operator=True))
    result = await build_registry().execute("start_pipeline", {"pipeline_name": "w", **tool_input},
                                            ToolContext(settings=settings, services=services))
    assert not reply.ok and result.is_error, (reply.text, result.text)
    return reply.text, result.text


@pytest.mark.parametrize(
    ("command", "tool_input", "expected"),
    [
        ("start 0 fps=0", {"video_reference": "0", "model_id": "builtin/people", "max_fps": 0}, "fps must be above 0 and at most 120 (e.g. 5), not 0."),
        ("start 0 fps=-1", {"video_reference": "0", "model_id": "builtin/people", "max_fps": -1}, "fps must be above 0"),
        ("start 0 fps=500", {"video_reference": "0", "model_id": "builtin/people", "max_fps": 500}, f"at most {MAX_FPS:g}"),
        ("start 0 workflow=acme/count line=middle",
         {"video_reference": "0", "workspace_name": "acme", "workflow_id": "count", "line": "middle"}, NEEDS_MODEL),
        ("start 0 workflow=acme/count zone=0,0,9,0,9,9",
         {"video_reference": "0", "workspace_name": "acme", "workflow_id": "count", "zone": "0,0,9,0,9,9"}, NEEDS_MODEL),
        ("start 0 model=builtin/faces workflow=acme/count",
         {"video_reference": "0", "model_id": "builtin/faces", "workspace_name": "acme", "workflow_id": "count"},
         "either model= or workflow="),
        ("start 0 anchor=feet", {"video_reference": "0", "model_id": "builtin/people", "anchor": "feet"},
         "give it with line="),
        ("start 0 line=1,2,3", {"video_reference": "0", "model_id": "builtin/people", "line": "1,2,3"},
         "line= takes X1,Y1,X2,Y2"),
        ("start 0 confidence=1.5", {"video_reference": "0", "model_id": "builtin/people", "confidence": 1.5},
         "confidence must be at least 0 and at most 1 (e.g. 0.4), not 1.5"),
        ("start 0 confidence=-0.01", {"video_reference": "0", "model_id": "builtin/people", "confidence": -0.01},
         "confidence must be at least 0 and at most 1"),
        ("start 0 min_height=3", {"video_reference": "0", "model_id": "builtin/people", "min_height": 3},
         "min_height must be at least 8 and at most 2000 (e.g. 40), not 3"),
        ("start 0 min_height=2001", {"video_reference": "0", "model_id": "builtin/people", "min_height": 2001},
         "min_height must be at least 8 and at most 2000"),
        ("start 0 model=builtin/faces min_height=40",
         {"video_reference": "0", "model_id": "builtin/faces", "min_height": 40},
         "min_height= is for model=builtin/people (the smallest person to find); builtin/faces does not take it (it "
         "finds faces from about 24 px: for smaller ones use the main stream): drop min_height="),
        ("start 0 workflow=acme/count confidence=0.5",
         {"video_reference": "0", "workspace_name": "acme", "workflow_id": "count", "confidence": 0.5},
         "set a model's detector"),
    ],
)
async def test_the_tool_and_the_command_refuse_a_bad_start_the_same_way(settings, services, backend, command,
                                                                         tool_input, expected):
    said, told = await _both(settings, services, command, tool_input)
    assert expected in said and said == told
    assert [c for c in backend.calls if c[0] == "start_pipeline"] == []


async def test_a_bad_request_is_refused_before_its_source_is_opened(settings, services):
    said, told = await _both(settings, services, "start /etc/passwd line=1,2,3",
                             {"video_reference": "/etc/passwd", "model_id": "builtin/people", "line": "1,2,3"})
    assert "line= takes X1,Y1,X2,Y2" in said and said == told  # not the folder refusal: the source was never looked at


def test_every_door_defaults_the_model_and_a_request_built_without_one_is_refused():
    assert from_options("0", {}).model_id == "builtin/people"
    assert from_options("0", {"workflow": "acme/count"}).model_id is None
    with pytest.raises(ValueError, match="give a model"):
        check(StartRequest("0"), {})


async def test_the_tool_defaults_the_model_and_the_name_as_the_command_does(settings, services, backend):
    """MCP's start_pipeline used to require model_id and pipeline_name where `/vision start` defaulted them."""
    res = await build_registry().execute("start_pipeline", {"source": "dock"},
                                         ToolContext(settings=settings, services=services))
    assert not res.is_error, res.text
    assert res.text.startswith("Pipeline 'dock' started") and "builtin/people" in res.text


async def test_both_surfaces_start_the_same_pipeline_from_the_same_request(settings, services, backend):
    reply = await run_command("start dock fps=5 line=0,10,100,10", CommandContext(settings, services, "cli", "cli", operator=True))
    assert reply.ok, reply.text
    tool = await build_registry().execute(
        "start_pipeline", {"video_reference": "dock", "pipeline_name": "dock-2", "model_id": "builtin/people",
                           "max_fps": 5, "line": "0,10,100,10"}, ToolContext(settings=settings, services=services))
    assert not tool.is_error, tool.text
    first, second = (c[1] for c in backend.calls if c[0] == "start_pipeline")
    same = {k: v for k, v in first.items() if k != "pipeline_id"}
    assert same == {k: v for k, v in second.items() if k != "pipeline_id"} and same["max_fps"] == 5


async def test_the_tool_reads_an_empty_argument_as_not_given(settings, services, backend):
    res = await build_registry().execute(
        "start_pipeline", {"video_reference": "dock", "pipeline_name": "dock", "model_id": "builtin/people",
                           "workspace_name": "", "workflow_id": "", "line": "", "zone": " ", "anchor": ""},
        ToolContext(settings=settings, services=services))
    assert not res.is_error, res.text
    call = next(c[1] for c in backend.calls if c[0] == "start_pipeline")
    assert (call["workspace_name"], call["workflow_id"]) == (None, None)


@pytest.mark.parametrize("given", ["confidence=high", "confidence=nan", "min_height=40.5", "min_height=inf",
                                   "min_height=tall"])
async def test_a_detector_setting_that_is_no_number_gets_one_line(settings, services, backend, given):
    reply = await run_command(f"start dock {given}", CommandContext(settings, services, "cli", "cli", operator=True))
    key = given.split("=")[0]
    assert not reply.ok and reply.text.startswith(f"{key} ") and "\n" not in reply.text
    assert " (e.g. " in reply.text
    assert [c for c in backend.calls if c[0] == "start_pipeline"] == []


@pytest.mark.parametrize(("confidence", "min_height", "line"), [(0.35, 40, None), (0.0, 8, "middle"), (1.0, 2000, "0,5,9,5")])
async def test_detector_settings_reach_the_detector_from_the_command_and_the_tool(settings, services, backend,
                                                                                 confidence, min_height, line):
    extra = f" line={line}" if line and line != "middle" else ""
    reply = await run_command(f"start dock confidence={confidence} min_height={min_height}{extra}",
                              CommandContext(settings, services, "cli", "cli", operator=True))
    assert reply.ok, reply.text
    assert f"confidence {confidence:g}" in reply.text and f"from {min_height} px tall" in reply.text
    tool = await build_registry().execute(
        "start_pipeline", {"video_reference": "dock", "pipeline_name": "dock-2", "model_id": "builtin/people",
                           "confidence": confidence, "min_height": min_height, **({"line": line} if extra else {})},
        ToolContext(settings=settings, services=services))
    assert not tool.is_error, tool.text
    for call in (c[1] for c in backend.calls if c[0] == "start_pipeline"):
        detector = next(s for s in call["workflow_spec"]["steps"] if s["name"] == "detector")
        assert (detector["confidence"], detector["min_height"]) == (confidence, min_height)
        assert any(s["name"] == "line_counter" for s in call["workflow_spec"]["steps"]) == bool(extra)
