"""The camera registry as tools see it: name -> URL, origins, lookups by name or URL."""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bot.media.reach import origin
from bot.media.redaction import redact
from workspace import Camera, Workspace

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


def close_match(name: str, known: list[str]) -> str | None:
    """The known name `name` is most likely a slip for ('cam1' for 'cam-1', 'frontdoor' for 'front_door'), or None."""
    by_lower = {k.lower(): k for k in known}
    hit = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[hit[0]] if hit else None


def unknown_camera(name: str, known: list[str]) -> str:
    """'known cameras: dock, gate; did you mean `dock`?' (or 'no cameras yet'): what a refusal of a camera name
    nobody registered says, so the person sees the names they can use."""
    if not known:
        return "no cameras yet"
    guess = close_match(name, known)
    return f"known cameras: {', '.join(sorted(known))}" + (f"; did you mean `{guess}`?" if guess else "")


def camera_row(workspace: Any, settings: Any, reference: str) -> Camera | None:
    """The CAMERAS.md row of the camera named `reference` (case-insensitive) or whose URL (or its redacted form) it
    is: its other columns (rotate, flip) apply to whatever opens it. None when no row is, or the registry cannot be
    read."""
    if workspace is None or not callable(getattr(workspace, "cameras", None)):
        workspace = Workspace(Path(settings.workspace))
    try:
        rows = workspace.cameras()
    except Exception:  # a malformed registry must not break starting a pipeline on a URL
        log.warning("could not read the camera registry (CAMERAS.md)", exc_info=True)
        return None
    wanted = reference.strip().lower()
    return (next((c for c in rows if c.name.lower() == wanted), None)
            or next((c for c in rows if reference in (c.url, redact(c.url))), None))


def camera_name_for(workspace: Any, settings: Any, video_reference: str) -> str | None:
    """Name of the registered camera whose URL (or its redacted form, as handles keep it) is `video_reference`."""
    return next((n for n, url in cameras(workspace, settings).items() if video_reference in (url, redact(url))), None)


# What may follow a URL in running text: the URL ends there (a longer URL sharing its start is another camera);
# ": " too, as an error says it ("cannot open rtsp://…: 401 Unauthorized").
_URL_END = r"(?=$|[\s|)\]>\"'`,;]|[.:](?:\s|$))"


def camera_label(name: str) -> str:
    """How the model and tool results name a registered camera."""
    return f'camera "{name}"'


def hide_camera_urls(text: str, cams: Mapping[str, str]) -> str:
    """`text` with every registered camera's URL, as the registry has it or as `redact` shows it, replaced by
    `camera "NAME"`: the model learns cameras by name, never by address (tools resolve the name, `find_camera`).

    Only URLs are replaced (a webcam index such as `0` is not), longest first, and only where the URL ends.
    """
    forms: dict[str, str] = {}
    for name, url in cams.items():
        if "://" in url:
            for form in (url, redact(url)):
                forms.setdefault(form, name)
    if not text or not forms:
        return text
    pattern = re.compile("(" + "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True)) + ")" + _URL_END)
    return pattern.sub(lambda m: camera_label(forms[m.group(1)]), text)


def camera_origins(workspace: Any, settings: Any) -> set[str]:
    """`scheme://host:port` of every registered camera URL: what the registry opens, and nothing else on its host."""
    return {o for url in cameras(workspace, settings).values() if "://" in url and (o := origin(url))}
