"""Frames a person can read, measured in pixels: the counting line on any background, the in/out box and labels
sized to the frame and kept whole inside it, the camera's resolution kept (issue 23 item 7)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import supervision as sv
from inference.core.workflows.execution_engine.entities.base import ImageParentMetadata, WorkflowImageData

from bot.backends.base import Detection
from bot.backends.builtin.label_drawing import drawing_sizes
from bot.backends.builtin.labels import LabelsBlockV1
from bot.backends.builtin.line_overlay import BOX_BGR, LineOverlayBlockV1, draw_line_overlay, line_width
from bot.backends.imaging import draw_detections
from bot.backends.workflows import detection_workflow

DATA = Path(__file__).parents[2] / "fixtures" / "data"
REFS = Path(__file__).parents[2] / "fixtures" / "frames"
SIZES = [(320, 240), (640, 360), (768, 576), (1280, 720), (1920, 1080), (3840, 2160)]
BACKGROUNDS = {"white": (255, 255, 255), "black": (0, 0, 0), "grey": (128, 128, 128), "magenta": (255, 0, 255)}


def contrast_across(before: np.ndarray, after: np.ndarray, row: int, x: int, reach: int) -> int:
    """The most any pixel near x on row changed (sum over B, G, R): how far the drawn line stands from what was there."""
    lo, hi = max(0, x - reach), min(before.shape[1], x + reach + 1)
    return int(np.abs(after[row, lo:hi].astype(int) - before[row, lo:hi].astype(int)).sum(axis=1).max())


def box_of(drawn: np.ndarray) -> tuple[int, int, int, int]:
    """The in/out box's fill: the largest patch of its colour (the line's anti-aliased edge has a few such pixels)."""
    mask = np.all(drawn == BOX_BGR, axis=2).astype(np.uint8)
    _, _, stats, _ = cv2.connectedComponentsWithStats(mask)
    x, y, w, h, _ = stats[1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))]
    return int(x), int(y), int(x + w - 1), int(y + h - 1)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("background", list(BACKGROUNDS))
def test_the_line_contrasts_with_any_background_and_the_box_fits_the_frame(size, background):
    width, height = size
    scene = np.full((height, width, 3), BACKGROUNDS[background], np.uint8)
    for line in ([(width // 2, 0), (width // 2, height)], [(0, height - 1), (width - 1, 0)]):  # middle; corner to corner
        drawn = draw_line_overlay(scene.copy(), line, 12, 3)
        row = height * 3 // 4  # below the box, which sits by the line's start
        x = round(line[0][0] + (line[1][0] - line[0][0]) * (row - line[0][1]) / (line[1][1] - line[0][1]))
        assert contrast_across(scene, drawn, row, x, 2 * line_width(width)) >= 300  # black on white, magenta on black
        left, top, right, bottom = box_of(drawn)
        assert 0 < left and 0 < top and right < width - 1 and bottom < height - 1  # whole, never cut by the edge
        assert width / 10 < right - left + 1 < width / 3  # readable, and never more than a third of the frame


def test_big_counts_shrink_the_text_not_widen_the_box():
    scene = np.zeros((240, 320, 3), np.uint8)
    left, _, right, _ = box_of(draw_line_overlay(scene, [(160, 0), (160, 240)], 123456, 7890))
    assert right - left + 1 < 320 / 3


SUBSTREAMS = [(320, 180), (352, 240), (640, 360)]  # the sub-stream sizes field testers ran


def street(width: int, height: int) -> tuple[np.ndarray, list[list[float]]]:
    """Real footage (vtest.avi, tests/fixtures/data/street.*) resized to a sub-stream, and its people's boxes."""
    frame = cv2.imread(str(DATA / "street.jpg"))
    people = json.loads((DATA / "street.json").read_text())["people"]
    fx, fy = width / frame.shape[1], height / frame.shape[0]
    return (cv2.resize(frame, (width, height), interpolation=cv2.INTER_AREA),
            [[x1 * fx, y1 * fy, x2 * fx, y2 * fy] for x1, y1, x2, y2 in people])


