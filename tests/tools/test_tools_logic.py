"""The vision, pipeline and discovery tools through the real registry, over an in-memory backend."""

from __future__ import annotations

import base64
from dataclasses import replace
from pathlib import Path

import pytest

from bot.agent.tools import Attachment, ToolContext
from bot.backends.base import BackendError, InferenceResult
from bot.backends.provider import BackendProvider
from bot.pipelines.manager import PipelineManager
from bot.rights import OPERATOR
from bot.services import Services
from tests.tools.fake_backend import FakeBackend, result
from tools import build_registry

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def reg():
    return build_registry()


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend(single=result({"face": 2}, frame_id=None, frame=b"\xff\xd8\xffANNOTATED"))


@pytest.fixture
def ctx(settings, workspace_dir: Path, tmp_path: Path, backend) -> ToolContext:
    (workspace_dir / "CAMERAS.md").write_text("| Name | URL |\n|---|---|\n| dock | rtsp://admin:hunter2@10.0.0.5/s1 |\n")
    upload = tmp_path / "upload.png"
    upload.write_bytes(PNG)
    mgr = PipelineManager(lambda: backend, workspace_dir / "active_state.json", settings)
    return ToolContext(
        settings=settings, attachments=[Attachment(upload, "image/png", "F0UPLOAD1", "upload.png")],
        services=Services(backend=BackendProvider.of(backend), pipelines=mgr), requester=OPERATOR,
    )


async def test_run_inference_summarises_and_returns_the_annotated_frame(reg, ctx, backend):
    res = await reg.execute("run_inference", {"image": "F0UPLOAD1", "model_id": "builtin/faces"}, ctx)
    assert not res.is_error, res.text
    assert "2 detections: 2 face (0.90, 0.85)" in res.text
    assert res.image == res.frame == b"\xff\xd8\xffANNOTATED" and "2 face" in res.frame_caption
    call = backend.calls[-1][1]
    assert call["image"] == PNG and call["model_id"] == "builtin/faces"
    assert call["confidence"] is None  # the detector's own default, as a pipeline runs it
    quiet = await reg.execute("run_inference", {"image": "upload.png", "model_id": "x/y/1", "include_frame": False}, ctx)
    assert quiet.image is None and quiet.frame is None


async def test_run_inference_data_holds_its_boxes_masked_as_its_text_is(reg, ctx, backend):
    """The boxes go on to REST and MCP as data; a workflow's output that echoes a camera URL is masked there too."""
    backend.single = backend.single.with_values({"source": "rtsp://admin:hunter2@10.0.0.5/s1", "n": 2})
    res = await reg.execute("run_inference", {"image": "F0UPLOAD1", "model_id": "builtin/faces"}, ctx)
    assert res.data is not None and res.data["counts"] == {"face": 2} and res.data["image_size"] == [640, 480]
    assert [d["confidence"] for d in res.data["detections"]] == [0.9, 0.85]
    assert res.data["values"]["n"] == 2 and "hunter2" not in str(res.data) and "hunter2" not in res.text


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"image": "upload.png"}, "Say what to run"),
        ({"image": "/etc/hostname", "model_id": "builtin/faces"}, "VISION_AGENT_MEDIA_DIRS"),
        ({"image": "http://127.0.0.1:9/x.jpg", "model_id": "builtin/faces"}, "local/private"),
        ({"image": "upload.png", "workflow_id": "ppe"}, "needs workspace_name"),
        ({"image": "upload.png", "workflow_spec": {"steps": [], "dynamic_blocks_definitions": [{"manifest": {"type": "X"}}]}},
         "custom Python"),
    ],
)
async def test_run_inference_refusals_are_errors_the_model_can_act_on(reg, ctx, backend, args, expected):
    res = await reg.execute("run_inference", args, ctx)
    assert res.is_error and expected in res.text
    assert "Traceback" not in res.text and backend.calls == []


async def test_backend_failure_is_an_error_with_its_message(reg, ctx, backend):
    backend.fail_single = "model ws/p/1 needs a Roboflow API key: set ROBOFLOW_API_KEY"
    res = await reg.execute("run_inference", {"image": "upload.png", "model_id": "ws/p/1"}, ctx)
    assert res.is_error and res.text == backend.fail_single


