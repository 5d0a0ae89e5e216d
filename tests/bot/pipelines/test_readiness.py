"""The camera readiness rows (bot/pipelines/readiness.py) over cameras of every condition a pipeline measures: each
fault the camera watch tells (video lost, frozen, black, grey/IR), a failed or ended pipeline, a short rate, the
light builtin/people reports, people too small, a turned camera, no result yet, a registered camera not running, a
pipeline on no registered camera, and more cameras than a Slack table holds."""

from __future__ import annotations

import pytest

from bot.backends.base import Detection, InferenceResult, PipelineHandle
from bot.backends.faults.kinds import KINDS, Fault
from bot.pipelines.limits import cannot_count
from bot.pipelines.readiness import COLUMNS, MAX_ROWS, Readiness, Source, rows, summary, table, text
from tests.fixtures.street import street_frames

NOW = 1_800_000_000.0


def handle(name: str, status: str = "running", **kw) -> PipelineHandle:
    return PipelineHandle(f"p_{name}", name, "direct", f"rtsp://{name}.local/live", "builtin/people", NOW - 600, status,
                          **kw)


def res(camera: dict | None = None, size=(1280, 720), age: float = 0.4, people: list[float] = (), **values
        ) -> InferenceResult:
    dets = tuple(Detection("person", 0.9, (10.0, 100.0, 40.0, 100.0 + h)) for h in people)
    return InferenceResult(dets, {**({"camera": camera} if camera is not None else {}), **values},
                           timestamp=NOW - age, image_size=size)


def table_of(handles: list[PipelineHandle], results: dict[str, InferenceResult], registered=(), recent=None,
             only=None) -> dict[str, Readiness]:
    src = Source(handles, lambda pid: results.get(pid), recent, clock=lambda: NOW)
    reg = {n: f"rtsp://{n}.local/live" for n in registered}
    found = rows(reg, src, lambda h: next((n for n, u in reg.items() if u == h.video_reference), None), only)
    return {r.pipeline if r.pipeline != "—" else r.camera: r for r in found}


SETTLED = {"settled": True, "person_px": 90.0, "smallest_px": 60.0, "blind_seconds": 0.0}


@pytest.mark.parametrize(("kind", "text", "light", "motion", "can"), [
    ("video", "no video for 42 s (reconnecting, try 3: connection refused; next in 4 s)", None, None, False),
    ("frozen", "the picture is frozen", None, "frozen", False),
    ("black", "the picture is black or covered", "black or covered", None, False),
    ("grey", "the picture turned grey (night/IR mode)", "grey (IR)", None, True),
])
def test_each_camera_fault_says_what_it_costs_and_what_to_do(kind, text, light, motion, can) -> None:
    h = handle("gate", faults=(Fault(kind, NOW - 42, text),))
    r = table_of([h], {"p_gate": res(SETTLED)})["gate"]
    assert r.can_count is can
    if not can:
        assert r.why.startswith(text) and KINDS[kind].advice in r.why
    if light:
        assert r.light.startswith(light)
    if motion:
        assert r.motion == motion
    assert r.state == ("reconnecting" if kind == "video" else "running")


def test_an_ended_fault_is_history_not_the_row() -> None:
    h = handle("gate", faults=(Fault("black", NOW - 300, "the picture is black or covered", ended=NOW - 200),))
    r = table_of([h], {"p_gate": res(SETTLED)})["gate"]
    assert (r.can_count, r.light) == (True, "—")


@pytest.mark.parametrize(("camera", "can", "said"), [
    (SETTLED, True, ""),
    ({**SETTLED, "person_px": 35.0, "smallest_px": 60.0}, False, "people here are about 35 px tall"),
    ({**SETTLED, "person_px": 48.0, "smallest_px": 96.0}, False, "use the main stream (a higher resolution)"),
    ({**SETTLED, "blind_seconds": 400.0}, False, "moved for 7 min with (almost) no one found"),
    ({**SETTLED, "turned": 180}, False, "people appear upside down"),
    ({**SETTLED, "turned": 90}, False, "rotate=90"),
    ({**SETTLED, "poor_light": "too dark", "luma": 9.0, "unseen_seconds": 300.0}, False,
     "the light is too poor to find people (the picture is too dark: mean brightness 9 of 255)"),
    ({**SETTLED, "poor_light": "too dark", "luma": 9.0, "unseen_seconds": 20.0}, True, ""),  # dark, people found
])
def test_can_count_is_the_limits_line_with_what_to_change(camera, can, said) -> None:
    r = table_of([handle("dock")], {"p_dock": res(camera)})["dock"]
    assert r.can_count is can and said in r.why
    assert not r.why.startswith("cannot count reliably")  # the column says "no"; the why follows it
    assert r.person == f"{camera['person_px']:.0f} px"


