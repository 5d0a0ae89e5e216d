"""Reading the workspace's Markdown: comments (notes for people, not the model) and the CAMERAS.md tables."""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMMENT = re.compile(r"<!--.*?-->", re.S)


@dataclass(frozen=True)
class Camera:
    """One row of CAMERAS.md."""

    name: str
    url: str
    location: str = ""
    notes: str = ""


def strip_comments(text: str) -> str:
    """Drop <!-- --> comments: guidance for the person editing the file, not for the model."""
    return re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", _COMMENT.sub("", text)).strip()


_NAME_COLS = ("name", "camera", "id")
_URL_COLS = ("url", "source", "stream", "address", "video", "video_reference")


def _column(header: list[str], names: tuple[str, ...]) -> int | None:
    return next((header.index(n) for n in names if n in header), None)


def parse_camera_table(text: str) -> list[Camera]:
    """Cameras from every Markdown table with a Name (or Camera/Id) and a URL (or Source/Stream/Video) column.

    Tables may be split by site under their own headings; rows in <!-- --> comments are examples, not cameras.
    """
    cameras: list[Camera] = []
    cols: dict[str, int | None] | None = None
    for line in strip_comments(text).splitlines():
        line = line.strip()
        if not line.startswith("|"):
            cols = None  # a table ended; the next one brings its own header
            continue
        cells = [c.strip().strip("`").strip() for c in line.strip("|").split("|")]
        if cols is None:
            header = [c.lower() for c in cells]
            cols = {"name": _column(header, _NAME_COLS), "url": _column(header, _URL_COLS),
                    "location": _column(header, ("location", "where")), "notes": _column(header, ("notes",))}
            if cols["name"] is None or cols["url"] is None:
                cols = {"skip": None}  # not a camera table: ignore its rows
            continue
        if "skip" in cols or all(set(c) <= set("-: ") for c in cells):
            continue  # other table, or the |---|---| separator
        row = {k: cells[i] if i is not None and i < len(cells) else "" for k, i in cols.items()}
        if row["name"] and row["url"]:
            cameras.append(Camera(row["name"], row["url"], row["location"], row["notes"]))
    return cameras
