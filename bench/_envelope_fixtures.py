"""Make the envelope test clips in tests/fixtures/data from vtest.avi: `python -m bench._envelope_fixtures`.

The walkway as cameras hand it to analytics: a 384x288 sub-stream at 5 fps, and a 2 fps stream; each with its
counting line and the crossings counted by eye in that stretch (bench/data/vtest_crossings.json: one slit-scan
streak per person passing x=520, checked frame by frame). x264 keeps each well under 200 KB.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "data"
# name: (first frame, last frame + 1, every n-th, scale). The first WARMUP seconds of a clip are not in its count:
# the camera's size of people is measured on them, as on any camera the bot is pointed at.
CLIPS = {
    "substream_5fps": (60, 300, 2, 0.5),
    "street_2fps": (0, 420, 5, 0.5),
}
WARMUP = 3.0
LINE_X = 520  # px at full size (bench/data/vtest_crossings.json)


def clip(video: Path, name: str, first: int, stop: int, step: int, scale: float) -> None:
    import av
    import cv2

    from bench._realdata import crossing_labels, read_frames

    wanted = set(range(first, stop, step))
    frames = read_frames(video, wanted)
    height, width = (round(d * scale) for d in next(iter(frames.values())).shape[:2])
    with av.open(str(OUT / f"{name}.mp4"), mode="w", format="mp4") as out:
        stream: Any = out.add_stream("libx264", rate=10 // step, options={"crf": "32", "preset": "slow"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in sorted(frames):
            small = cv2.resize(frames[i], (width, height), interpolation=cv2.INTER_AREA)
            out.mux(stream.encode(av.VideoFrame.from_ndarray(small, format="bgr24")))
        out.mux(stream.encode(None))
    by_eye = [f for f in crossing_labels()["frames"] if first + WARMUP * 10 <= f < stop]
    x = round(LINE_X * scale)
    (OUT / f"{name}.json").write_text(json.dumps({
        "source": f"vtest.avi frames {first}-{stop - 1} every {step} ({10 / step:g} fps), scaled x{scale:g} to "
                  f"{width}x{height}", "line": [[x, 0], [x, height]], "crossings": len(by_eye),
        "how": "crossings of x=520 counted by eye in bench/data/vtest_crossings.json (slit-scan, checked frame by "
               f"frame), those in this stretch after its first {WARMUP:g} s (the camera is measured on them)"}) + "\n")


def main() -> None:
    from bench._realdata import examples_dir

    video = examples_dir() / "vtest.avi"
    for name, (first, stop, step, scale) in CLIPS.items():
        clip(video, name, first, stop, step, scale)
        path = OUT / f"{name}.mp4"
        print(f"{path.relative_to(OUT.parents[2])}: {path.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
