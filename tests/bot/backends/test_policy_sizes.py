"""Block parameters that size images are held under media.max_pixels before the engine allocates anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.backends.base import BackendError, WorkflowRef
from bot.backends.policy.sizes import check_sizes

pytestmark = pytest.mark.slow
MP = 1_000_000


def _spec(*steps: dict, inputs: tuple[dict, ...] = ()) -> dict:
    return {
        "version": "1.0",
        "inputs": [{"type": "WorkflowImage", "name": "image"}, *inputs],
        "steps": list(steps),
        "outputs": [{"type": "JsonField", "name": "out", "selector": f"$steps.{steps[-1]['name']}.*"}],
    }


def resize(width: object, height: object, name: str = "grow") -> dict:
    return {"type": "roboflow_core/image_preprocessing@v1", "name": name, "image": "$inputs.image",
            "task_type": "resize", "width": width, "height": height}


def slicer(size: int, overlap: float) -> dict:
    return {"type": "roboflow_core/image_slicer@v2", "name": "tiles", "image": "$inputs.image", "slice_width": size,
            "slice_height": size, "overlap_ratio_width": overlap, "overlap_ratio_height": overlap}


def peak_rss_reset() -> int | None:
    """Reset this process's peak RSS (Linux clear_refs 5) and return the current one, in bytes."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return None
    return _status("VmRSS")


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(key)


@pytest.mark.parametrize("spec, words", [
    (_spec(resize(9000, 9000)), ["'grow'", "9000x9000", "81 MP", "the limit is 40 MP", "smaller size"]),
    (_spec(slicer(48, 0.75)), ["'tiles'", "tiles of 48x48", "smaller size"]),
    (_spec({"type": "roboflow_core/perspective_correction@v1", "name": "flat", "images": "$inputs.image",
            "predictions": "$inputs.image", "perspective_polygons": [[[0, 0], [1, 0], [1, 1], [0, 1]]],
            "transformed_rect_width": 20000, "transformed_rect_height": 3000}), ["'flat'", "20000x3000"]),
    (_spec({"type": "roboflow_core/crop_visualization@v1", "name": "zoom", "image": "$inputs.image",
            "predictions": "$inputs.image", "scale_factor": 8}), ["'zoom'", "scaled 8x"]),
    (_spec({"type": "roboflow_core/frame_delay@v1", "name": "late", "image": "$inputs.image", "offset": 5000},),
     ["'late'", "5000 frames held"]),
    (_spec({"type": "roboflow_core/morphological_transformation@v2", "name": "close", "image": "$inputs.image",
            "kernel_size": 70000}), ["'close'", "70000x70000 kernel"]),
    (_spec({"type": "roboflow_core/qr_code_generator@v1", "name": "qr", "text": "hi", "border": 400000}),
     ["'qr'", "QR code image"]),
])
def test_sizing_parameters_over_the_limit_are_refused_with_one_line_naming_the_step(spec, words):
    problems = check_sizes(spec, 40 * MP)
    assert len(problems) == 1
    assert all(w in problems[0] for w in words), problems[0]


@pytest.mark.parametrize("spec", [
    _spec(resize(1920, 1080)), _spec(slicer(640, 0.2)), _spec(slicer(320, 0.5)),
    _spec({"type": "roboflow_core/crop_visualization@v1", "name": "zoom", "image": "$inputs.image",
           "predictions": "$inputs.image"}),  # default scale 2.0
    _spec({"type": "roboflow_core/frame_delay@v1", "name": "late", "image": "$inputs.image", "offset": 10}),
])
def test_ordinary_sizes_pass(spec):
    assert check_sizes(spec, 40 * MP) == []


def test_the_limit_follows_the_setting():
    assert check_sizes(_spec(resize(3000, 3000)), 40 * MP) == []
    assert "the limit is 5.0 MP" in check_sizes(_spec(resize(3000, 3000)), 5 * MP)[0]


def test_a_size_from_an_input_is_checked_with_the_runs_value_and_one_from_another_step_is_refused():
    spec = _spec(resize("$inputs.w", "$inputs.h"), inputs=(
        {"type": "WorkflowParameter", "name": "w", "default_value": 640},
        {"type": "WorkflowParameter", "name": "h", "default_value": 640}))
    assert check_sizes(spec, 40 * MP) == []
    assert "12000x12000" in check_sizes(spec, 40 * MP, {"w": 12000, "h": 12000})[0]
    chained = _spec({"type": "roboflow_core/expression@v1", "name": "calc"}, resize("$steps.calc.output", 10))
    assert "from another step" in check_sizes(chained, 40 * MP)[0]


def test_an_inner_workflow_is_checked_too():
    inner = {"type": "roboflow_core/inner_workflow@v1", "name": "child", "execution_mode": "embedded",
             "workflow_definition": _spec(resize(7000, 7000, name="deep"))}
    problems = check_sizes(_spec(inner), 40 * MP)
    assert len(problems) == 1 and "'child/deep'" in problems[0]


