"""Camera faults judged from frames (bot/backends/faults/): pictures derived from real street footage, fed at a
camera's rate on a test clock, at rates and lengths the issue does not name. The loopback cameras and real pipelines
are in test_camera_faults_live.py."""

from __future__ import annotations

import io
import threading
import time

import numpy as np
import pytest

from bot.backends.faults.kinds import lasted
from bot.backends.faults.link import MAX_DELAY, Link, delay, reason_of
from bot.backends.faults.watch import WINDOW, CameraWatch
from tests.fixtures import faulty

DETECT = 20.0  # seconds: a fault is on the watch within this of its start (the 10-20 s, a check included)


@pytest.fixture(scope="module")
def street() -> list[np.ndarray]:
    return faulty.street()


class Feed:
    """A camera feeding a CameraWatch at `fps` on a clock of its own; records when each fault was first on."""

    def __init__(self, fps: float, live: bool = True) -> None:
        self.now, self.fps = 1_000_000.0, fps
        self.t0 = self.now
        self.watch = CameraWatch(live, clock=lambda: self.now)
        self.first_on: dict[str, float] = {}  # kind -> seconds from the start when the watch first showed it

    def send(self, frames: list[np.ndarray]) -> None:
        for frame in frames:
            self.watch.arrived(self.now)
            self.watch.saw(frame, self.now)
            self.now += 1 / self.fps
            self.look()

    def silence(self, seconds: float, step: float = 0.5) -> None:
        end = self.now + seconds
        while self.now < end:
            self.now += step
            self.look()

    def look(self) -> None:
        for f in self.watch.faults(self.now):
            if f.ended is None:
                self.first_on.setdefault(f.kind, self.now - self.t0)

    def at(self) -> float:
        return self.now - self.t0

    def kinds(self) -> list[str]:
        return [f.kind for f in self.watch.faults(self.now)]

    def ended(self, kind: str) -> list:
        return [f for f in self.watch.faults(self.now) if f.kind == kind and f.ended is not None]


def n(fps: float, seconds: float) -> int:
    return max(1, round(fps * seconds))


# --- no fault where there is none ------------------------------------------------------------------------------

@pytest.mark.parametrize("fps", [1.5, 4, 12])
def test_a_live_street_is_no_fault_at_any_rate(street, fps) -> None:
    feed = Feed(fps)
    feed.send(faulty.live(street, n(fps, 90)))
    assert feed.kinds() == []


@pytest.mark.parametrize(("fps", "quality"), [(3, 70), (7, 90), (12, 50)])
def test_a_still_scene_nobody_passes_is_not_frozen(street, fps, quality) -> None:
    """The street's upper band, nobody in it, as its camera's JPEGs: noise and nothing else changes."""
    import cv2

    band = [cv2.imdecode(np.frombuffer(j, np.uint8), cv2.IMREAD_COLOR)
            for j in faulty.jpegs(faulty.still(street), quality)]
    feed = Feed(fps)
    feed.send(faulty.live(band, n(fps, 150)))
    assert feed.kinds() == []


@pytest.mark.parametrize(("gain", "sigma"), [(0.25, 0.0), (0.15, 4.0), (0.1, 6.0), (0.08, 2.0)])
def test_a_dark_street_with_people_in_it_is_not_black(street, gain, sigma) -> None:
    feed = Feed(5)
    feed.send(faulty.darkened(faulty.live(street, n(5, 60)), gain, sigma, np.random.default_rng(3)))
    assert feed.kinds() == []


def test_a_camera_grey_from_the_start_is_not_said_to_turn_grey(street) -> None:
    feed = Feed(5)
    feed.send(faulty.grey(faulty.live(street, n(5, 60))))
    assert feed.kinds() == []


# --- each fault: found within the window, ended with its length -------------------------------------------------

def _frozen_h264(frames: list[np.ndarray], fps: int) -> list[np.ndarray]:
    """frames through a camera's H.264 encoder (libx264, zero latency, a keyframe a second) and back: a frozen
    picture is then no longer bit-identical (the encoder refines it, and each keyframe re-encodes it)."""
    import av

    buf = io.BytesIO()
    out = av.open(buf, "w", format="mp4")
    stream = out.add_stream("libx264", rate=fps)
    stream.width, stream.height, stream.pix_fmt = frames[0].shape[1], frames[0].shape[0], "yuv420p"
    stream.options = {"preset": "ultrafast", "tune": "zerolatency", "g": str(fps)}
    for frame in frames:
        for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="bgr24")):
            out.mux(packet)
    for packet in stream.encode():
        out.mux(packet)
    out.close()
    buf.seek(0)
    with av.open(buf) as inp:
        return [f.to_ndarray(format="bgr24") for f in inp.decode(video=0)]


