"""Which way a pipeline turns its camera's frames: `rotate=` / `flip=` as asked at start, else the camera's CAMERAS.md
row (its Rotate and Flip columns), else not at all (bot/backends/orientation.py does the turning)."""

from __future__ import annotations

from dataclasses import replace

from bot.backends.orientation import Orientation
from bot.objects.pipeline import BAD_FLIP, BAD_ROTATE, flip_word, rotation
from bot.pipelines.request import StartRequest
from workspace import Camera


def with_row(req: StartRequest, row: Camera | None) -> StartRequest:
    """`req` with the row's rotate / flip where the start gave none; ValueError (one line, what to do) for a row whose
    cell is not a setting, or a turned row under a saved workflow (whose steps are not ours to put first)."""
    rotate, flip = req.rotate, req.flip
    if row is not None and rotate is None and row.rotate.strip():
        try:
            rotate = rotation(row.rotate)
        except ValueError:
            raise ValueError(f"camera {row.name!r} has Rotate {row.rotate[:20]!r} in CAMERAS.md, and Rotate "
                             f"{BAD_ROTATE}: fix its row, or give rotate= when you start it.") from None
    if row is not None and flip is None and row.flip.strip():
        flip = flip_word(row.flip) if row.flip.strip() not in ("-", "0") else "none"
        if flip not in ("h", "v", "none"):
            raise ValueError(f"camera {row.name!r} has Flip {row.flip[:20]!r} in CAMERAS.md, and Flip {BAD_FLIP}: "
                             "fix its row, or give flip= when you start it.")
    turned = Orientation.of(rotate, flip)
    if turned and req.saved_workflow and row is not None:
        raise ValueError(f"camera {row.name!r} is set to {turned.words()} in CAMERAS.md, and a saved workflow's "
                         "frames are not turned here: add an image_preprocessing step to the workflow, or start it "
                         "with rotate=0 flip=none to run it on the frames as they come.")
    return replace(req, rotate=rotate, flip=flip)


def orientation(req: StartRequest) -> Orientation:
    """The turn the request's frames get (none when it asked for none)."""
    return Orientation.of(req.rotate, req.flip)
