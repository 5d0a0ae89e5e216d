"""The exported script without running a pipeline: its options, the spec it runs, and what it says it needs."""

from __future__ import annotations

import importlib.util
import os
import types
from pathlib import Path

import pytest

from bot.agent.tools import ToolContext, ToolResult
from bot.commands.dispatch import run_command
from bot.config import Settings
from bot.llm.client import ToolCall
from bot.pipelines.analytics import compose
from bot.rights import OPERATOR, Requester
from tests.bot.recipes.helpers import Rig, rig
from tests.tools.fake_backend import FakeBackend

SESSION = "cli:x"
STREET = Path(__file__).parents[2] / "fixtures" / "data" / "vtest_street_60f.mp4"  # 384x288 frames


@pytest.fixture
def r(settings: Settings) -> Rig:
    return rig(settings, FakeBackend(), timeout=0.5)


def save(r: Rig, *sources: str, name: str = "door-count") -> None:
    steps = [(ToolCall(f"t{i}", "start_pipeline", {"video_reference": s, "pipeline_name": f"p{i}",
                                                   "model_id": "builtin/faces", "line": "middle", "max_fps": 5}),
              ToolResult(text="started")) for i, s in enumerate(sources)]
    r.recipes.record(SESSION, OPERATOR, steps, "ok")
    r.recipes.save(name, "count the door", SESSION, OPERATOR)