@pytest.mark.parametrize(("fps", "frozen_for", "codec"), [
    (5, 37, "mjpeg"), (2, 250, "mjpeg"), (0.3, 75, "mjpeg"), (9, 21, "h264"), (4, 140, "h264"),
])
def test_a_frozen_picture_is_said_within_the_window_and_its_end_with_its_length(
    street, fps, frozen_for, codec
) -> None:
    before, after = faulty.live(street, n(fps, 25)), faulty.live(street, n(fps, 20), start=17)
    frames = before + [before[-1]] * n(fps, frozen_for) + after
    if codec == "h264":
        frames = _frozen_h264(frames, fps)
    feed = Feed(fps)
    feed.send(frames)
    began = len(before) / fps
    assert began < feed.first_on["frozen"] <= began + DETECT
    [fault] = feed.ended("frozen")
    # H.264 refines the picture for a while after it froze (changes over the still level): its start is found
    # up to a window late
    assert abs(fault.since - feed.t0 - began) <= WINDOW
    assert abs((fault.ended - fault.since) - frozen_for) <= WINDOW
    assert feed.kinds() == ["frozen"]  # over, nothing else said


@pytest.mark.parametrize(("fps", "dark_for", "what"), [
    (5, 30, "black"), (3, 400, "covered"), (10, 15, "limited-range black"), (6, 65, "covered"),
])
def test_a_black_or_covered_picture_is_said_and_its_end(street, fps, dark_for, what) -> None:
    rng = np.random.default_rng(7)
    shape = street[0].shape
    count = n(fps, dark_for)
    dark = {"black": lambda: faulty.black(shape, count, rng),
            "limited-range black": lambda: faulty.black(shape, count, rng, level=16, sigma=2.5),
            "covered": lambda: faulty.covered(street[30], count, rng)}[what]()
    before = faulty.live(street, n(fps, 20))
    feed = Feed(fps)
    feed.send(before + dark + faulty.live(street, n(fps, 15), start=5))
    began = len(before) / fps
    assert began < feed.first_on["black"] <= began + DETECT
    [fault] = feed.ended("black")
    assert abs((fault.ended - fault.since) - dark_for) <= 5
    assert "frozen" not in feed.first_on  # a black picture's noise is not a frozen one


@pytest.mark.parametrize(("fps", "grey_for"), [(5, 40), (2, 900)])
def test_a_picture_that_turns_grey_is_said_and_colour_coming_back(street, fps, grey_for) -> None:
    before = faulty.live(street, n(fps, 15))
    feed = Feed(fps)
    feed.send(before + faulty.grey(faulty.live(street, n(fps, grey_for), start=9))
              + faulty.live(street, n(fps, 10)))
    began = len(before) / fps
    assert began < feed.first_on["grey"] <= began + DETECT
    [fault] = feed.ended("grey")
    assert abs((fault.ended - fault.since) - grey_for) <= 3


def test_a_picture_that_changes_size_is_said_once(street) -> None:
    import cv2

    feed = Feed(5)
    feed.send(faulty.live(street, 50) + [cv2.resize(f, (640, 480)) for f in faulty.live(street, 80, start=3)])
    sizes = [f for f in feed.watch.faults(feed.now) if f.kind == "size"]
    assert [f.text for f in sizes] == ["the picture changed size from 384×288 to 640×480"]
    assert feed.kinds() == ["size"]  # not frozen, not black: the picture at its new size is judged afresh