async def test_the_real_engine_refuses_before_memory_grows(direct_backend, astronaut_jpeg, face_video):
    await direct_backend.run_single(astronaut_jpeg, workflow_spec=_spec(resize(800, 600)))  # warm: a size that runs
    before = peak_rss_reset()
    for spec, parameters in [
        (_spec(resize(9000, 9000)), None),
        (_spec(slicer(32, 0.5)), None),
        (_spec(resize("$inputs.w", 8000), inputs=({"type": "WorkflowParameter", "name": "w", "default_value": 8},)),
         {"w": 8000}),
    ]:
        with pytest.raises(BackendError, match="media.max_pixels") as err:
            await direct_backend.run_single(astronaut_jpeg, workflow_spec=spec, parameters=parameters)
        assert "\n" not in str(err.value)
        with pytest.raises(BackendError, match="media.max_pixels"):
            await direct_backend.start_pipeline("big", "door", str(face_video), WorkflowRef(workflow_spec=spec),
                                                parameters=parameters)
    problems = await direct_backend.validate_workflow(_spec(resize(9000, 9000)))
    assert len(problems) == 1 and "9000x9000" in problems[0]
    if before is not None:  # one 9000x9000 RGB frame alone is 243 MB: a generous bound far below it
        assert _status("VmHWM") - before < 100 * MP
    assert "big" not in [h.pipeline_id for h in await direct_backend.list_pipelines()]


def blur(kernel: object, kind: str = "bilateral") -> dict:
    return {"type": "roboflow_core/image_blur@v1", "name": "soften", "image": "$inputs.image", "blur_type": kind,
            "kernel_size": kernel}


def test_a_blur_kernel_is_bounded_by_its_work_not_its_pixels():
    """A 2001-wide bilateral kernel is 4 MP, far under max_pixels, yet it filtered one 640x480 image for minutes
    on a thread nothing can stop: the kernel's side is bounded, however it is written."""
    for kernel in (2001, "2001", 2001.0, 33):
        [problem] = check_sizes(_spec(blur(kernel)), 40 * MP)
        assert "'soften'" in problem and "at most 31" in problem and "smaller" in problem, problem
    spec = _spec(blur("$inputs.k", "gaussian"), inputs=({"type": "WorkflowParameter", "name": "k", "default_value": 5},))
    assert check_sizes(spec, 40 * MP) == [] and check_sizes(_spec(blur(31)), 40 * MP) == []
    assert "2001x2001" in check_sizes(spec, 40 * MP, {"k": 2001})[0]


async def test_the_real_engine_refuses_a_huge_blur_before_it_runs(direct_backend, astronaut_jpeg):
    with pytest.raises(BackendError, match="at most 31") as err:
        await direct_backend.run_single(astronaut_jpeg, workflow_spec=_spec(blur(2001)))
    assert "\n" not in str(err.value)


def test_a_resize_given_one_side_is_refused_since_the_other_follows_the_images_shape():
    """Given only a width, inference keeps the aspect ratio: from a 200x200000 image (40 MP, a small PNG) a width
    of 2000 is 2000x2000000. The checker took the missing side as 640 and let it through."""
    one_side = {"type": "roboflow_core/image_preprocessing@v1", "name": "wide", "image": "$inputs.image",
                "task_type": "resize", "width": 2000}
    [problem] = check_sizes(_spec(one_side), 40 * MP)
    assert "'wide'" in problem and "give both width and height" in problem
    assert check_sizes(_spec({**one_side, "width": None, "height": 300}), 40 * MP)
    rotate = {"type": "roboflow_core/image_preprocessing@v1", "name": "turn", "image": "$inputs.image",
              "task_type": "rotate", "rotation_degrees": 90}
    assert check_sizes(_spec(rotate), 40 * MP) == [] and check_sizes(_spec(resize(640, 480)), 40 * MP) == []


async def test_the_real_engine_refuses_a_one_sided_resize(direct_backend, astronaut_jpeg):
    step = {"type": "roboflow_core/image_preprocessing@v1", "name": "wide", "image": "$inputs.image",
            "task_type": "resize", "width": 20000}
    with pytest.raises(BackendError, match="give both width and height"):
        await direct_backend.run_single(astronaut_jpeg, workflow_spec=_spec(step))


def test_a_rich_labels_font_size_is_a_sized_image_too():
    """PIL renders each label as a mask of the font's size: a font of 8000 grew the bot by 146 MB on one image."""
    label = {"type": "roboflow_core/rich_label_visualization@v1", "name": "big_text", "image": "$inputs.image",
             "predictions": "$inputs.image", "text_size_mode": "Manual", "font_size": 8000}
    [problem] = check_sizes(_spec(label), 40 * MP)
    assert "'big_text'" in problem and "8000 pt font" in problem and "media.max_pixels" in problem
    assert check_sizes(_spec({**label, "font_size": 48}), 40 * MP) == []