def line_pixels(width: int, height: int, line: list[tuple[int, int]]) -> np.ndarray:
    """Where the line's outline (its widest part) is drawn, anti-aliased edge included."""
    mask = np.zeros((height, width), np.uint8)
    core = line_width(width)
    cv2.line(mask, line[0], line[1], 255, core + 2 * max(1, core // 2), cv2.LINE_AA)
    return mask > 0


@pytest.mark.parametrize("size", SUBSTREAMS)
@pytest.mark.parametrize("where", ["through people", "middle", "left quarter", "diagonal", "across"])
def test_the_count_box_hides_neither_the_line_nor_the_people_by_it(size, where):
    width, height = size
    scene, people = street(width, height)
    x = {"through people": round(width * 356 / 768), "middle": width // 2, "left quarter": width // 4}.get(where)
    line = ([(x, 0), (x, height)] if x is not None else [(0, height - 1), (width - 1, 0)] if where == "diagonal"
            else [(0, height // 2), (width, height // 2)])
    detections = sv.Detections(xyxy=np.array(people), confidence=np.full(len(people), 0.9),
                               class_id=np.zeros(len(people), int))
    image = WorkflowImageData(parent_metadata=ImageParentMetadata(parent_id="street"), numpy_image=scene)
    drawn = LineOverlayBlockV1().run(image=image, line_segment=[list(p) for p in line], count_in=12, count_out=3,
                                     predictions=detections)["image"].numpy_image
    left, top, right, bottom = box_of(drawn)
    left, top, right, bottom = left - 1, top - 1, right + 1, bottom + 1  # with its border
    assert 0 <= left and 0 <= top and right < width and bottom < height
    assert not line_pixels(width, height, line)[top:bottom + 1, left:right + 1].any(), (left, top, right, bottom)
    for x1, y1, x2, y2 in people:
        assert right < x1 or left > x2 or bottom < y1 or top > y2, ((left, top, right, bottom), (x1, y1, x2, y2))
    assert bottom - top + 1 >= 2 * 9  # two lines of figures a person reads on a 320 px frame


def test_label_sizes_grow_with_the_frame():
    scales = [drawing_sizes(width) for width, _ in SIZES]
    assert all(a["text_scale"] <= b["text_scale"] for a, b in zip(scales, scales[1:], strict=False))
    assert scales[0]["text_scale"] >= 0.35 and scales[-1]["text_scale"] > 3 * scales[2]["text_scale"] / 2
    assert all(s["text_thickness"] >= 1 and s["thickness"] >= 1 for s in scales)


# Boxes (fractions of the frame) touching the top, left, right and bottom edges and two corners.
EDGE_BOXES = {"top": (0.44, 0.0, 0.62, 0.25), "left": (0.0, 0.38, 0.16, 0.62), "right": (0.84, 0.38, 1.0, 0.62),
              "bottom": (0.41, 0.75, 0.59, 1.0), "top-left": (0.0, 0.0, 0.12, 0.16),
              "bottom-right": (0.88, 0.84, 1.0, 1.0)}
GREY = (96, 96, 96)


def edge_detections(width: int, height: int) -> sv.Detections:
    """One tracked person per edge box, each its own class id so each label has its own colour."""
    xyxy = np.array([[x1 * width, y1 * height, x2 * width, y2 * height] for x1, y1, x2, y2 in EDGE_BOXES.values()])
    count = len(xyxy)
    return sv.Detections(xyxy=xyxy, confidence=np.full(count, 0.87), class_id=np.arange(count),
                         tracker_id=np.arange(count) + 101, data={"class_name": np.array(["person"] * count)})


def label_patch(drawn: np.ndarray, index: int) -> tuple[int, int, int, int] | None:
    """The label background of the index-th colour: the bounding box of its largest patch, or None if not drawn."""
    mask = np.all(drawn == np.array(sv.ColorPalette.DEFAULT.by_idx(index).as_bgr()), axis=2).astype(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(mask)
    if count < 2:
        return None
    x, y, w, h, _ = stats[1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))]
    return int(x), int(y), int(w), int(h)


def free_label_size(width: int, height: int) -> tuple[int, int]:
    """The background (w, h) of "person 0.87 #101" labelling a box mid-frame, where nothing can cut it."""
    box = sv.Detections(xyxy=np.array([[width * 0.4, height * 0.4, width * 0.6, height * 0.6]]),
                        confidence=np.array([0.87]), class_id=np.array([0]), tracker_id=np.array([101]),
                        data={"class_name": np.array(["person"])})
    drawn = draw_block_labels(np.full((height, width, 3), GREY, np.uint8), box)
    patch = label_patch(drawn, 0)
    assert patch is not None
    return patch[2], patch[3]


def draw_block_labels(scene: np.ndarray, detections: sv.Detections) -> np.ndarray:
    image = WorkflowImageData(parent_metadata=ImageParentMetadata(parent_id="edges"), numpy_image=scene)
    return LabelsBlockV1().run(image=image, predictions=detections)["image"].numpy_image


@pytest.mark.parametrize("size", [(320, 240), (768, 576), (1920, 1080)])
def test_labels_of_boxes_at_every_edge_are_drawn_whole_inside_the_frame(size):
    width, height = size
    detections = edge_detections(width, height)
    drawn = draw_block_labels(np.full((height, width, 3), GREY, np.uint8), detections)
    full_w, full_h = free_label_size(width, height)
    assert full_h >= 12 and full_w < width / 2  # text ~8 px or more, and no label spans half the frame
    for i, (edge, (x1, y1, x2, y2)) in enumerate(EDGE_BOXES.items()):
        patch = label_patch(drawn, i)
        assert patch is not None, edge
        left, top, w, h = patch
        assert (w, h) == (full_w, full_h), edge  # the whole background: nothing cut off by the frame's edge
        assert left + w <= width and top + h <= height  # (a patch is found only inside the picture)
        box = (x1 * width, y1 * height, x2 * width, y2 * height)
        near = 2 * drawing_sizes(width)["text_padding"]  # the label sits on its box, not somewhere else
        assert left <= box[2] + near and left + w >= box[0] - near and top <= box[3] + near and top + h >= box[1] - near
        text = drawn[top:top + h, left:left + w]
        assert (text.min(axis=2) > 200).sum() > full_h  # white text on it: the label reads
    # label_visualization (no smart_position) cuts the labels at the top, top-left corner and right edge
    plain = sv.LabelAnnotator(text_scale=float(drawing_sizes(width)["text_scale"]),
                              text_padding=int(drawing_sizes(width)["text_padding"]))
    cut = plain.annotate(np.full((height, width, 3), GREY, np.uint8), detections, ["person 0.87 #101"] * 6)
    for i in (0, 2, 4):
        assert (label_patch(cut, i) or (0, 0, 0, 0))[2:] != (full_w, full_h)


def test_frames_drawn_without_a_workflow_label_the_same_way_inside_the_frame():
    width, height = 640, 360
    corner = (Detection("person", 0.87, (0.0, 0.0, 80.0, 120.0), tracker_id=101),)
    drawn = draw_detections(np.full((height, width, 3), GREY, np.uint8), corner)
    full_w, full_h = free_label_size(width, height)
    label = drawn[:full_h, :full_w]  # where the corner box's label belongs once moved inside the frame
    assert not np.all(label == GREY, axis=2).any()  # all of it drawn: background and text, nothing left grey
    assert (label.min(axis=2) > 200).sum() > full_h  # with its white text


def street_frame(size: tuple[int, int], index: int = 30) -> np.ndarray:
    cap = cv2.VideoCapture(str(DATA / "vtest_street_60f.mp4"))
    cap.set(cv2.CAP_PROP_POS_FRAMES, index)
    ok, frame = cap.read()
    cap.release()
    assert ok
    return cv2.resize(frame, size, interpolation=cv2.INTER_AREA)


async def render(direct_backend, image: np.ndarray) -> np.ndarray:
    """The frame the real workflow draws for builtin/people with line=middle."""
    height, width = image.shape[:2]
    spec = detection_workflow("builtin/people", line=[[width // 2, 0], [width // 2, height]])
    result = await direct_backend.run_single(cv2.imencode(".png", image)[1].tobytes(), workflow_spec=spec)
    return cv2.imdecode(np.frombuffer(result.frame, np.uint8), cv2.IMREAD_COLOR)


@pytest.mark.slow
@pytest.mark.parametrize("size", [(320, 240), (768, 576)])
async def test_the_real_workflow_draws_a_readable_frame_at_the_cameras_size(direct_backend, size):
    width, height = size
    street = street_frame(size)
    drawn = await render(direct_backend, street)
    assert drawn.shape[:2] == (height, width)  # the camera's resolution, not cut to 640 px
    ref = cv2.imread(str(REFS / f"ref_line_{width}x{height}.jpg"))
    assert np.abs(drawn.astype(int) - ref.astype(int)).mean() < 6  # drawn as the reference a person looked at
    for name, colour in (("white", 255), ("black", 0)):
        plain = np.full((height, width, 3), colour, np.uint8)
        out = await render(direct_backend, plain)
        row = height * 3 // 4
        assert contrast_across(plain, out, row, width // 2, 2 * line_width(width)) >= 300, name
        dark = np.all(np.abs(out.astype(int) - BOX_BGR) < 40, axis=2) if colour else None
        if dark is not None:  # the in/out box on white (not the line's dark outline): under a third of the width
            _, _, stats, _ = cv2.connectedComponentsWithStats(dark.astype(np.uint8))
            box_w = stats[1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA])), cv2.CC_STAT_WIDTH]
            assert 0 < box_w < width / 3


@pytest.mark.slow
async def test_a_hand_written_spec_with_label_visualization_still_runs(direct_backend):
    street = street_frame((768, 576))
    spec = {"version": "1.0", "inputs": [{"type": "WorkflowImage", "name": "image"}], "steps": [
        {"type": "vision_agent/hog_people_detector@v1", "name": "detector", "images": "$inputs.image"},
        {"type": "roboflow_core/label_visualization@v1", "name": "labels", "image": "$inputs.image",
         "predictions": "$steps.detector.predictions", "text_scale": "$steps.sizes.text_scale"},
        {"type": "vision_agent/frame_scale@v1", "name": "sizes", "image": "$inputs.image"}],
        "outputs": [{"type": "JsonField", "name": "predictions", "selector": "$steps.detector.predictions"},
                    {"type": "JsonField", "name": "annotated", "selector": "$steps.labels.image"}]}
    result = await direct_backend.run_single(cv2.imencode(".png", street)[1].tobytes(), workflow_spec=spec)
    drawn = cv2.imdecode(np.frombuffer(result.frame, np.uint8), cv2.IMREAD_COLOR)
    assert result.detections and drawn.shape == street.shape
    assert np.abs(drawn.astype(int) - street.astype(int)).sum(axis=2).max() > 200  # its labels are on the frame


@pytest.mark.parametrize("size", [(352, 240), (640, 360)])
def test_the_count_box_stays_put_while_people_walk_by_outside_it(size):
    """A walker crossing the frame, never near the box's spot: every frame of the clip draws it in the same place."""
    from bot.backends.builtin.line_overlay import count_box_place

    width, height = size
    line = ((width / 2, 0.0), (width / 2, float(height)))
    box = (width // 3, height // 6)
    places = set()
    for k in range(40):  # just under the top band, left to right, a person a third of the frame tall
        x = width * (0.05 + 0.9 * k / 39)
        walker = (x - height / 12, height * 0.3, x + height / 12, height * 0.63)
        places.add(count_box_place((width, height), box, line, [walker], margin=4))
    assert len(places) == 1, places
    left, top = places.pop()
    assert top + box[1] <= height * 0.3  # where the walker never was
