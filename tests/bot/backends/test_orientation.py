"""A turned camera's setting: the orient step put first in any spec, its algebra, and what the drawing repeats."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from bot.backends.deferred import DRAW_PREFIX, split
from bot.backends.orientation import (
    FLIPS,
    INPUT_ONLY,
    ORIENT_BLOCK,
    ORIENTATION_OUTPUT,
    ROTATIONS,
    Orientation,
    orientation_of,
    oriented,
    turn_frame,
)
from bot.backends.workflows import describe_spec, detection_workflow

SETTINGS = [Orientation(r, f) for r, f in itertools.product(ROTATIONS, (None, *FLIPS))]


def _picture() -> np.ndarray:
    """A 5x3 picture whose every pixel differs: any turn or mirror of it is told apart."""
    return np.arange(5 * 3 * 3, dtype=np.uint8).reshape(3, 5, 3)


def test_the_eight_settings_give_the_eight_ways_a_picture_can_lie() -> None:
    seen = {turn_frame(_picture(), o).tobytes() for o in SETTINGS}
    assert len(seen) == 8  # rotate x flip covers every quarter turn and mirror once; flip=v is one of them too


@pytest.mark.parametrize("now", SETTINGS, ids=str)
@pytest.mark.parametrize("turn", [90, 180, 270])
def test_then_is_the_setting_that_turns_what_a_pipeline_sees_upright(now: Orientation, turn: int) -> None:
    """A pipeline with `now` still sees the picture turned: `now.then(turn)` turns the camera's frames upright."""
    camera = _picture()
    seen = turn_frame(camera, now)
    upright = turn_frame(seen, Orientation(turn))
    assert np.array_equal(turn_frame(camera, now.then(turn)), upright)


@pytest.mark.parametrize("o", SETTINGS, ids=str)
def test_a_quarter_turn_swaps_the_frame_size(o: Orientation) -> None:
    h, w = turn_frame(_picture(), o).shape[:2]
    assert o.size(5, 3) == (w, h)


@pytest.mark.parametrize("o", SETTINGS, ids=str)
def test_a_point_lands_where_its_pixel_does(o: Orientation) -> None:
    picture = _picture()
    turned = turn_frame(picture, o)
    for y, x in itertools.product(range(3), range(5)):
        tx, ty = o.point(x, y, 5, 3)
        assert np.array_equal(turned[int(ty), int(tx)], picture[y, x])


def test_an_oriented_spec_turns_the_frame_first_for_every_step_that_reads_pixels() -> None:
    spec = detection_workflow("builtin/people", line=[[10, 0], [10, 50]], zone=[[0, 0], [9, 0], [9, 9]])
    turned = oriented(spec, Orientation(90, "h"))
    first = turned["steps"][0]
    assert first == {"type": ORIENT_BLOCK, "name": "orient", "image": "$inputs.image", "rotate": 90, "flip": "h"}
    by_name = {s["name"]: s for s in turned["steps"]}
    assert by_name["detector"]["images"] == "$steps.orient.image"
    assert by_name["tracker"]["image"] == "$steps.orient.image"  # its frame size is the upright one
    assert by_name["sizes"]["image"] == by_name["zone_area"]["image"] == "$steps.orient.image"  # drawn upright
    for step in turned["steps"][1:]:  # fields that take only an input keep it: they read its video metadata
        for key, value in step.items():
            if value == "$inputs.image":
                assert (step["type"], key) in INPUT_ONLY, (step["type"], key)
    assert {"type": "JsonField", "name": ORIENTATION_OUTPUT, "selector": "$steps.orient.orientation"} in turned["outputs"]
    assert orientation_of(turned) == Orientation(90, "h") and orientation_of(spec) is None
    assert spec["steps"][0]["type"] != ORIENT_BLOCK  # the spec given is left as it was
    assert "frames turned 90° clockwise and mirrored left-right" in describe_spec(turned)


def test_no_setting_leaves_the_spec_as_it_is_and_names_never_collide() -> None:
    spec = detection_workflow("builtin/people")
    assert oriented(spec, Orientation()) is spec
    spec["steps"][0]["name"] = "orient"  # a hand-written spec may already have a step by that name
    turned = oriented(spec, Orientation(180))
    names = [s["name"] for s in turned["steps"]]
    assert len(names) == len(set(names)) and turned["steps"][0]["name"] == "orient_2"


def test_a_spec_with_another_image_input_name_is_turned_on_that_input() -> None:
    spec: dict[str, Any] = {
        "version": "1.0", "inputs": [{"type": "InferenceImage", "name": "frame"}],
        "steps": [{"type": "vision_agent/hog_people_detector@v1", "name": "p", "images": "$inputs.frame"}],
        "outputs": [{"type": "JsonField", "name": "predictions", "selector": "$steps.p.predictions"}],
    }
    turned = oriented(spec, Orientation(270))
    assert turned["steps"][0]["image"] == "$inputs.frame" and turned["steps"][1]["images"] == "$steps.orient.image"


def test_the_drawing_turns_its_frame_the_same_way_instead_of_taking_the_turned_frame_over() -> None:
    """Frames are drawn on demand (bot/backends/deferred.py): the drawing spec repeats the orient step."""
    turned = oriented(detection_workflow("builtin/people", line=[[10, 0], [10, 50]]), Orientation(90))
    parts = split(turned)
    assert parts.drawing is not None
    assert parts.drawing["steps"][0]["type"] == ORIENT_BLOCK
    assert any(s["type"] == ORIENT_BLOCK for s in parts.analysis["steps"])
    handed = [o["name"] for o in parts.analysis["outputs"] if o["name"].startswith(DRAW_PREFIX)]
    assert handed and not any("orient" in name for name in handed)


@pytest.mark.slow
def test_the_input_only_table_is_every_image_field_that_takes_only_an_input() -> None:
    """inference's blocks (and ours) whose image field takes only `$inputs.*`: an upgrade that adds one fails here
    (the orient step's image could not be wired to it: the spec would not compile)."""
    from bot.backends.environment import ensure_inference_env

    ensure_inference_env(None)
    from inference.core.workflows.execution_engine.introspection.blocks_loader import describe_available_blocks

    found = set()
    for block in describe_available_blocks(dynamic_blocks=[]).blocks:
        for name, prop in (block.block_schema.get("properties") or {}).items():
            if _inputs_only(prop) and "image" in _kinds(prop):
                found.add((block.manifest_type_identifier, name))
    assert found == INPUT_ONLY


def _inputs_only(prop: Any) -> bool:
    patterns = list(_walk(prop, "pattern"))
    return bool(patterns) and all(str(p).startswith("^\\$inputs") for p in patterns)


def _kinds(prop: Any) -> set[str]:
    return {k.get("name") for kinds in _walk(prop, "kind") if isinstance(kinds, list) for k in kinds
            if isinstance(k, dict)}


def _walk(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        if key in value:
            yield value[key]
        for v in value.values():
            yield from _walk(v, key)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)
