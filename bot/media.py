"""Where tools may read images and videos from: allowed folders, attachments, safe URLs, base64, Slack file ids."""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from bot.media_cameras import camera_hosts, find_camera
from bot.media_net import FetchError, check_url, fetch_url
from bot.redaction import redact

if TYPE_CHECKING:
    from tools.base import Attachment, ToolContext

__all__ = ["MediaError", "redact", "resolve_image", "resolve_path", "resolve_video", "trusted_hosts"]

_SLACK_FILE_ID = re.compile(r"^F[A-Z0-9]{6,}$")
_B64_CHARS = re.compile(r"^[A-Za-z0-9+/=_\-\s]+$")
_IMAGE_MAGIC = (b"\xff\xd8\xff", b"\x89PNG", b"GIF8", b"BM", b"RIFF", b"II*\x00", b"MM\x00*")
_STREAM_SCHEMES = ("rtsp", "rtsps", "rtmp", "rtmps", "srt", "udp")


class MediaError(Exception):
    """An image/video reference that cannot or may not be opened; str() is one line saying what to do."""


def _max_bytes(ctx: ToolContext) -> int:
    return int(ctx.settings.slack.max_image_bytes)


def allowed_roots(ctx: ToolContext) -> list[Path]:
    """Folders whose files tools may open: the workspace and VISION_AGENT_MEDIA_DIRS (resolved)."""
    roots = [Path(ctx.settings.workspace)] + list(ctx.settings.media_dirs)
    return [r.expanduser().resolve() for r in roots]


def _refuse_path(ref: str, ctx: ToolContext) -> MediaError:
    folders = ", ".join(str(r) for r in allowed_roots(ctx))
    return MediaError(
        f"{ref!r} is outside the folders I may read ({folders}) and is not an attached file; "
        "attach it, or add its folder to VISION_AGENT_MEDIA_DIRS (':'-separated) and restart."
    )


def _attachment_for(ref: str, ctx: ToolContext) -> Attachment | None:
    for att in ctx.attachments:
        if ref in (att.file_id, att.name, str(att.path), att.path.name):
            return att
    try:
        resolved = Path(ref).expanduser().resolve()
    except (OSError, RuntimeError):
        return None
    return next((a for a in ctx.attachments if a.path.resolve() == resolved), None)


def resolve_path(ref: str, ctx: ToolContext) -> Path:
    """An existing file that is attached or inside an allowed folder (symlinks followed, `..` refused)."""
    att = _attachment_for(ref, ctx)
    if att is not None:
        if not att.path.is_file():
            raise MediaError(f"the attached file {att.name or att.path.name!r} is no longer on disk; attach it again.")
        return att.path.resolve()
    raw = Path(ref).expanduser()
    if ".." in raw.parts:
        raise MediaError(f"{ref!r}: paths with '..' are not allowed; give the file's full path inside an allowed folder.")
    roots = allowed_roots(ctx)
    candidates = [raw] if raw.is_absolute() else [root / raw for root in roots]
    for cand in candidates:
        real = cand.resolve()
        if not any(real.is_relative_to(root) for root in roots):
            continue
        if real.is_file():
            return real
    if raw.is_absolute() and not any(raw.resolve().is_relative_to(r) for r in roots):
        raise _refuse_path(ref, ctx)
    folders = ", ".join(str(r) for r in roots)
    raise MediaError(f"file {ref!r} not found in the allowed folders ({folders}); check the name or attach the file.")


def _check_image(data: bytes, what: str) -> bytes:
    if not data:
        raise MediaError(f"{what} is empty.")
    if not data.startswith(_IMAGE_MAGIC):
        raise MediaError(f"{what} is not an image (JPEG, PNG, GIF, BMP, WebP or TIFF expected).")
    return data


def _read_file(path: Path, ctx: ToolContext, what: str) -> bytes:
    size = path.stat().st_size
    if size > _max_bytes(ctx):
        raise MediaError(f"{what} is {size // 1024} KB, over the {_max_bytes(ctx) // 1024} KB limit; send a smaller image.")
    return _check_image(path.read_bytes(), what)


