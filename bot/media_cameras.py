"""The camera registry as tools see it: name -> URL, host names, lookups by name or URL."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)


def cameras(workspace: Any, settings: Any) -> dict[str, str]:
    """Registered cameras (name -> URL) from CAMERAS.md, read by the workspace's one table parser."""
    if workspace is None or not callable(getattr(workspace, "cameras", None)):
        from workspace import Workspace

        workspace = Workspace(Path(settings.workspace))
    try:
        return {c.name: c.url for c in workspace.cameras()}
    except Exception:  # a malformed or unreadable registry must not break image loading
        log.warning("could not read the camera registry (CAMERAS.md)", exc_info=True)
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