@pytest.mark.parametrize(("interval", "can"), [(0.1, True), (0.5, True), (2.0, False), (5.0, False)])
def test_a_rate_too_low_to_keep_tracks_cannot_count(interval, can) -> None:
    r = table_of([handle("dock")], {"p_dock": res(SETTLED, tracking={"interval": interval, "lost_seconds": 1.0})})
    assert r["dock"].can_count is (interval * 2 <= 1.0)
    assert (not can) == ("raise fps" in r["dock"].why)


@pytest.mark.parametrize(("asked", "got", "short", "cell"), [
    (10.0, 9.8, None, "10 / 9.8"), (15.0, 3.3, "3.3 of 15 fps: CPU-bound; lower fps or size", "15 / 3.3 (short)"),
    (None, 24.96, None, "any / 25.0"), (2.5, None, None, "2.5 / —"),
])
def test_fps_asked_and_delivered(asked, got, short, cell) -> None:
    h = handle("yard", asked_fps=asked, fps=got, short=short)
    assert table_of([h], {})["yard"].fps == cell


@pytest.mark.parametrize(("part", "cell"), [
    ({"luma": 131.2, "poor_light": None}, "ok (luma 131)"),
    ({"luma": 14.0, "poor_light": "too dark"}, "too dark (luma 14)"),
    ({"luma": 22.0, "noise": 9.0, "poor_light": "too dark and noisy"}, "too dark and noisy (luma 22)"),
    ({}, "—"),
])
def test_light_reads_builtin_peoples_measure(part, cell) -> None:
    assert table_of([handle("yard")], {"p_yard": res({**SETTLED, **part})})["yard"].light == cell


def test_a_roboflow_models_people_are_measured_from_its_boxes_and_the_frame_size_is_the_results() -> None:
    r = table_of([handle("lot")], {"p_lot": res(None, size=(3840, 2160), people=[80, 120, 100])})["lot"]
    assert (r.person, r.resolution, r.can_count) == ("100 px", "3840×2160", True)


@pytest.mark.parametrize("age", [0.0, 3.0, 75.0, 7200.0])
def test_last_frame_age(age) -> None:
    r = table_of([handle("lot")], {"p_lot": res(SETTLED, age=age)})["lot"]
    assert r.frame_age == {0.0: "0 s", 3.0: "3 s", 75.0: "1 min 15 s", 7200.0: "2 h"}.get(age, r.frame_age)


def test_motion_from_the_clip_ring_moving_still_or_unknown() -> None:
    frames = street_frames()
    recent = {"p_a": frames[0:25], "p_b": [frames[7]] * 10, "p_c": frames[:1]}
    got = table_of([handle("a"), handle("b"), handle("c")], {}, recent=lambda pid, s: recent[pid])
    assert (got["a"].motion, got["b"].motion, got["c"].motion) == ("moving", "still", "—")


def test_pipelines_and_registered_cameras_each_get_a_row() -> None:
    handles = [handle("gate"), handle("old", status="stopped"), handle("adhoc"),
               handle("broken", status="error", error="cannot open rtsp://broken.local/live: connection refused")]
    got = table_of(handles, {"p_gate": res(SETTLED)}, registered=["gate", "dock", "broken"])
    assert set(got) == {"gate", "dock", "broken", "adhoc"}  # the stopped one on no camera is not listed
    assert (got["dock"].state, got["dock"].can_count, got["dock"].why) == ("not running", None,
                                                                            "start it: `/vision start dock`")
    assert got["broken"].can_count is False and "connection refused" in got["broken"].why
    assert got["adhoc"].camera == "—" and got["adhoc"].why == "no result yet" and got["adhoc"].can_count is None
    assert got["gate"].camera == "gate"
    only = table_of(handles, {}, registered=["gate", "dock"], only="DOCK")
    assert list(only) == ["dock"]


def test_an_ended_pipeline_of_a_camera_says_how_to_run_it_again() -> None:
    got = table_of([handle("dock", status="finished")], {}, registered=["dock"])
    assert got["dock"].state == "finished" and "`/vision start dock`" in got["dock"].why


