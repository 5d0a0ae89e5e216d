"""Where images and videos may be read from: allowed folders, attachments, safe URLs, base64, Slack file ids."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from bot.media.attachments import Attachment
from bot.media.cameras import camera_origins, cameras, find_camera, unknown_camera
from bot.media.fetch import HTTP, fetch_url, probe_url
from bot.media.reach import ReachError, check_reach, origin
from bot.media.redaction import redact
from bot.media.sniff import STILL_HINT, ImageRejected, check_image, media_type_of, still_image

if TYPE_CHECKING:
    from bot.config import Settings
    from workspace import Workspace

__all__ = ["MediaError", "MediaScope", "attachment_for", "redact", "resolve_image", "resolve_path", "resolve_video", "trusted_origins"]

_SLACK_FILE_ID = re.compile(r"^F[A-Z0-9]{6,}$")
_B64_CHARS = re.compile(r"^[A-Za-z0-9+/=_\-\s]+$")
_VIDEO_SCHEMES = ("rtsp", "rtsps", "rtmp", "rtmps", "srt", "udp", "http", "https")
# Text files FFmpeg follows to other addresses (HLS, concat, SDP): a local one would dodge the address check.
_PLAYLIST_HEADS = (b"#EXTM3U", b"ffconcat", b"v=0")
PROBE_TIMEOUT = 10.0  # seconds to look at an http(s) video source before handing it to the backend


class MediaError(Exception):
    """An image/video reference that cannot or may not be opened; str() is one line saying what to do."""


class FileNotThere(MediaError):
    """No such file where the caller may read (a name that is no camera either may be a camera's, mistyped)."""


class MediaScope(Protocol):
    """What resolving a reference reads: settings (folders, limits, the inference server), the camera registry and
    the files attached to this conversation. A tool's ToolContext and a command's CommandContext are each one.
    A scope may also say `local_files` (True only for the terminal's own `/vision` commands: see `_local_file`)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def workspace(self) -> Workspace | None: ...

    @property
    def attachments(self) -> Sequence[Attachment]: ...


def _max_bytes(ctx: MediaScope) -> int:
    return int(ctx.settings.slack.max_image_bytes)


def allowed_roots(ctx: MediaScope) -> list[Path]:
    """Folders whose files tools may open: the workspace and VISION_AGENT_MEDIA_DIRS (resolved)."""
    roots = [Path(ctx.settings.workspace)] + list(ctx.settings.media_dirs)
    return [r.expanduser().resolve() for r in roots]


def _refuse_path(ref: str, ctx: MediaScope) -> MediaError:
    roots = allowed_roots(ctx)
    folders = ", ".join(str(r) for r in roots)
    return MediaError(
        f"{ref!r} is outside the folders I may read ({folders}); copy it into {roots[0]}, or add its folder to "
        "VISION_AGENT_MEDIA_DIRS (':'-separated) and restart (an image can also be attached to a chat message)."
    )


def _cwd(ctx: MediaScope) -> Path:
    """Where the terminal's person typed the command (a line relayed from another terminal: bot/commands/relay.py)."""
    return getattr(ctx, "cwd", None) or Path.cwd()


def _local_file(raw: Path, ctx: MediaScope) -> Path | None:
    """A file the person at this terminal named (absolute, or relative to where they started the chat).

    Only a scope that says `local_files` (the terminal's own `/vision` commands) gets this: that person can open
    the file anyway. Slack, REST, MCP and the model's tool calls keep to the allowed folders (docs/security.md).
    """
    if not getattr(ctx, "local_files", False):
        return None
    real = (raw if raw.is_absolute() else _cwd(ctx) / raw).resolve()
    return real if real.is_file() else None


def attachment_for(ref: str, ctx: MediaScope) -> Attachment | None:
    """The attachment `ref` names (its Slack file id, given name, saved path or file name), or None."""
    for att in ctx.attachments:
        if ref in (att.file_id, att.name, str(att.path), att.path.name):
            return att
    try:
        resolved = Path(ref).expanduser().resolve()
    except (OSError, RuntimeError):
        return None
    return next((a for a in ctx.attachments if a.path.resolve() == resolved), None)


def resolve_path(ref: str, ctx: MediaScope) -> Path:
    """An existing file that is attached or inside an allowed folder (symlinks followed, `..` refused); for a scope
    with `local_files` (the terminal's own commands), also any file that person names."""
    att = attachment_for(ref, ctx)
    if att is not None:
        if not att.path.is_file():
            raise MediaError(f"the attached file {att.name or att.path.name!r} is no longer on disk; attach it again.")
        return att.path.resolve()
    try:
        raw = Path(ref).expanduser()
    except RuntimeError:  # '~name' for a user this machine does not know (found by schemathesis via the REST API)
        raise MediaError(f"{ref!r}: no such home directory; give the file's full path inside an allowed folder.") from None
    if ".." in raw.parts and not getattr(ctx, "local_files", False):
        raise MediaError(f"{ref!r}: paths with '..' are not allowed; give the file's full path inside an allowed folder.")
    roots = allowed_roots(ctx)
    candidates = [raw] if raw.is_absolute() else [root / raw for root in roots]
    for cand in candidates:
        real = cand.resolve()
        if not any(real.is_relative_to(root) for root in roots):
            continue
        if real.is_file():
            return real
    if (local := _local_file(raw, ctx)) is not None:
        return local
    if raw.is_absolute() and not any(raw.resolve().is_relative_to(r) for r in roots):
        raise _refuse_path(ref, ctx)
    folders = ", ".join(str(r) for r in roots)
    if getattr(ctx, "local_files", False):
        raise FileNotThere(f"file {ref!r} not found in {_cwd(ctx)} or the allowed folders ({folders}); check the path.")
    # The same words whether or not such a file exists elsewhere (no oracle for paths outside the folders): a name
    # relative to where the bot was started is looked for only inside them (field test: that read as a typo).
    raise FileNotThere(f"file {ref!r} not found in the allowed folders ({folders}); check the name, attach the file, "
                       f"or copy it into {roots[0]} (a folder of its own: add it to VISION_AGENT_MEDIA_DIRS, "
                       "':'-separated, and restart).")


def _check_image(data: bytes, what: str, ctx: MediaScope) -> bytes:
    """The bytes, if they are an image of a known format within media.max_pixels (header read, nothing decoded)."""
    if not data:
        raise MediaError(f"{what} is empty.")
    try:
        check_image(data, ctx.settings.media.max_pixels, what)
    except ImageRejected as exc:
        raise MediaError(str(exc)) from None
    return data


def _read_file(path: Path, ctx: MediaScope, what: str) -> bytes:
    size = path.stat().st_size
    if size > _max_bytes(ctx):
        raise MediaError(f"{what} is {size // 1024} KB, over the {_max_bytes(ctx) // 1024} KB limit; send a smaller image.")
    return _check_image(path.read_bytes(), what, ctx)


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


def trusted_origins(ctx: MediaScope) -> set[str]:
    """Origins that may be private/loopback: each registered camera's and each inference server's (scheme+host+port)."""
    origins = camera_origins(ctx.workspace, ctx.settings)
    for url in ctx.settings.inference.server_urls or [ctx.settings.inference.server_url]:
        if server := origin(url):
            origins.add(server)
    return origins


def resolve_image(ref: str, ctx: MediaScope) -> bytes:
    """Image bytes for a tool's `image` argument, or MediaError with a one-line reason."""
    ref = (ref or "").strip()
    if not ref:
        raise MediaError("no image given; pass a file path, URL, base64 data or the Slack file id of an attachment.")
    scheme = urlsplit(ref).scheme.lower() if "://" in ref else ""
    if scheme in ("http", "https"):
        try:
            data = fetch_url(ref, trusted_origins(ctx), _max_bytes(ctx), ctx.settings.inference.request_timeout)
        except ReachError as exc:
            raise MediaError(str(exc)) from None
        return _check_image(data, f"the content at {redact(ref)}", ctx)
    if scheme:
        raise MediaError(f"{scheme}:// is not an image source; use http(s), a file, base64 or an attachment.")
    if _SLACK_FILE_ID.match(ref):
        att = next((a for a in ctx.attachments if a.file_id == ref), None)
        if att is None:
            raise MediaError(f"Slack file {ref} was not shared in this conversation; attach it to a message here first.")
        return _read_file(att.path, ctx, f"Slack file {ref}")
    decoded = _decode_base64(ref)
    if decoded is not None:
        return _check_image(decoded, "the base64 data", ctx)
    path = resolve_path(ref, ctx)
    return _read_file(path, ctx, f"file {path.name!r}")


def _video_file(ref: str, ctx: MediaScope) -> str:
    path = resolve_path(ref, ctx)
    if still_image(str(path)):
        raise MediaError(f"{path.name!r} {STILL_HINT}.")
    with path.open("rb") as fh:
        head = fh.read(16)
    if head.lstrip().startswith(_PLAYLIST_HEADS):
        raise MediaError(f"{path.name!r} is a playlist or stream description that points elsewhere; "
                         "give the stream URL itself (rtsp://, http(s)://) or a video file.")
    return str(path)


def _http_stream(ref: str, ctx: MediaScope) -> str:
    """An untrusted http(s) source, looked at first: FFmpeg would follow its redirects and playlists unchecked."""
    timeout = min(ctx.settings.inference.request_timeout, PROBE_TIMEOUT)
    final, content_type, head = probe_url(ref, trusted_origins(ctx), timeout)
    if "mpegurl" in content_type or head.lstrip().startswith(_PLAYLIST_HEADS):
        raise MediaError(f"{redact(ref)} is an HLS playlist, whose segments the video reader would fetch from any "
                         "address unchecked; add it to CAMERAS.md if you trust it.")
    is_picture = content_type.startswith("image/") and content_type != "image/gif"
    if is_picture or media_type_of(head) not in (None, "image/gif"):
        raise MediaError(f"{redact(ref)} {STILL_HINT}.")
    return check_reach(final, trusted_origins(ctx), _VIDEO_SCHEMES).pinned


def _no_camera(ref: str, ctx: MediaScope, missing: FileNotThere) -> MediaError:
    """A bare name that is neither a camera nor a file: most likely a camera that is not (yet) a CAMERAS.md row, so
    the refusal says where cameras are registered, the ones that are, and the closest one; a path keeps its line."""
    if "/" in ref or Path(ref).suffix:
        return missing
    root = Path(ctx.workspace.root) if ctx.workspace is not None else Path(ctx.settings.workspace)
    return MediaError(
        f"{ref!r} is neither a camera nor a video file: a camera name is a row of {root / 'CAMERAS.md'} "
        f"(`| {ref} | rtsp://… | … |`; {unknown_camera(ref, list(cameras(ctx.workspace, ctx.settings)))}); a file "
        f"must be inside {', '.join(str(r) for r in allowed_roots(ctx))}.")


def resolve_video(ref: str, ctx: MediaScope) -> str:
    """A video_reference a backend can open: a webcam index, a camera's URL, a checked stream URL, or a video file.

    Stream URLs that are not a registered camera's origin must resolve to public addresses; the URL returned
    then names the checked IP (TLS schemes keep the name), so the backend connects where the check looked. Such an
    http(s) source is fetched once first (redirects re-checked; playlists and still pictures refused).
    """
    ref = str(ref).strip()
    if not ref:
        raise MediaError("no video source given; pass an RTSP/HTTP URL, a webcam index, a camera name or a file.")
    if ref.isdigit():
        return ref
    source = find_camera(ctx.workspace, ctx.settings, ref) or ref
    scheme = urlsplit(source).scheme.lower() if "://" in source else ""
    if scheme and scheme not in _VIDEO_SCHEMES:
        raise MediaError(f"{scheme}:// is not a supported video source; use rtsp://, http(s)://, a webcam index or a file.")
    # A bare path is sniffed only once it is known to be inside the allowed folders (_video_file): no oracle.
    if (source != ref or scheme) and still_image(source):
        raise MediaError(f"{redact(ref)} {STILL_HINT}.")
    if source != ref:
        return source  # a registered camera, as the registry has it
    if not scheme:
        try:
            return _video_file(ref, ctx)
        except FileNotThere as exc:
            raise _no_camera(ref, ctx, exc) from None
    try:
        reach = check_reach(ref, trusted_origins(ctx), _VIDEO_SCHEMES)
        return _http_stream(ref, ctx) if scheme in HTTP and not reach.trusted else reach.pinned
    except ReachError as exc:
        raise MediaError(str(exc)) from None