# --- video loss -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("fps", "away"), [(5, 2.5), (5, 33), (0.5, 47), (12, 600)])
def test_video_lost_is_said_after_its_delay_and_back_with_its_length(street, fps, away) -> None:
    feed = Feed(fps)
    feed.send(faulty.live(street, n(fps, 20)))
    last = feed.at() - 1 / fps  # the last frame came then
    feed.silence(away)
    feed.send(faulty.live(street, n(fps, 5)))
    usual = max(8.0, 4 / fps)  # no frame for 8 s, or four of the camera's intervals
    if away + 1 / fps <= usual:
        assert "video" not in feed.first_on and feed.kinds() == []  # a blip, not a fault
        return
    assert usual < feed.first_on["video"] - last <= usual + 1
    [fault] = feed.ended("video")
    assert abs((fault.ended - fault.since) - away) <= 1 / fps + 0.5


def test_a_file_that_ends_is_no_video_loss(street) -> None:
    feed = Feed(5, live=False)
    feed.send(faulty.live(street, 30))
    feed.silence(60)
    assert feed.kinds() == []


def test_a_paused_pipeline_has_no_video_loss(street) -> None:
    feed = Feed(5)
    feed.send(faulty.live(street, 30))
    feed.now += 120
    assert feed.watch.faults(feed.now, running=False) == ()
    feed.watch.link.resumed(feed.now)
    assert feed.watch.faults(feed.now + 1) == ()


def test_the_video_loss_text_says_what_the_reconnection_does(street) -> None:
    feed = Feed(5)
    feed.send(faulty.live(street, 10))
    feed.silence(12)
    assert feed.watch.faults(feed.now)[0].text.endswith("(connected, nothing comes)")
    feed.watch.link.tried(False, "[tcp @ 0x55] Connection to tcp://user:s3cret@10.1.2.3:554 failed: Connection refused")
    feed.watch.link.tries = 3
    text = feed.watch.faults(feed.now)[0].text
    assert text.startswith("no video for 1") and text.endswith("(reconnecting, try 3: connection refused)")
    assert "s3cret" not in text and "10.1.2.3" not in text


# --- the reconnection's backoff -------------------------------------------------------------------------------

def test_reconnections_back_off_and_the_delay_is_bounded() -> None:
    delays = [delay(t) for t in range(1, 40)]
    assert delays[0] == 0 and delays[1:5] == [1, 2, 4, 8]
    assert all(a <= b for a, b in zip(delays, delays[1:], strict=False)) and max(delays) == MAX_DELAY


def test_a_frame_starts_the_backoff_afresh_and_a_stop_ends_its_wait() -> None:
    link = Link()
    for _ in range(4):
        link.tries += 1
    link.frame()
    assert link.tries == 0 and link.wait_turn()  # the first try after frames: at once
    link.tries = 30  # a camera away for a long time: the next wait is MAX_DELAY
    done = threading.Event()
    waited = threading.Thread(target=lambda: (link.wait_turn(), done.set()))
    waited.start()
    start = time.monotonic()
    link.stop()
    assert done.wait(5)
    assert time.monotonic() - start < MAX_DELAY
    waited.join()


@pytest.mark.parametrize(("message", "words"), [
    ("Server returned 401 Unauthorized (authorization failed)", "it refuses the credentials"),
    ("method DESCRIBE failed: 404 Not Found", "no stream at that address"),
    ("Connection to tcp://10.0.0.9:554 failed: Connection timed out", "no answer"),
    ("Failed to resolve hostname cam.example: Name or service not known", "address unreachable"),
    ("Invalid data found when processing input", "it cannot be opened"),
    ("Server returned 403 Forbidden (access denied)", "it refuses the credentials"),
    # an address's digits are no status: a camera on port 44013 or 40123 that is away is refused, not unauthorized
    ("Connection to tcp://127.0.0.1:44013?timeout=0 failed: Connection refused", "connection refused"),
    ("http://127.0.0.1:40123/mjpeg: Connection refused", "connection refused"),
    ("Error opening input http://cam.local:8404/x: Input/output error", "it cannot be opened"),
])
def test_a_failed_open_is_said_in_fixed_words(message, words) -> None:
    assert reason_of(message) == words


@pytest.mark.parametrize(("seconds", "words"), [
    (0.4, "0 s"), (42, "42 s"), (133, "2 min 13 s"), (600, "10 min"), (3900, "1 h 5 min"), (7200, "2 h"),
    (93600, "1 d 2 h"),
])
def test_how_long_a_fault_lasted_reads_as_a_person_would_say_it(seconds, words) -> None:
    assert lasted(seconds) == words
