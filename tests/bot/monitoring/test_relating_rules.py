"""Rules that relate things: `near` (two classes meeting in one frame) and `then` (one camera, then another)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.backends.base import Detection, InferenceResult
from bot.config import Settings
from bot.monitoring.events_log import EventLog
from bot.monitoring.false_alarms import tightened
from bot.monitoring.kinds.near import gap
from bot.monitoring.monitor import Monitor
from bot.monitoring.rules import Rule, RuleState, Sightings, evaluate
from tests.bot.monitor_helpers import JPEG, Clock, FakePipelines, make_router
from tests.bot.monitoring.test_webhooks import Receiver, bodies_of, make_sender, until

Box = tuple[str, float, float, float, float]


def scene(*boxes: Box, scale: float = 1.0) -> InferenceResult:
    """A result with one detection per (class, x1, y1, x2, y2), every coordinate times `scale`."""
    dets = tuple(Detection(c, 0.9, (x1 * scale, y1 * scale, x2 * scale, y2 * scale), i)
                 for i, (c, x1, y1, x2, y2) in enumerate(boxes))
    return InferenceResult(detections=dets, frame=JPEG, image_size=(int(640 * scale), int(480 * scale)))


PERSON_FAR = ("person", 20, 100, 80, 280)  # 60x180: its longer side, 180 px, is the unit of the gap
PERSON_CLOSE = ("person", 300, 100, 360, 280)  # 40 px left of the car: 40/180 = 0.22 box sizes
PERSON_ON = ("person", 380, 150, 440, 330)  # overlaps the car
CAR = ("car", 400, 200, 640, 360)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def on(camera: str, sink) -> list:
    """The alerts of one camera (cam1, without rules of its own, keeps its guessed `appears` default)."""
    return [a for a in sink.alerts if a.camera == camera]


@pytest.fixture
async def rig(tmp_path: Path, settings: Settings, clock: Clock):
    router, sink = make_router(tmp_path, clock, cooldown=60)
    pipelines = FakePipelines()
    monitor = Monitor(router, pipelines, settings, clock=clock)
    monitor.start()
    return monitor, pipelines, sink, router


def test_the_gap_is_in_box_sizes_so_it_holds_at_any_resolution() -> None:
    for scale in (0.5, 1.0, 3.0):  # the same scene from a 320x240, a 640x480 and a 1920x1440 camera
        person, car = scene(PERSON_CLOSE, CAR, scale=scale).detections
        assert gap(person, car) == pytest.approx(40 / 180)
    on, car = scene(PERSON_ON, CAR).detections
    assert gap(on, car) == 0.0
    far, car = scene(PERSON_FAR, CAR).detections
    assert gap(far, car) == pytest.approx(320 / 180)


@pytest.mark.parametrize(("within", "fires"), [(0.5, True), (0.2, False), (0, False)])
def test_near_fires_only_within_its_gap(within: float, fires: bool) -> None:
    rule = Rule("near", "cam2", class_name="person", other_class="car", threshold=within)
    hit = evaluate(rule, RuleState(), scene(PERSON_CLOSE, CAR), 0.0)
    assert (hit is not None) == fires
    if hit:
        assert hit.text == "person near car (0.22× the smaller one's size apart, within 0.5)"
        assert hit.counts == {"person": 1, "car": 1}


def test_near_on_one_class_needs_two_objects() -> None:
    rule = Rule("near", class_name="person", other_class="person", threshold=0.5)
    assert evaluate(rule, RuleState(), scene(PERSON_CLOSE), 0.0) is None  # a person is not near itself
    pair = scene(PERSON_CLOSE, ("person", 370, 100, 430, 280))
    assert evaluate(rule, RuleState(), pair, 0.0) is not None


async def test_near_fires_once_per_meeting_and_the_cooldown_holds_the_next(rig, clock: Clock) -> None:
    monitor, pipes, sink, router = rig
    monitor.add_rule(Rule("near", "cam2", class_name="person", other_class="car", threshold=0))
    pipes.add("cam2")
    for person in (PERSON_FAR, PERSON_CLOSE, PERSON_ON, PERSON_ON):  # walks up to the car and stays
        clock.advance(1)
        pipes.push("cam2", scene(person, CAR))
    await monitor.flush()
    assert [(a.camera, a.rule, a.text) for a in sink.alerts] == [
        ("cam2", "near:person+car<=0", "person near car (boxes overlap)")]

    clock.advance(10)  # leaves (past clear_seconds), comes back within the 60 s cooldown: held, not posted
    pipes.push("cam2", scene(PERSON_FAR, CAR))
    clock.advance(10)
    pipes.push("cam2", scene(PERSON_ON, CAR))
    await monitor.flush()
    assert len(sink.alerts) == 1
    assert monitor.held.pending("cam2", "near:person+car<=0") is not None

    router.mute("cam2", 3600)  # past the cooldown but muted: still nothing
    clock.advance(100)
    pipes.push("cam2", scene(PERSON_FAR, CAR))
    clock.advance(10)
    pipes.push("cam2", scene(PERSON_ON, CAR))
    await monitor.flush()
    assert len(sink.alerts) == 1


async def test_then_fires_when_the_second_camera_sees_it_within_the_window(rig, clock: Clock) -> None:
    monitor, pipes, sink, _ = rig
    monitor.add_rule(Rule("then", "cam2", class_name="person", threshold=60, after_camera="cam1"))
    pipes.add("cam1")
    pipes.add("cam2")
    pipes.push("cam1", scene(PERSON_FAR))
    clock.advance(45)
    pipes.push("cam2", scene(PERSON_FAR))
    await monitor.flush()
    assert [(a.camera, a.rule, a.text) for a in on("cam2", sink)] == [
        ("cam2", "then:person@cam1<=60s", "person here 45 s after cam1 saw it (within 60 s)")]


@pytest.mark.parametrize("order", ["too late", "wrong class", "other way round"])
async def test_then_stays_quiet_outside_the_window_or_the_order(rig, clock: Clock, order: str) -> None:
    monitor, pipes, sink, _ = rig
    monitor.add_rule(Rule("then", "cam2", class_name="person", threshold=60, after_camera="cam1"))
    pipes.add("cam1")
    pipes.add("cam2")
    if order == "other way round":  # cam2 first, then cam1: not "cam1, then cam2"
        pipes.push("cam2", scene(PERSON_FAR))
        clock.advance(5)
        pipes.push("cam1", scene(PERSON_FAR))
    else:
        pipes.push("cam1", scene(CAR if order == "wrong class" else PERSON_FAR))
        clock.advance(61 if order == "too late" else 5)
        pipes.push("cam2", scene(PERSON_FAR))
    await monitor.flush()
    assert on("cam2", sink) == []


async def test_then_on_a_muted_camera_and_within_its_cooldown_is_held(rig, clock: Clock) -> None:
    monitor, pipes, sink, router = rig
    monitor.add_rule(Rule("then", "cam2", class_name="person", threshold=60, after_camera="cam1"))
    pipes.add("cam1")
    pipes.add("cam2")

    def visit() -> None:  # a person passes cam1, then reaches cam2 10 s later, then leaves both
        pipes.push("cam1", scene(PERSON_FAR))
        clock.advance(10)
        pipes.push("cam2", scene(PERSON_FAR))
        clock.advance(10)
        pipes.push("cam2", scene())

    visit()
    visit()  # within the 60 s cooldown
    await monitor.flush()
    assert len(on("cam2", sink)) == 1
    clock.advance(100)
    router.mute("cam2", 600)
    visit()
    await monitor.flush()
    assert len(on("cam2", sink)) == 1
    router.unmute("cam2")
    visit()
    await monitor.flush()
    assert len(on("cam2", sink)) == 2


def test_a_then_rule_reads_the_other_camera_only_from_sightings() -> None:
    rule = Rule("then", "cam2", class_name=None, threshold=30, after_camera="cam1")
    seen = Sightings()
    seen.saw("cam1", scene(CAR), 100.0)
    assert evaluate(rule, RuleState(), scene(PERSON_FAR), 120.0, seen) is not None  # any class on both
    assert evaluate(rule, RuleState(), scene(PERSON_FAR), 120.0) is None  # nothing known of cam1


def test_false_alarms_tighten_near_and_then_one_step() -> None:
    near = Rule("near", "cam2", class_name="person", other_class="car", threshold=0.5)
    new, what = tightened(near, 300)
    assert (new.threshold, new.id, what) == (0.25, "near:person+car<=0.25",
                                            "now alerts only when they are within 0.25× the smaller one's size")
    touching, what = tightened(Rule("near", "cam2", class_name="person", other_class="car", threshold=0), 300)
    assert (touching.threshold, touching.cooldown_seconds, what) == (0, 600, "now waits 10 min between alerts")
    then, what = tightened(Rule("then", "cam2", class_name="person", threshold=60, after_camera="cam1"), 300)
    assert (then.id, what) == ("then:person@cam1<=30s", "now alerts only within 30 s of cam1")


def test_the_rules_read_well() -> None:
    assert Rule("near", "cam2", class_name="person", other_class="car", threshold=0.5).describe() == (
        "alerts when person and car are less than 0.5× the smaller one's size apart")
    assert Rule("near", "cam2", class_name="face", other_class="person", threshold=0).describe() == (
        "alerts when face and person touch or overlap")
    assert Rule("then", "cam2", class_name="person", threshold=60, after_camera="cam1").describe() == (
        "alerts when person is seen on cam1, then on cam2 within 60 s")
    stored = Rule("then", "cam2", class_name="person", threshold=60, after_camera="cam1")
    assert Rule.from_dict(stored.as_dict()) == stored


@pytest.fixture
async def hook() -> AsyncIterator[Receiver]:
    rx = await Receiver().start()
    yield rx
    await rx.stop()


async def test_near_and_then_events_reach_the_webhook_typed_and_held_ones_marked(
    hook: Receiver, base_env: dict[str, str], tmp_path: Path, settings: Settings, clock: Clock
) -> None:
    events = EventLog(tmp_path / "events.jsonl")  # wired as the runtime wires it: the sender follows the log
    sender = make_sender(base_env, hook.url, events=events, cursor=tmp_path / "webhook_cursor.json")
    sender.bind(asyncio.get_running_loop())
    router, _ = make_router(tmp_path, clock, cooldown=60, events=events)
    router.add_sink(sender, after_clip=True)
    router.observe_held(sender.held)
    pipes = FakePipelines()
    monitor = Monitor(router, pipes, settings, clock=clock)
    monitor.start()
    monitor.add_rule(Rule("near", "cam2", class_name="person", other_class="car", threshold=0.5))
    monitor.add_rule(Rule("then", "cam2", class_name="car", threshold=60, after_camera="cam1"))
    monitor.add_rule(Rule("count_over", "cam1", class_name="car", threshold=5))  # cam1 quiet: no `appears` guess
    pipes.add("cam1")
    pipes.add("cam2")
    try:
        pipes.push("cam1", scene(CAR))
        clock.advance(20)
        pipes.push("cam2", scene(PERSON_ON, CAR))  # the car from cam1 arrives, a person at it
        clock.advance(10)
        pipes.push("cam2", scene(PERSON_FAR, CAR))
        clock.advance(10)
        pipes.push("cam2", scene(PERSON_CLOSE, CAR))  # again, inside the 60 s cooldown: held
        await monitor.flush()
        await until(lambda: len(bodies_of(hook)) == 3)
        assert await sender.drain(5)
    finally:
        await sender.close()
    got = [(b["camera"], b["event_type"], b["rule"], b["held"]) for b in bodies_of(hook)]
    assert sorted(got, key=str) == sorted([
        ("cam2", "near", "near:person+car<=0.5", None), ("cam2", "then", "then:car@cam1<=60s", None),
        ("cam2", "near", "near:person+car<=0.5", "cooldown")], key=str)
