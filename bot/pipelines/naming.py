"""The one default pipeline name: the camera's name, else the stream's host or the file's stem, made unique."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from bot.backends.base import LIVE
from bot.objects.text import name_from
from bot.pipelines.table import PipelineTable


def default_name(source: str, camera: str | None, table: PipelineTable, owner: str | None = None) -> str:
    """`door`, `door-2` while a live `door` exists; `webcam0` for an index; `10.0.0.5` for a bare stream URL."""
    if camera:
        base = name_from(camera)
    elif "://" in source:
        base = name_from(urlsplit(source).hostname or "", "stream")
    elif source.isdigit():
        base = name_from(f"webcam{source}"[:64])
    else:
        base = name_from(Path(source).stem, "video")  # a file's name is the member's: a name, not markup
    taken = {h.name.lower() for h in table.snapshot() if h.status in LIVE} | table.kept_by_others(owner)
    name, n = base[:60], 2
    while name.lower() in taken:
        name, n = f"{base[:60]}-{n}", n + 1
    return name
