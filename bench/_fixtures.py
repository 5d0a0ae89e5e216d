"""Make the small real-footage test fixtures in tests/fixtures/data from vtest.avi: `python -m bench._fixtures`.

A street frame (JPEG) with its people labels, and a 5 fps crop of the street where three people cross a line, with
the by-eye count. Both come from the labels in bench/data; re-run this after changing them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "data"
STREET_FRAME = 740  # eight people walking, 60–100 px tall, two pairs close together
STREET_BAND = (80, 360)  # rows kept: where the people are (keeps the JPEG small)
# Frames 214–280 at x 400–640, y 120–420: three men cross x=520 right to left, one at a time (checked frame by frame
# at 229, 257 and 265); every second frame, as a 5 fps camera would give them.
CLIP_FRAMES, CLIP_STEP = range(214, 281), 2
CLIP_BOX = (400, 120, 640, 420)
CLIP_CROSSINGS = {"in": 0, "out": 3}  # the line runs top to bottom; right-to-left crossings are `out`


def street_frame(video: Path) -> None:
    import cv2

    from bench._realdata import people_labels, read_frames

    top, bottom = STREET_BAND
    frame = read_frames(video, {STREET_FRAME})[STREET_FRAME][top:bottom]
    ok, jpeg = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 80])
    assert ok
    (OUT / "street.jpg").write_bytes(jpeg.tobytes())
    truth = people_labels()[STREET_FRAME]

    def moved(boxes: list) -> list:
        return [[x1, y1 - top, x2, y2 - top] for x1, y1, x2, y2 in boxes if y1 >= top and y2 <= bottom]

    (OUT / "street.json").write_text(json.dumps({
        "source": f"vtest.avi frame {STREET_FRAME} rows {top}-{bottom} (Debian opencv-doc), labels from "
                  "bench/data/vtest_people.json", "people": moved(truth.boxes), "ignore": moved(truth.ignored)},
        indent=None) + "\n")


def crossing_clip(video: Path) -> None:
    import av

    from bench._realdata import read_frames

    frames = read_frames(video, set(CLIP_FRAMES[::CLIP_STEP]))
    x1, y1, x2, y2 = CLIP_BOX
    with av.open(str(OUT / "crossing.mp4"), mode="w", format="mp4") as out:  # x264 keeps it to tens of KB
        stream: Any = out.add_stream("libx264", rate=10 // CLIP_STEP, options={"crf": "28", "preset": "slow"})
        stream.width, stream.height, stream.pix_fmt = x2 - x1, y2 - y1, "yuv420p"
        for i in sorted(frames):
            out.mux(stream.encode(av.VideoFrame.from_ndarray(frames[i][y1:y2, x1:x2].copy(), format="bgr24")))
        out.mux(stream.encode(None))
    (OUT / "crossing.json").write_text(json.dumps({
        "source": f"vtest.avi frames {CLIP_FRAMES.start}-{CLIP_FRAMES.stop - 1} every {CLIP_STEP}, crop {CLIP_BOX}",
        "line": [[520 - x1, 0], [520 - x1, y2 - y1]], "count": CLIP_CROSSINGS}) + "\n")


def main() -> None:
    from bench._realdata import examples_dir

    OUT.mkdir(parents=True, exist_ok=True)
    video = examples_dir() / "vtest.avi"
    street_frame(video)
    crossing_clip(video)
    for path in sorted(OUT.iterdir()):
        print(f"{path.relative_to(OUT.parents[2])}: {path.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