def _decode_base64(ref: str) -> bytes | None:
    """Bytes of a data: URL or raw base64 text, or None if `ref` is neither."""
    if ref.startswith("data:"):
        head, _, payload = ref.partition(",")
        if ";base64" not in head:
            raise MediaError("data: URLs must be base64-encoded (data:image/jpeg;base64,...).")
    elif len(ref) >= 64 and "." not in ref and _B64_CHARS.match(ref):
        payload = ref
    else:
        return None
    payload = re.sub(r"\s+", "", payload)
    try:
        return base64.b64decode(payload + "=" * (-len(payload) % 4), altchars=b"-_" if "-" in payload or "_" in payload else None)
    except (binascii.Error, ValueError) as exc:
        raise MediaError(f"the base64 image data is invalid ({exc}); send the image again.") from None


def _server_hostport(ctx: ToolContext) -> str | None:
    parts = urlsplit(ctx.settings.inference.server_url)
    if not parts.hostname:
        return None
    return f"{parts.hostname.lower()}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


def trusted_hosts(ctx: ToolContext) -> set[str]:
    """Hosts that may be private/loopback: registered cameras (any port) and the inference server (its port only)."""
    hosts = camera_hosts(ctx.services.get("workspace"), ctx.settings)
    server = _server_hostport(ctx)
    if server:
        hosts.add(server)
    return hosts


def resolve_image(ref: str, ctx: ToolContext) -> bytes:
    """Image bytes for a tool's `image` argument, or MediaError with a one-line reason."""
    ref = (ref or "").strip()
    if not ref:
        raise MediaError("no image given; pass a file path, URL, base64 data or the Slack file id of an attachment.")
    scheme = urlsplit(ref).scheme.lower() if "://" in ref else ""
    if scheme in ("http", "https"):
        try:
            data = fetch_url(ref, trusted_hosts(ctx), _max_bytes(ctx), ctx.settings.inference.request_timeout)
        except FetchError as exc:
            raise MediaError(str(exc)) from None
        return _check_image(data, f"the content at {redact(ref)}")
    if scheme:
        raise MediaError(f"{scheme}:// is not an image source; use http(s), a file, base64 or an attachment.")
    if _SLACK_FILE_ID.match(ref):
        att = next((a for a in ctx.attachments if a.file_id == ref), None)
        if att is None:
            raise MediaError(f"Slack file {ref} was not shared in this conversation; attach it to a message here first.")
        return _read_file(att.path, ctx, f"Slack file {ref}")
    decoded = _decode_base64(ref)
    if decoded is not None:
        return _check_image(decoded, "the base64 data")
    path = resolve_path(ref, ctx)
    return _read_file(path, ctx, f"file {path.name!r}")


def resolve_video(ref: str, ctx: ToolContext) -> str:
    """A video_reference a backend can open: stream URL, webcam index, camera name, or an allowed file."""
    ref = str(ref).strip()
    if not ref:
        raise MediaError("no video source given; pass an RTSP/HTTP URL, a webcam index, a camera name or a file.")
    if ref.isdigit():
        return ref
    cam = find_camera(ctx.services.get("workspace"), ctx.settings, ref)
    if cam is not None:
        return cam
    scheme = urlsplit(ref).scheme.lower() if "://" in ref else ""
    if scheme in _STREAM_SCHEMES:
        return ref  # cameras live on private networks; stream URLs are not fetched for the model
    if scheme in ("http", "https"):
        try:
            check_url(ref, trusted_hosts(ctx))
        except FetchError as exc:
            raise MediaError(str(exc)) from None
        return ref
    if scheme:
        raise MediaError(f"{scheme}:// is not a supported video source; use rtsp://, http(s)://, a webcam index or a file.")
    return str(resolve_path(ref, ctx))