async def test_zero_shot_uses_yolo_world_or_points_to_builtin_models(reg, ctx, backend):
    res = await reg.execute("detect_zero_shot", {"image": "upload.png", "class_names": ["hard hat"]}, ctx)
    assert not res.is_error and res.frame
    step = backend.calls[-1][1]["workflow_spec"]["steps"][0]
    assert step["type"] == "roboflow_core/yolo_world_model@v1" and step["class_names"] == ["hard hat"]
    backend.fail_single = "Could not connect to Roboflow API"
    res = await reg.execute("detect_zero_shot", {"image": "upload.png", "class_names": ["cat"]}, ctx)
    assert res.is_error and "builtin/faces" in res.text and "builtin/people" in res.text


async def test_ask_about_image_falls_back_to_claudes_own_vision(reg, ctx, backend):
    own = await reg.execute("ask_about_image", {"image": "upload.png", "question": "Is the door open?", "model": "claude"}, ctx)
    assert not own.is_error and own.image.startswith(b"\xff\xd8\xff")  # re-encoded as JPEG for the model
    assert own.text == "Answer the question from this image yourself: Is the door open?"
    assert backend.calls == []
    backend.fail_single = "Could not connect to Roboflow API. Check network"
    offline = await reg.execute("ask_about_image", {"image": "upload.png", "question": "What is this?"}, ctx)
    assert not offline.is_error and offline.image and "florence2 is not available (Could not connect" in offline.text
    backend.fail_single = None
    backend.single = InferenceResult(values={"answer": {"output": "two people near a truck"}})
    qwen = await reg.execute("ask_about_image", {"image": "upload.png", "question": "Who?", "model": "qwen2.5-vl"}, ctx)
    assert qwen.text == 'qwen2.5-vl answered:\n<data kind="answer about the image">\ntwo people near a truck\n</data>'
    assert qwen.image is None
    assert backend.calls[-1][1]["workflow_spec"]["steps"][0]["prompt"] == "Who?"
    bad = await reg.execute("ask_about_image", {"image": "upload.png", "question": "?", "model": "gpt"}, ctx)
    assert bad.is_error and "florence2" in bad.text


async def test_pipeline_tools_by_name_and_id_never_show_the_password(reg, ctx, backend):
    started = await reg.execute("start_pipeline", {"video_reference": "dock", "pipeline_name": "dock",
                                                   "model_id": "builtin/people", "max_fps": 5}, ctx)
    assert not started.is_error, started.text
    assert "hunter2" not in started.text and "10.0.0.5" not in started.text and "at up to 5 fps" in started.text
    assert 'Processing camera "dock"' in started.text  # the camera by name, never its URL
    pid = ctx.services.pipelines.resolve("dock").pipeline_id
    assert pid in started.text
    for i in range(3):
        backend.emit(pid, result({"person": i + 1}, frame_id=i, count_in=i))
    res = await reg.execute("get_pipeline_results", {"pipeline_id": "dock", "max_results": 5, "include_frame": True}, ctx)
    assert "3 frames #0–#2" in res.text and "person max 3 mean 2.0" in res.text and "count_in=2" in res.text
    assert res.frame and res.image == res.frame and "frame #2" in res.frame_caption
    again = await reg.execute("get_pipeline_results", {"pipeline_id": pid}, ctx)
    assert "No new results" in again.text and again.frame is None
    listing = await reg.execute("list_pipelines", {}, ctx)
    assert f"dock (id {pid}): running, 3 frames" in listing.text and "hunter2" not in listing.text
    assert "paused" in (await reg.execute("pause_pipeline", {"pipeline_id": "dock"}, ctx)).text
    assert "running" in (await reg.execute("resume_pipeline", {"pipeline_id": pid}, ctx)).text
    assert "stopped" in (await reg.execute("stop_pipeline", {"pipeline_id": "DOCK"}, ctx)).text
    missing = await reg.execute("stop_pipeline", {"pipeline_id": "garage"}, ctx)
    assert missing.is_error and "garage" in missing.text and pid in missing.text


async def test_start_pipeline_errors(reg, ctx):
    bad_spec = await reg.execute("start_pipeline", {"video_reference": "0", "pipeline_name": "w",
                                                    "workflow_spec": {"version": "1.0", "steps": []}}, ctx)
    assert bad_spec.is_error and "no steps" in bad_spec.text
    no_model = await reg.execute("start_pipeline", {"video_reference": 0, "pipeline_name": "w0"}, ctx)
    assert not no_model.is_error and "builtin/people" in no_model.text  # the default, as `/vision start` has it
    (Path(ctx.settings.workspace) / "x.broken").write_bytes(b"\x00")
    broken = await reg.execute("start_pipeline", {"video_reference": "x.broken", "pipeline_name": "w",
                                                  "model_id": "builtin/faces"}, ctx)
    assert broken.is_error and "could not start" in broken.text and "cannot read frames" in broken.text
    outside = await reg.execute("start_pipeline", {"video_reference": "/etc/hosts", "pipeline_name": "w",
                                                   "model_id": "builtin/faces"}, ctx)
    assert outside.is_error and "VISION_AGENT_MEDIA_DIRS" in outside.text
    webcam = await reg.execute("start_pipeline", {"video_reference": 0, "pipeline_name": "w", "model_id": "builtin/faces"}, ctx)
    assert not webcam.is_error and ctx.services.pipelines.config("w").video_reference == "0"