def load(path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("exported_recipe", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_export_embeds_the_spec_and_takes_parameters_as_options(r: Rig) -> None:
    (r.ws.root / "CAMERAS.md").write_text("| name | url |\n|---|---|\n| door | rtsp://admin:pw12345678@10.0.0.5/s |\n")
    save(r, "door")
    reply = await run_command("recipe export door-count", r.command(session=SESSION))
    assert reply.ok and reply.file_name == "door-count.py"
    body = reply.file.decode() if reply.file else ""
    assert "pw12345678" not in body and "10.0.0.5" not in body
    script = load(r.ws.exports_dir / "door-count.py")
    assert script.BUILTIN_MODEL == "builtin/faces" and script.DEFAULTS["fps"] == 5
    assert script.DEFAULTS["source"] is None  # a camera name means nothing outside the bot: --source is required
    with pytest.raises(SystemExit):
        script.options([])
    args = script.options(["--source", "v.mp4", "--line", "10,0,10,100", "--confidence", "0.4"])
    steps = {s["name"]: s for s in script.workflow(args)["steps"]}
    assert steps["line_counter"]["line_segment"] == [[10, 0], [10, 100]] == steps["line"]["line_segment"]
    assert steps["detector"]["confidence"] == 0.4 and steps["detector"]["type"] == "vision_agent/haar_face_detector@v1"


async def test_script_says_what_it_needs_for_builtin_detectors(r: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    save(r, str(r.ws.root / "door.mp4"))
    script = load(r.recipes.export("door-count"))
    script.PLUGIN = "no_such_package.blocks"  # as on a machine with only `inference` installed
    with pytest.raises(SystemExit, match="builtin/faces needs vision-agent's builtin/\\* OpenCV detectors"):
        script.load_plugin()
    monkeypatch.setenv("WORKFLOWS_PLUGINS", "")
    load(r.recipes.export("door-count")).load_plugin()
    assert os.environ["WORKFLOWS_PLUGINS"] == "bot.backends.builtin_blocks"


async def test_points_given_at_another_size_are_moved_onto_the_frames_as_the_bot_moved_them(r: Rig) -> None:
    line, zone = "768,0,768,1152@1536x1152", "0,0,768,0,768,576@1536x1152"  # read off a 4x larger main stream
    start = {"video_reference": str(STREET), "pipeline_name": "p", "model_id": "builtin/people", "line": line,
             "zone": zone, "max_fps": 5}
    r.recipes.record(SESSION, OPERATOR, [(ToolCall("t0", "start_pipeline", start), ToolResult(text="started"))], "ok")
    r.recipes.save("street", "count the street", SESSION, OPERATOR)
    script = load(r.recipes.export("street"))
    steps = {s["name"]: s for s in script.workflow(script.options([]))["steps"]}
    bot = await compose("builtin/people", str(STREET), line, zone, {})  # what /vision start and a replay run
    assert bot.line == [[192, 0], [192, 288]] and bot.zone == [[0, 0], [192, 0], [192, 144]]
    assert steps["line_counter"]["line_segment"] == bot.line == steps["line"]["line_segment"]
    assert steps["zone"]["zone"] == bot.zone == steps["zone_area"]["zone"]
    as_given = script.workflow(script.options(["--line", "10,0,10,100", "--zone", "0,0,9,0,9,9"]))
    assert {s["name"]: s for s in as_given["steps"]}["line_counter"]["line_segment"] == [[10, 0], [10, 100]]
    with pytest.raises(SystemExit, match="@WIDTHxHEIGHT names the frame size"):
        script.workflow(script.options(["--line", "10,0,10,100@big"]))


def test_a_recipe_starting_two_pipelines_is_not_exported(r: Rig) -> None:
    save(r, str(r.ws.root / "a.mp4"), str(r.ws.root / "b.mp4"), name="two")
    with pytest.raises(ValueError, match="starts 2 pipelines; an export runs exactly one"):
        r.recipes.export("two")



async def test_export_writes_a_file_so_the_allowlist_refuses_it_as_a_tool_and_a_command(settings: Settings) -> None:
    guarded = settings.model_copy(update={"slack": settings.slack.model_copy(update={"allowed_users": ["U1"]})})
    g = rig(guarded, FakeBackend(), timeout=0.5)
    save(g, str(g.ws.root / "door.mp4"))
    script = g.ws.exports_dir / "door-count.py"

    def asked_by(who: Requester) -> ToolContext:
        return ToolContext(settings=guarded, session_key="slack:T:C1:1.0", services=g.services, requester=who)

    refused = await g.tools.execute("export_script", {"name": "door-count"}, asked_by(Requester.slack("U2", "C1")))
    assert refused.is_error and "Only <@U1> may change recipes" in refused.text
    reply = await run_command("recipe export door-count", g.command("U2", "C1"))
    assert not reply.ok and "Only <@U1>" in reply.text and reply.file is None
    assert not script.exists()  # neither path wrote the file
    allowed = await g.tools.execute("export_script", {"name": "door-count"}, asked_by(Requester.slack("U1", "C1")))
    assert not allowed.is_error and script.is_file(), allowed.text


async def test_help_survives_a_percent_in_the_default_source(r: Rig, capsys: pytest.CaptureFixture[str]) -> None:
    video = r.ws.root / "media" / "lobby 100%_full.mp4"
    save(r, str(video), name="percent")
    reply = await run_command("recipe export percent", r.command(session=SESSION))
    assert reply.ok, reply.text
    script = load(r.ws.exports_dir / "percent.py")
    with pytest.raises(SystemExit) as done:
        script.options(["--help"])
    assert done.value.code == 0 and "100%_full.mp4" in capsys.readouterr().out


async def test_help_survives_a_description_that_names_prog_beside_a_percent(r: Rig,
                                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """argparse %-formats a description that holds '%(prog)': any other '%' in it (or '%(x)s') then broke --help."""
    r.recipes.record(SESSION, OPERATOR, [(ToolCall("t0", "start_pipeline", {
        "video_reference": str(r.ws.root / "door.mp4"), "pipeline_name": "p0", "model_id": "builtin/faces"}),
        ToolResult(text="started"))], "ok")
    description = "alert at 80% full; %(prog)s --fps 5; %(secret)s %d"
    r.recipes.save("busy", description, SESSION, OPERATOR)
    reply = await run_command("recipe export busy", r.command(session=SESSION))
    assert reply.ok, reply.text
    script = load(r.ws.exports_dir / "busy.py")
    with pytest.raises(SystemExit) as done:
        script.options(["--help"])
    assert done.value.code == 0 and description in " ".join(capsys.readouterr().out.split())
