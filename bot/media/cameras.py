"""The camera registry as tools see it: name -> URL, origins, lookups by name or URL."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from bot.media.reach import origin
from bot.media.redaction import redact
from workspace import Workspace

log = logging.getLogger(__name__)


def cameras(workspace: Any, settings: Any) -> dict[str, str]:
    """Registered cameras (name -> URL) from CAMERAS.md, read by the workspace's one table parser."""
    if workspace is None or not callable(getattr(workspace, "cameras", None)):
        workspace = Workspace(Path(settings.workspace))
    try:
        return {c.name: c.url for c in workspace.cameras()}
    except Exception:  # a malformed or unreadable registry must not break image loading
        log.warning("could not read the camera registry (CAMERAS.md)", exc_info=True)
        return {}


def named_zones(workspace: Any, settings: Any) -> dict[str, str]:
    """Zones named in CAMERAS.md (name -> polygon text) for `zone=NAME`."""
    if workspace is None or not callable(getattr(workspace, "zones", None)):
        workspace = Workspace(Path(settings.workspace))
    try:
        return dict(workspace.zones())
    except Exception:  # a malformed registry must not break starting a pipeline with a polygon
        log.warning("could not read the zones in CAMERAS.md", exc_info=True)
        return {}


def find_camera(workspace: Any, settings: Any, name: str) -> str | None:
    """URL of the camera called `name` (case-insensitive) or shown as `name` (its URL masked), or None."""
    cams = cameras(workspace, settings)
    if name in cams:
        return cams[name]
    by_name = next((url for n, url in cams.items() if n.lower() == name.lower()), None)
    # The model only ever sees masked URLs (rtsp://admin:***@host): the one it repeats stands for the real one.
    return by_name or next((url for url in cams.values() if redact(url) == name != url), None)


def camera_name_for(workspace: Any, settings: Any, video_reference: str) -> str | None:
    """Name of the registered camera whose URL is `video_reference`, or None."""
    return next((n for n, url in cameras(workspace, settings).items() if url == video_reference), None)


def camera_origins(workspace: Any, settings: Any) -> set[str]:
    """`scheme://host:port` of every registered camera URL: what the registry opens, and nothing else on its host."""
    return {o for url in cameras(workspace, settings).values() if "://" in url and (o := origin(url))}
