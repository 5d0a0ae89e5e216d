"""The camera registry as tools see it: name -> URL, from the workspace service or CAMERAS.md directly."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

_NAME_COLS = ("name", "camera", "id")
_URL_COLS = ("url", "source", "stream", "video", "video_reference")


def parse_cameras_md(text: str) -> dict[str, str]:
    """Name -> URL from every markdown table whose header has a name and a URL column."""
    out: dict[str, str] = {}
    name_i = url_i = None
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|"):
            name_i = url_i = None  # a new table needs its own header row
            continue
        cells = [c.strip().strip("`").strip() for c in line.strip("|").split("|")]
        if name_i is None:
            lower = [c.lower() for c in cells]
            name_i = next((lower.index(c) for c in _NAME_COLS if c in lower), None)
            url_i = next((lower.index(c) for c in _URL_COLS if c in lower), None)
            if name_i is None or url_i is None:
                name_i = url_i = None
            continue
        if set("".join(cells)) <= set("-: "):
            continue  # the |---|---| separator row
        if max(name_i, url_i) < len(cells) and cells[name_i] and cells[url_i]:
            out[cells[name_i]] = cells[url_i]
    return out


def _field(item: Any, *names: str) -> Any:
    for n in names:
        val = item.get(n) if isinstance(item, dict) else getattr(item, n, None)
        if val:
            return val
    return None


def _normalise(raw: Any) -> dict[str, str]:
    if isinstance(raw, dict):
        items = [(k, v if isinstance(v, str) else _field(v, *_URL_COLS)) for k, v in raw.items()]
    else:
        items = [(_field(c, *_NAME_COLS), _field(c, *_URL_COLS)) for c in raw]
    return {str(k): str(v) for k, v in items if k and v}


def cameras(workspace: Any, settings: Any) -> dict[str, str]:
    """Registered cameras (name -> URL); the workspace service wins, else CAMERAS.md is read here."""
    if workspace is not None and callable(getattr(workspace, "cameras", None)):
        try:
            return _normalise(workspace.cameras())
        except Exception:  # a malformed registry must not break image loading
            log.warning("workspace.cameras() failed; reading CAMERAS.md directly", exc_info=True)
    path = Path(settings.workspace) / "CAMERAS.md"
    try:
        return parse_cameras_md(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except OSError:
        return {}


def find_camera(workspace: Any, settings: Any, name: str) -> str | None:
    """URL of the camera called `name` (case-insensitive), or None."""
    cams = cameras(workspace, settings)
    if name in cams:
        return cams[name]
    return next((url for n, url in cams.items() if n.lower() == name.lower()), None)


def camera_name_for(workspace: Any, settings: Any, video_reference: str) -> str | None:
    """Name of the registered camera whose URL is `video_reference`, or None."""
    return next((n for n, url in cameras(workspace, settings).items() if url == video_reference), None)


def camera_hosts(workspace: Any, settings: Any) -> set[str]:
    """Host names of registered cameras (lower case)."""
    hosts = set()
    for url in cameras(workspace, settings).values():
        host = urlsplit(url).hostname if "://" in url else None
        if host:
            hosts.add(host.lower())
    return hosts