@pytest.mark.parametrize("n", [0, 1, 98, 99, 100, 250])
def test_the_table_fits_slacks_limits_and_says_what_it_cut(n) -> None:
    got = list(table_of([], {}, registered=[f"cam{i}" for i in range(n)]).values())
    t = table(got)
    assert t[0] == list(COLUMNS) and len(t) <= 100 and all(len(r) == len(COLUMNS) <= 20 for r in t)
    assert all(c for r in t for c in r)
    if n > MAX_ROWS:
        assert t[-1][0] == f"… and {n - (MAX_ROWS - 1)} more" and len(t) == 100
    else:
        assert len(t) == n + 1
    assert (summary(got).startswith("0 of") if n else "no cameras" in summary(got))


def test_summary_and_text_name_the_ones_that_cannot() -> None:
    h = [handle("gate", faults=(Fault("frozen", NOW - 60, "the picture is frozen"),)), handle("yard")]
    got = list(table_of(h, {"p_gate": res(SETTLED), "p_yard": res(SETTLED)}, registered=["gate", "dock"]).values())
    line = summary(got)
    assert line.startswith("1 of 3 can count; gate: no — the picture is frozen") and "not running: dock" in line
    lines = text(got).splitlines()
    assert len(lines) == 4 and lines[1].startswith("- gate: running; 1280×720; fps any / —; people 90 px")


@pytest.mark.parametrize(("status", "can"), [("stopped", None), ("finished", None), ("error", False)])
@pytest.mark.parametrize("kind", ["frozen", "black", "video"])
def test_a_pipeline_that_no_longer_runs_keeps_no_fault_of_its_camera(status, can, kind) -> None:
    """Stopped while its picture was frozen, the row said "frozen … the picture is frozen" for good (field test):
    nothing looks at that camera any more. The row says the pipeline's state and how to run it again."""
    h = handle("gate", status=status, error="camera gone" if status == "error" else None,
               faults=(Fault(kind, NOW - 42, KINDS[kind].name),))
    r = table_of([h], {"p_gate": res(SETTLED)}, registered=["gate"])["gate"]
    assert (r.state, r.can_count, r.motion) == (status, can, "—")
    assert not r.light.startswith("black") and KINDS[kind].advice not in r.why
    assert ("`/vision start gate`" in r.why) if status != "error" else ("camera gone" in r.why)


def test_the_summary_names_a_camera_whose_pipeline_stopped() -> None:
    """'0 of 1 can count' and nothing more, after `/vision stop` (own field run): the stopped one is named."""
    got = list(table_of([handle("dock", status="stopped")], {}, registered=["dock", "yard"]).values())
    assert summary(got) == "0 of 2 can count; not running: dock (stopped), yard"


@pytest.mark.parametrize(("px", "can", "said"), [(17.0, None, "still measuring people's size: about 17 px tall so far"),
                                                 (30.0, True, ""), (None, True, "")])
def test_people_small_so_far_are_a_maybe_while_the_size_settles(px, can, said) -> None:
    """Unsettled, a small first measure is no alert (first blobs read short) but no 'yes' either (field test)."""
    early = {**SETTLED, "settled": False, "person_px": px, "smallest_px": 24.0}
    r = table_of([handle("tiny")], {"p_tiny": res(early, size=(160, 120))})["tiny"]
    assert r.can_count is can and r.why.startswith(said)
    assert cannot_count({"camera": early}) is None  # the alert waits for the settled measure
    if said:  # the status line names it too
        assert f"tiny: not yet — {said}" in summary([r])


def test_a_dark_picture_says_nothing_of_its_people_size_while_it_settles_either() -> None:
    """In a dark picture noise blobs misread people's size (a dark garden's leaves read as people 15 px tall): the
    size is not said there, settled (limits.cannot_count) or not (the readiness maybe), by the same rule."""
    early = {**SETTLED, "settled": False, "person_px": 15.0, "smallest_px": 24.0, "poor_light": "too dark",
             "unseen_seconds": 0}
    r = table_of([handle("garden")], {"p_garden": res(early, size=(640, 480))})["garden"]
    assert r.can_count is True and "measuring" not in r.why
    bright = {**early, "poor_light": "too noisy"}
    r = table_of([handle("garden")], {"p_garden": res(bright, size=(160, 120))})["garden"]
    assert r.can_count is None and "about 15 px tall so far" in r.why