async def test_tools_without_services_say_so(reg, settings):
    bare = ToolContext(settings=settings)
    res = await reg.execute("list_pipelines", {}, bare)
    assert res.is_error and "pipelines is not available" in res.text
    res = await reg.execute("list_workflow_blocks", {}, bare)
    assert res.is_error and "backend is not available" in res.text


def _block(ident: str, block_type: str, section: str, desc: str, required=(), props=None, outputs=()):
    props = {"type": {"type": "string"}, "name": {"type": "string"}, **(props or {})}
    return {
        "manifest_type_identifier": ident, "human_friendly_block_name": ident.split("/")[-1],
        "manifest_type_identifier_aliases": [],
        "block_schema": {"block_type": block_type, "short_description": desc, "ui_manifest": {"section": section},
                         "properties": props, "required": ["type", "name", *required]},
        "outputs_manifest": [{"name": n, "kind": [{"name": k}]} for n, k in outputs],
    }


BLOCKS = [
    _block("roboflow_core/line_counter@v1", "analytics", "video", "Count detections passing a line (old)."),
    _block("roboflow_core/line_counter@v2", "analytics", "video", "Count detections passing a line.",
           required=("image", "detections", "line_segment"),
           props={"image": {"anyOf": [{"kind": [{"name": "image"}], "type": "string", "reference": True}]},
                  "detections": {"anyOf": [{"kind": [{"name": "object_detection_prediction"}], "type": "string"}]},
                  "line_segment": {"type": "array", "examples": [[[0, 100], [500, 100]]], "description": "Two points."},
                  "triggering_anchor": {"type": "string", "default": "CENTER"}},
           outputs=(("count_in", "integer"), ("count_out", "integer"))),
    _block("roboflow_core/byte_tracker@v3", "transformation", "video", "Track objects across frames."),
    _block("roboflow_core/bounding_box_visualization@v1", "visualization", "visualization", "Draw boxes."),
    _block("roboflow_core/image_blur@v1", "classical_computer_vision", "classical_cv", "Blur an image."),
    _block("roboflow_core/webhook_sink@v1", "sink", "notifications", "Send a webhook."),
]


async def test_list_workflow_blocks_by_category_and_overview(reg, ctx, backend):
    backend.blocks = BLOCKS
    analytics = await reg.execute("list_workflow_blocks", {"category": "analytics"}, ctx)
    assert analytics.text.splitlines() == [
        "## analytics: 2 block families (newest version shown)",
        "- roboflow_core/byte_tracker@v3: Track objects across frames.",
        "- roboflow_core/line_counter@v2 (also v1): Count detections passing a line.",
    ]
    tracking = await reg.execute("list_workflow_blocks", {"category": "tracking"}, ctx)
    assert "byte_tracker@v3" in tracking.text and "line_counter" not in tracking.text
    cv = await reg.execute("list_workflow_blocks", {"category": "classical-cv"}, ctx)
    assert "image_blur@v1" in cv.text
    overview = await reg.execute("list_workflow_blocks", {}, ctx)
    assert "## visualization (1)" in overview.text
    assert "sink" not in overview.text  # the webhook sink is refused here, so it is not offered
    bad = await reg.execute("list_workflow_blocks", {"category": "magic"}, ctx)
    assert bad.is_error and "tracking" in bad.text


async def test_list_is_capped_for_a_big_catalogue(reg, ctx, backend):
    backend.blocks = [_block(f"roboflow_core/model_{i}@v1", "model", "model", "A model block " + "x" * 80) for i in range(300)]
    res = await reg.execute("list_workflow_blocks", {"category": "model"}, ctx)
    assert len(res.text) < 6500 and "more; use get_block_details" in res.text


