"""The /vision grammar shared by the CLI and Slack: every command, garbage, and the control allowlist."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.backends.counting import LINE_COUNTER_BLOCK
from bot.commands.dispatch import USAGE, CommandContext, run_command
from bot.config import load_settings
from bot.monitoring.alerts import AlertRouter
from bot.pipelines.manager import PipelineManager
from bot.services import Services
from tests.tools.fake_backend import FakeBackend, result

CAMERAS = "| Name | URL | Location |\n|---|---|---|\n| dock | rtsp://admin:hunter2@10.0.0.5/s1 | Loading dock |\n"


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def ctx(settings, workspace_dir: Path, backend) -> CommandContext:
    (workspace_dir / "CAMERAS.md").write_text(CAMERAS)
    (workspace_dir / "corrupt.broken").write_bytes(b"\x00")
    router = AlertRouter(workspace_dir / ".state" / "alerts.json", default_channel="#general")
    mgr = PipelineManager(lambda: backend, workspace_dir / "active_state.json", settings)
    return CommandContext(settings, Services(pipelines=mgr, router=router), user_id="U1", channel_id="C1")


@pytest.mark.parametrize("text", ["", "help", "/vision", "/vision help"])
async def test_help(ctx, text):
    reply = await run_command(text, ctx)
    assert reply.ok and reply.text == USAGE


@pytest.mark.parametrize("text", ["/vision dance", "launch the missiles", 'start "unclosed', "!!!"])
async def test_garbage_gets_usage_never_a_crash(ctx, text):
    reply = await run_command(text, ctx)
    assert not reply.ok and USAGE in reply.text


async def test_start_a_camera_by_name_with_defaults_and_no_password_shown(ctx, backend):
    reply = await run_command("/vision start dock", ctx)
    assert reply.ok, reply.text
    assert "*dock*" in reply.text and "builtin/people" in reply.text
    assert "hunter2" not in reply.text and "10.0.0.5" not in reply.text and 'on camera "dock"' in reply.text
    call = backend.calls[-1][1]
    assert call["video_reference"] == "rtsp://admin:hunter2@10.0.0.5/s1"
    assert call["workflow_spec"]["steps"][0]["type"] == "vision_agent/hog_people_detector@v1"


async def test_start_options_model_fps_name_and_workflow(ctx, backend):
    reply = await run_command("start 0 model=builtin/faces fps=2.5 name=desk", ctx)
    assert reply.ok and "*desk*" in reply.text and "at up to 2.5 fps" in reply.text  # a camera: a cap
    assert backend.calls[-1][1]["max_fps"] == 2.5
    reply = await run_command("start rtsp://93.184.215.14/live workflow=acme/ppe-check", ctx)
    assert reply.ok, reply.text
    call = backend.calls[-1][1]
    assert (call["workspace_name"], call["workflow_id"], call["workflow_spec"]) == ("acme", "ppe-check", None)
    assert "*93.184.215.14*" in reply.text  # default name from the host


async def test_the_crossing_point_of_a_box_can_be_chosen_and_defaults_by_detector(ctx, backend):
    await run_command("start 0 name=hall line=0,100,640,100", ctx)  # people: their feet cross
    assert _line_step(backend.calls[-1][1]["workflow_spec"])["triggering_anchor"] == "BOTTOM_CENTER"
    reply = await run_command("start 1 name=cars model=builtin/faces line=0,100,640,100 anchor=top", ctx)
    assert reply.ok and "by each box's top center" in reply.text, reply.text
    assert _line_step(backend.calls[-1][1]["workflow_spec"])["triggering_anchor"] == "TOP_CENTER"
    await run_command("start 2 name=desk line=0,100,640,100 anchor=CENTER", ctx)
    assert _line_step(backend.calls[-1][1]["workflow_spec"])["triggering_anchor"] == "CENTER"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("start 0 model=builtin/faces workflow=a/b", "either model= or workflow="),
        ("start 0 fps=fast", "fps takes a number (e.g. 5), not 'fast'"),
        ("start 0 fps=-1", "fps must be above 0 and at most 120 (e.g. 5), not -1"),
        ("start 0 colour=red", "unknown option colour="),
        ("start", "Usage: `/vision start"),
        ("start 0 workflow=nope", "WORKSPACE/WORKFLOW_ID"),
        ("start /etc/passwd", "VISION_AGENT_MEDIA_DIRS"),
        ("start 0 model=builtin/unicorns", "unknown builtin model"),
        ("start corrupt.broken", "could not start on"),
    ],
)
async def test_start_mistakes_get_one_line_fixes(ctx, text, expected):
    reply = await run_command(text, ctx)
    assert not reply.ok and expected in reply.text


async def test_list_stop_pause_resume_by_name_id_and_all(ctx):
    await run_command("start dock", ctx)
    await run_command("start 0 name=desk", ctx)
    listing = await run_command("list", ctx)
    assert "*dock*" in listing.text and "*desk*" in listing.text and "running" in listing.text
    assert (await run_command("pause dock", ctx)).text.startswith("Paused *dock*")
    pid = ctx.manager().resolve("desk").pipeline_id
    assert "Resumed *dock*" in (await run_command("resume dock", ctx)).text
    assert "Stopped *desk*" in (await run_command(f"stop {pid}", ctx)).text
    reply = await run_command("stop all", ctx)
    assert "*dock*" in reply.text and "stopped" in reply.text
    assert (await run_command("stop all", ctx)).text == "No pipelines to stop."
    missing = await run_command("pause garage", ctx)
    assert not missing.ok and "garage" in missing.text and "dock" in missing.text


async def test_snapshot_posts_the_latest_frame_to_the_channel(ctx, backend):
    await run_command("start dock", ctx)
    early = await run_command("snapshot dock", ctx)
    assert not early.ok and "No frame yet" in early.text
    pid = ctx.manager().resolve("dock").pipeline_id
    backend.emit(pid, result({"person": 2}, frame_id=42, frame=b"\xff\xd8\xffJPEG"))
    reply = await run_command("snapshot dock", ctx)
    assert reply.ok and reply.frame == b"\xff\xd8\xffJPEG" and reply.post_channel == "C1"
    assert "frame #42" in reply.frame_caption and "2 person" in reply.frame_caption


async def test_route_and_status(ctx):
    await run_command("start 0 name=gate", ctx)  # U1's own pipeline: theirs to route
    member = await run_command("route <#C999|alerts> camera=gate", ctx)  # U1 asks in C1: alerts go where they read
    assert not member.ok and "you can route alerts to this channel" in member.text
    assert (await run_command("route <#C1|here> camera=gate", ctx)).ok
    theirs = await run_command("route <#C1|here> camera=dock", ctx)  # the operator's camera: where its alerts go
    assert not theirs.ok and "dock's alerts go where its owner or the operator sends them" in theirs.text
    operator = CommandContext(ctx.settings, ctx.services, user_id="cli", channel_id="cli", operator=True)
    assert (await run_command("route <#C999|alerts> camera=dock", operator)).ok
    assert (await run_command("route #all-alerts", operator)).ok
    assert ctx.services.router.routes() == {"gate": "C1", "dock": "C999", "*": "#all-alerts"}
    taken = await run_command("route <#C1|here> camera=dock", ctx)  # the operator's route is theirs to change
    assert not taken.ok and "belongs to the operator" in taken.text
    await run_command("stop gate", ctx)
    ctx.services.router.mute("dock", 3600)
    await run_command("start dock", ctx)
    status = await run_command("status", ctx)
    assert "dock → C999" in status.text and "* → #all-alerts" in status.text
    assert "*Muted*: dock until" in status.text and "*dock*" in status.text


async def test_allowlist_limits_control_but_not_viewing(base_env, workspace_dir: Path, backend):
    settings = load_settings(base_env, slack={"allowed_users": ["U1"], "allowed_channels": ["C1"]})
    mgr = PipelineManager(lambda: backend, workspace_dir / "active_state.json", settings)
    router = AlertRouter(workspace_dir / "alerts.json")
    stranger = CommandContext(settings, Services(pipelines=mgr, router=router), user_id="U2", channel_id="C1")
    for text in ("start 0", "stop all", "pause x", "resume x", "route #x"):
        reply = await run_command(text, stranger)
        assert not reply.ok and "Only <@U1> may change pipelines, rules and schedules" in reply.text
    assert (await run_command("list", stranger)).ok and (await run_command("status", stranger)).ok
    wrong_channel = CommandContext(settings, Services(pipelines=mgr, router=router), user_id="U1", channel_id="C2")
    assert "can only be changed from <#C1>" in (await run_command("start 0", wrong_channel)).text
    allowed = CommandContext(settings, Services(pipelines=mgr, router=router), user_id="U1", channel_id="C1")
    assert (await run_command("start 0", allowed)).ok
    assert backend.calls and router.routes() == {}
    local = CommandContext(settings, Services(pipelines=mgr, router=router), user_id="cli", channel_id="cli",
                           operator=True)  # the REPL owner
    assert (await run_command("route #local", local)).ok
    named_cli = CommandContext(settings, Services(pipelines=mgr, router=router), user_id="cli", channel_id="cli")
    assert "Only <@U1> may change" in (await run_command("route #local", named_cli)).text  # a name grants nothing


async def test_backend_is_built_only_when_a_pipeline_command_needs_it(settings, workspace_dir: Path):
    made = []

    def factory() -> FakeBackend:
        made.append(FakeBackend())
        return made[-1]

    ctx = CommandContext(settings, Services(pipelines=PipelineManager(factory, workspace_dir / "active_state.json", settings)))
    await run_command("help", ctx)
    assert (await run_command("list", ctx)).text.startswith("No pipelines")
    assert made == []  # nothing ran yet: `inference` is not imported for help or an empty list
    assert (await run_command("start 0 model=builtin/faces", ctx)).ok
    assert len(made) == 1 and (await run_command("route #x", ctx)).text == "Alert routing is not available in this process."


def _line_step(spec: dict) -> dict:
    return next(s for s in spec["steps"] if s["type"] == LINE_COUNTER_BLOCK)


async def test_start_with_a_line_counts_crossings_through_the_model_workflow(ctx, backend):
    reply = await run_command("start 0 model=builtin/faces name=door line=320,0,320,480", ctx)
    assert reply.ok, reply.text
    assert "model `builtin/faces`" in reply.text and "line (320,0)→(320,480)" in reply.text
    spec = backend.calls[-1][1]["workflow_spec"]
    assert spec["steps"][0]["type"] == "vision_agent/haar_face_detector@v1"
    assert _line_step(spec)["line_segment"] == [[320, 0], [320, 480]]
    assert {"count_in", "count_out"} <= {o["name"] for o in spec["outputs"]}
    assert any(s["type"] == "roboflow_core/byte_tracker@v3" for s in spec["steps"])  # crossings need track ids
    assert ctx.manager().config("door").workflow_spec == spec  # a restart brings the counter back too
    await run_command("start 0 name=hall line=0,100,640,100", ctx)  # the default model gets the line as well
    spec = backend.calls[-1][1]["workflow_spec"]
    assert spec["steps"][0]["type"] == "vision_agent/hog_people_detector@v1"
    assert _line_step(spec)["line_segment"] == [[0, 100], [640, 100]]


async def test_line_middle_is_placed_from_the_frame_size(ctx, backend, workspace_dir: Path):
    from tests.fixtures.inference import make_video

    video = make_video(workspace_dir / "door.mp4", size=(320, 240), frames=2)
    reply = await run_command(f"start {video} line=middle", ctx)
    assert reply.ok, reply.text
    assert _line_step(backend.calls[-1][1]["workflow_spec"])["line_segment"] == [[160, 0], [160, 240]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("start 0 line=1,2,3", "line= takes X1,Y1,X2,Y2 in pixels"),
        ("start 0 line=a,b,c,d", "line= takes X1,Y1,X2,Y2 in pixels"),
        ("start 0 line=-5,0,5,0", "line= takes X1,Y1,X2,Y2 in pixels"),
        ("start 0 line=1,2,3,4,5", "line= takes X1,Y1,X2,Y2 in pixels"),
        ("start 0 line=5,5,5,5", "two different points"),
        ("start 0 workflow=a/b line=middle", "line= and zone= work with a model (model=), not a saved workflow"),
        ("start 0 workflow=a/b zone=0,0,9,0,9,9", "line= and zone= work with a model (model=), not a saved workflow"),
        ("start 0 zone=1,2,3,4", "zone= takes a polygon X1,Y1,X2,Y2,X3,Y3,... in pixels (at least 3 points"),
        ("start 0 zone=1,2,3,4,5", "an even count of numbers"),
        ("start 0 zone=5,5,5,5,6,6", "at least 3 different points"),
        ("start 0 zone=parking", "No zone named 'parking' in CAMERAS.md (zones: Bay, broken)"),
        ("start 0 zone=broken", "Zone 'broken' in CAMERAS.md has a bad polygon"),
        ("start corrupt.broken line=middle", "Could not read a frame to place line=middle"),
        ("start 0 line=0,100,640,100 anchor=elbow", "anchor=elbow is not a point of a box; use feet, centre or top"),
        ("start 0 anchor=feet", "anchor= says which point of a box counts as crossing a line: give it with line="),
    ],
)
async def test_bad_lines_get_one_line_fixes_and_start_nothing(ctx, backend, text, expected, workspace_dir: Path):
    (workspace_dir / "CAMERAS.md").write_text(ZONES_MD + "| broken | dock | 1,2,x |\n")
    reply = await run_command(text, ctx)
    assert not reply.ok and expected in reply.text and "\n" not in reply.text
    assert [c for c in backend.calls if c[0] == "start_pipeline"] == []


ZONES_MD = ("| Name | URL |\n|---|---|\n| dock | rtsp://10.0.0.5/s1 |\n\n"
            "| Zone | Camera | Polygon |\n|---|---|---|\n| Bay | dock | 100,300, 500,300, 500,470 |\n")


def _zone_step(spec: dict) -> dict:
    return next(s for s in spec["steps"] if s["type"] == "roboflow_core/time_in_zone@v3")


async def test_start_with_a_zone_times_objects_in_it_by_polygon_or_by_name(ctx, backend, workspace_dir: Path):
    (workspace_dir / "CAMERAS.md").write_text(ZONES_MD)
    reply = await run_command("start 0 name=yard zone=0,0,200,0,200,100,0,100", ctx)
    assert reply.ok, reply.text
    assert "timing how long objects stay in a 4-point zone" in reply.text
    spec = backend.calls[-1][1]["workflow_spec"]
    assert _zone_step(spec)["zone"] == [[0, 0], [200, 0], [200, 100], [0, 100]]
    assert _zone_step(spec)["detections"] == "$steps.tracker.tracked_detections"  # dwell needs track ids
    assert {"selector": "$steps.zone.timed_detections", "name": "predictions", "type": "JsonField"} in spec["outputs"]
    assert ctx.manager().config("yard").workflow_spec == spec  # a restart brings the zone back too

    reply = await run_command("start 0 name=dock-2 zone=bay line=0,400,640,400", ctx)  # a name from CAMERAS.md, any case
    assert reply.ok, reply.text
    spec = backend.calls[-1][1]["workflow_spec"]
    assert _zone_step(spec)["zone"] == [[100, 300], [500, 300], [500, 470]]
    assert _line_step(spec)["detections"] == "$steps.zone.timed_detections"


def test_usage_documents_line():
    assert "line=X1,Y1,X2,Y2[@WxH]|middle" in USAGE
