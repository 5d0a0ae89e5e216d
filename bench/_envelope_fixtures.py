"""Make the envelope test clips in tests/fixtures/data from vtest.avi: `python -m bench._envelope_fixtures`.

The walkway as cameras hand it to analytics: a 384x288 sub-stream at 5 fps, and a 2 fps stream; each with its
counting line and the crossings counted by eye in that stretch (bench/data/vtest_crossings.json: one slit-scan
streak per person passing x=520, checked frame by frame). x264 keeps each well under 200 KB. And a stretch of
tree.avi (leaves in the wind, no one in it) where HOG answers "person" in single frames: no person alert may come.
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
TREE = (0, 68)  # all of tree.avi (10 fps): HOG says "person" on the leaves in single frames
LINE_X = 520  # px at full size (bench/data/vtest_crossings.json)


def encode(frames: dict[int, Any], path: Path, fps: int, scale: float = 1.0) -> tuple[int, int]:
    """Frames (by index, in order) as an x264 mp4 at fps, resized by scale; the (width, height) written."""
    import av
    import cv2

    height, width = (round(d * scale) for d in next(iter(frames.values())).shape[:2])
    with av.open(str(path), mode="w", format="mp4") as out:
        stream: Any = out.add_stream("libx264", rate=fps, options={"crf": "32", "preset": "slow"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in sorted(frames):
            small = cv2.resize(frames[i], (width, height), interpolation=cv2.INTER_AREA)
            out.mux(stream.encode(av.VideoFrame.from_ndarray(small, format="bgr24")))
        out.mux(stream.encode(None))
    return width, height


def clip(video: Path, name: str, first: int, stop: int, step: int, scale: float) -> None:
    from bench._realdata import crossing_labels, read_frames

    frames = read_frames(video, set(range(first, stop, step)))
    width, height = encode(frames, OUT / f"{name}.mp4", 10 // step, scale)
    by_eye = [f for f in crossing_labels()["frames"] if first + WARMUP * 10 <= f < stop]
    x = round(LINE_X * scale)
    (OUT / f"{name}.json").write_text(json.dumps({
        "source": f"vtest.avi frames {first}-{stop - 1} every {step} ({10 / step:g} fps), scaled x{scale:g} to "
                  f"{width}x{height}", "line": [[x, 0], [x, height]], "crossings": len(by_eye),
        "how": "crossings of x=520 counted by eye in bench/data/vtest_crossings.json (slit-scan, checked frame by "
               f"frame), those in this stretch after its first {WARMUP:g} s (the camera is measured on them)"}) + "\n")


def main() -> None:
    from bench._realdata import examples_dir, read_frames

    tree = OUT / "tree_10fps.mp4"
    encode(read_frames(examples_dir() / "tree.avi", set(range(*TREE))), tree, 10)
    print(f"{tree.relative_to(OUT.parents[2])}: {tree.stat().st_size / 1024:.0f} KB")
    video = examples_dir() / "vtest.avi"
    for name, (first, stop, step, scale) in CLIPS.items():
        clip(video, name, first, stop, step, scale)
        path = OUT / f"{name}.mp4"
        print(f"{path.relative_to(OUT.parents[2])}: {path.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