async def test_get_block_details_lists_inputs_outputs_and_an_example_step(reg, ctx, backend):
    backend.blocks = BLOCKS
    res = await reg.execute("get_block_details", {"block_type": "roboflow_core/line_counter@v2"}, ctx)
    lines = res.text.splitlines()
    assert "- line_segment (required) [array]: Two points." in lines
    anchor = next(line for line in lines if line.startswith("- triggering_anchor"))
    assert anchor.startswith('- triggering_anchor, default "CENTER" [string]: Note: Unset means all four box corners')
    assert "Outputs: count_in [integer]; count_out [integer]" in lines
    assert lines[-1] == ('Example step: {"type": "roboflow_core/line_counter@v2", "name": "step_1", "image": '
                         '"$inputs.image", "detections": "$steps.<model_step>.predictions", '
                         '"line_segment": [[0, 100], [500, 100]]}')
    missing = await reg.execute("get_block_details", {"block_type": "roboflow_core/line_countr@v2"}, ctx)
    assert missing.is_error and "Did you mean: roboflow_core/line_counter@v2" in missing.text


def test_descriptions_end_on_whole_sentences_within_their_budget():
    from tools.block_catalog import INPUT_CHARS, clip_sentences

    text = "First sentence is long enough. " * 3 + "Second part (with a note). " * 20
    clipped = clip_sentences(text, INPUT_CHARS)
    assert len(clipped) <= INPUT_CHARS and clipped.endswith(".") and clipped.startswith("First sentence")
    one = "A single sentence without a stop that runs on " * 10
    assert clip_sentences(one, 40) == " ".join(one.split())  # never cut inside the first sentence


async def test_refused_blocks_are_not_offered_until_an_operator_enables_them(reg, ctx, backend):
    backend.blocks = BLOCKS
    hook = await reg.execute("get_block_details", {"block_type": "roboflow_core/webhook_sink@v1"}, ctx)
    assert hook.is_error and "refused" in hook.text and "allowed_extra_blocks: [roboflow_core/webhook_sink@v1]" in hook.text
    inference = ctx.settings.inference.model_copy(update={"allowed_extra_blocks": ["roboflow_core/webhook_sink@v1"]})
    ctx = replace(ctx, settings=ctx.settings.model_copy(update={"inference": inference}))
    assert "webhook_sink@v1" in (await reg.execute("list_workflow_blocks", {"category": "sink"}, ctx)).text
    assert not (await reg.execute("get_block_details", {"block_type": "roboflow_core/webhook_sink@v1"}, ctx)).is_error


async def test_backend_errors_in_discovery_are_errors(reg, ctx, backend):
    async def broken():
        raise BackendError("inference server at http://127.0.0.1:9001 is not reachable: start it")

    backend.describe_blocks = broken
    res = await reg.execute("list_workflow_blocks", {}, ctx)
    assert res.is_error and "not reachable" in res.text


async def test_stop_pipeline_takes_all(reg, ctx, backend):
    for name in ("dock", "yard"):
        res = await reg.execute("start_pipeline", {"video_reference": "0", "pipeline_name": name,
                                                   "model_id": "builtin/people"}, ctx)
        assert not res.is_error, res.text
    assert "paused" in (await reg.execute("pause_pipeline", {"pipeline_id": "all"}, ctx)).text
    stopped = await reg.execute("stop_pipeline", {"pipeline_id": "All"}, ctx)
    assert not stopped.is_error, stopped.text
    assert [line.split(" (")[0] for line in stopped.text.splitlines()] == ["dock", "yard"]
    assert {h.status for h in ctx.services.pipelines.snapshot()} == {"stopped"}
    again = await reg.execute("stop_pipeline", {"pipeline_id": "all"}, ctx)
    assert not again.is_error and again.text == "No pipelines to stop."


async def test_start_pipeline_with_a_zone_composes_the_dwell_workflow(reg, ctx, backend):
    res = await reg.execute("start_pipeline", {"video_reference": "0", "pipeline_name": "yard", "model_id": "builtin/people",
                                               "zone": "0,0,200,0,200,100"}, ctx)
    assert not res.is_error, res.text
    assert "timing how long objects stay in a 3-point zone" in res.text
    step = next(s for s in backend.calls[-1][1]["workflow_spec"]["steps"] if s["name"] == "zone")
    assert step["type"] == "roboflow_core/time_in_zone@v3" and step["zone"] == [[0, 0], [200, 0], [200, 100]]
    bad = await reg.execute("start_pipeline", {"video_reference": "0", "pipeline_name": "w", "model_id": "builtin/people",
                                               "zone": "0,0,1"}, ctx)
    assert bad.is_error and "zone= takes a polygon" in bad.text
