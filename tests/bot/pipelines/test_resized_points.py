"""A line or zone read off one frame size, on a stream of another: `@WIDTHxHEIGHT` moves the points onto its frames.

The committed sub-stream (tests/fixtures/data/substream_5fps.mp4) is vtest.avi at 384x288; its by-eye line is x=520
on the 768x576 main stream.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.pipelines.analytics import compose
from bot.pipelines.counting_line import parse_line, rescale, split_size
from bot.pipelines.request import StartRequest, check

CLIP = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "substream_5fps.mp4"


async def test_a_line_drawn_on_the_main_stream_lands_where_it_was_drawn_on_the_substream():
    by_eye = json.loads(CLIP.with_suffix(".json").read_text())["line"]  # [[260, 0], [260, 288]]
    analytics = await compose("builtin/people", str(CLIP), "520,0,520,576@768x576", None, {})
    assert analytics.line == by_eye
    assert "given at 768x576, moved onto this stream's 384x288 frames" in analytics.describe()
    step = next(s for s in analytics.spec["steps"] if s["name"] == "line_counter")
    assert step["line_segment"] == by_eye


async def test_a_zone_and_a_named_zone_follow_the_size_they_were_given_in():
    analytics = await compose("builtin/people", str(CLIP), None, "100,300,700,300,700,560@800x600", {})
    assert analytics.zone == [[48, 144], [336, 144], [336, 269]]
    named = await compose("builtin/people", str(CLIP), "0,0,1920,1080@1920x1080", "door",
                          {"door": "0,0,1280,0,1280,720@1280x720"})
    assert named.zone == [[0, 0], [384, 0], [384, 288]] and named.line == [[0, 0], [384, 288]]
    assert named.describe().count("stretched onto this stream's 384x288") == 2  # two 16:9 sizes, each said


async def test_points_without_a_size_are_the_streams_own_and_an_unreadable_source_is_not_refused_for_them(
    tmp_path: Path,
):
    analytics = await compose("builtin/people", str(tmp_path / "no-such.mp4"), "10,20,30,40", "1,1,5,1,5,5", {})
    assert analytics.line == [[10, 20], [30, 40]] and analytics.zone == [[1, 1], [5, 1], [5, 5]]
    assert "given at" not in analytics.describe()
    same = await compose("builtin/people", str(CLIP), "10,20,30,40@384x288", None, {})
    assert same.line == [[10, 20], [30, 40]] and "given at" not in same.describe()


async def test_a_size_that_cannot_be_applied_gets_one_line_saying_what_to_do(tmp_path: Path):
    with pytest.raises(ValueError, match="Could not read a frame .* without @WIDTHxHEIGHT"):
        await compose("builtin/people", str(tmp_path / "no-such.mp4"), "10,20,30,40@640x480", None, {})
    for bad in ("10,20,30,40@0x480", "10,20,30,40@640x99999"):
        with pytest.raises(ValueError, match="frame size the points were measured on"):
            check(StartRequest("0", model_id="builtin/people", line=bad), {})
    with pytest.raises(ValueError, match="@WIDTHxHEIGHT"):
        check(StartRequest("0", model_id="builtin/people", line="10,20,30@640x480"), {})


@pytest.mark.parametrize(("raw", "points", "size"), [
    ("1,2,3,4@640x480", [[1, 2], [3, 4]], (640, 480)), ("1,2,3,4 @ 1280X720", [[1, 2], [3, 4]], (1280, 720)),
    ("1,2,3,4@352×240", [[1, 2], [3, 4]], (352, 240)), ("1,2,3,4", [[1, 2], [3, 4]], None),
])
def test_the_size_suffix_is_read_in_the_forms_people_write_it(raw, points, size):
    assert parse_line(raw) == points and split_size(raw)[1] == size


def test_rescale_maps_each_axis_on_its_own():
    assert rescale([[640, 360]], (1280, 720), (704, 480)) == [[352, 240]]  # 16:9 main stream, 4:3-ish D1 sub-stream
    assert rescale([[5, 5]], None, (704, 480)) == [[5, 5]] and rescale([[5, 5]], (10, 10), None) == [[5, 5]]


async def test_a_line_or_zone_outside_the_streams_frames_is_refused_with_what_to_do():
    """Field test: x=600 read off the 768x576 main stream, typed without @768x576 for the 384x288 sub-stream, was
    taken and counted 0 for the whole clip with nothing said."""
    with pytest.raises(ValueError, match=r"line \(600,0\)→\(600,576\) lies outside this stream's 384x288 frames.*@"):
        await compose("builtin/people", str(CLIP), "600,0,600,576", None, {})
    with pytest.raises(ValueError, match="zone .* lies outside this stream's 384x288 frames"):
        await compose("builtin/people", str(CLIP), None, "400,300,700,300,700,560", {})
    with pytest.raises(ValueError, match=r"becomes the point \(0,0\) on this stream's 384x288 frames: draw it longer"):
        await compose("builtin/people", str(CLIP), "1,0,2,0@1920x1080", None, {})  # it failed once running
    partly = await compose("builtin/people", str(CLIP), "300,0,300,576", "300,200,700,200,700,560", {})
    assert partly.line == [[300, 0], [300, 576]]  # a line or zone partly on the frame still counts there


async def test_points_given_at_another_shape_say_they_were_stretched():
    """4:3 main stream points on a 16:9 (or 704x480) sub-stream: the camera may crop or letterbox, the reply says so."""
    analytics = await compose("builtin/people", str(CLIP), "520,0,520,576@1280x720", None, {})
    assert analytics.line == [[156, 0], [156, 230]]
    assert "given at 1280x720, stretched onto this stream's 384x288 frames, another shape" in analytics.describe()
    assert "/vision snapshot" in analytics.describe()


async def test_a_zone_read_off_the_main_stream_partly_on_the_substream_says_it_reaches_past_the_frame():
    """Field test (issue 21): the zone 100,100,700,100,700,250,100,250 read off vtest's 768x576 main stream, typed
    without @768x576 for a 480x270 sub-stream, started with nothing said; half of it was off the picture and the rest
    was not where it was drawn."""
    zone = "100,150,700,150,700,560,100,560"  # the walkway's lower half, on the 768x576 main stream
    partly = await compose("builtin/people", str(CLIP), None, zone, {})
    assert partly.zone == [[100, 150], [700, 150], [700, 560], [100, 560]]  # still started: it counts where it is
    assert "the zone reaches (700,560), past this stream's 384x288 frames" in partly.describe()
    assert "@1920x1080" in partly.describe()
    line = await compose("builtin/people", str(CLIP), "300,0,300,576", None, {})
    assert "the line reaches (300,576), past this stream's 384x288 frames" in line.describe()
    for fits in ("0,0,384,0,384,288,0,288", "0,0,390,0,390,292,0,292"):  # to the edge, or a pixel or two past it
        assert "reaches" not in (await compose("builtin/people", str(CLIP), None, fits, {})).describe()
    sized = await compose("builtin/people", str(CLIP), None, zone + "@768x576", {})
    assert "reaches" not in sized.describe() and "moved onto this stream's 384x288" in sized.describe()
    middle = await compose("builtin/people", str(CLIP), "middle", None, {})
    assert "reaches" not in middle.describe()
