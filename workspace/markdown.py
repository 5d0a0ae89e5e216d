"""Reading the workspace's Markdown: comments (notes for people, not the model) and the CAMERAS.md tables."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_COMMENT = re.compile(r"<!--.*?-->", re.S)


@dataclass(frozen=True)
class Camera:
    """One row of CAMERAS.md."""

    name: str
    url: str
    location: str = ""
    notes: str = ""
    rotate: str = ""  # a camera mounted turned: degrees clockwise that turn its frames upright, as written
    flip: str = ""  # a mirrored one: h / v, as written (bot/pipelines/start.py reads both)


def strip_comments(text: str) -> str:
    """Drop <!-- --> comments: guidance for the person editing the file, not for the model."""
    return re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", _COMMENT.sub("", text)).strip()


_NAME_COLS = ("name", "camera", "id")
_URL_COLS = ("url", "source", "stream", "address", "video", "video_reference")


def _column(header: list[str], names: tuple[str, ...]) -> int | None:
    return next((header.index(n) for n in names if n in header), None)


def _rows(text: str) -> Iterator[tuple[list[str], list[str]]]:
    """(lower-case header, cells) of every data row of every Markdown table; rows in <!-- --> comments are skipped."""
    header: list[str] | None = None
    for line in strip_comments(text).splitlines():
        line = line.strip()
        if not line.startswith("|"):
            header = None  # a table ended; the next one brings its own header
            continue
        cells = [c.strip().strip("`").strip() for c in line.strip("|").split("|")]
        if header is None:
            header = [c.lower() for c in cells]
        elif not all(set(c) <= set("-: ") for c in cells):  # not the |---|---| separator
            yield header, cells


def _cell(cells: list[str], i: int | None) -> str:
    return cells[i] if i is not None and i < len(cells) else ""


def parse_camera_table(text: str) -> list[Camera]:
    """Cameras from every Markdown table with a Name (or Camera/Id) and a URL (or Source/Stream/Video) column, and
    optionally Location, Notes, Rotate (or Rotation) and Flip (or Mirror).

    Tables may be split by site under their own headings; rows in <!-- --> comments are examples, not cameras.
    """
    cameras: list[Camera] = []
    for header, cells in _rows(text):
        name_i, url_i = _column(header, _NAME_COLS), _column(header, _URL_COLS)
        if name_i is None or url_i is None:
            continue  # not a camera table (e.g. the zones table)
        name, url = _cell(cells, name_i), _cell(cells, url_i)
        if name and url:
            cameras.append(Camera(name, url, _cell(cells, _column(header, ("location", "where"))),
                                  _cell(cells, _column(header, ("notes",))),
                                  _cell(cells, _column(header, ("rotate", "rotation"))),
                                  _cell(cells, _column(header, ("flip", "mirror")))))
    return cameras


def parse_zone_table(text: str) -> dict[str, str]:
    """Named zones (name -> 'X1,Y1,X2,Y2,X3,Y3,...' pixels) from tables with a Zone and a Polygon (or Points) column."""
    zones: dict[str, str] = {}
    for header, cells in _rows(text):
        name_i, points_i = _column(header, ("zone",)), _column(header, ("polygon", "points"))
        if name_i is not None and points_i is not None and _cell(cells, name_i) and _cell(cells, points_i):
            zones[_cell(cells, name_i)] = _cell(cells, points_i)
    return zones
