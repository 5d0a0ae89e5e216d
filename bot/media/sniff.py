"""What bytes are: the one media-type sniffer, and the size check every image passes before anything decodes it."""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CHAT_TYPES", "DEFAULT_MAX_PIXELS", "MAX_JPEG_SCANS", "STILL_HINT", "ImageHeader", "ImageRejected", "TooManyPixels", "TooManyScans",
    "check_image", "media_type_of", "megapixels", "still_image",
]

DEFAULT_MAX_PIXELS = 40_000_000  # settings.media.max_pixels; 40 MP decodes to ~120 MB of RGB
# What people may attach (Slack, CLI): the Messages API's own image types.
CHAT_TYPES = {"image/jpeg": ".jpg", "image/png": ".png", "image/gif": ".gif", "image/webp": ".webp"}
_MAGIC: list[tuple[bytes, str]] = [
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
]
_PIL_FORMAT = {"image/jpeg": "JPEG", "image/png": "PNG", "image/gif": "GIF", "image/webp": "WEBP",
               "image/bmp": "BMP", "image/tiff": "TIFF"}
# Still pictures by name (URLs cannot be sniffed without fetching them). GIF is left out on purpose: FFmpeg plays
# an animated GIF as a video, and a one-frame GIF just finishes like a one-frame file.
_STILL_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff", ".heic")
STILL_TOOLS = "use run_inference or ask_about_image on it"  # a `/vision` answer says it in commands (dispatch.py)
STILL_HINT = f"is a still image; {STILL_TOOLS}, or give a video file or stream"
VIDEO_TOOLS = "start a pipeline on it (start_pipeline) to run a model over its frames"  # in commands: dispatch.py
_BOMB_PIXELS = re.compile(r"\((\d+) pixels\)")
HEAD_BYTES = 16
# Each progressive scan is another pass over the whole image: thousands of scans make a small JPEG take minutes to
# decode (libjpeg-turbo's advice for untrusted input is a scan limit). Encoders write about 10; 64 leaves room.
MAX_JPEG_SCANS = 64
_SOS = b"\xff\xda"  # start of scan; entropy-coded data stuffs 0xFF as FF 00, so this pair is a real marker


def media_type_of(data: bytes) -> str | None:
    """The image media type from the leading bytes (JPEG, PNG, GIF, WebP, BMP, TIFF), or None."""
    for magic, media_type in _MAGIC:
        if data.startswith(magic):
            return media_type
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def video_type_of(data: bytes) -> str | None:
    """The video container from the leading bytes (MP4/MOV, AVI, Matroska/WebM, FLV), or None."""
    if len(data) >= 8 and data[4:8] == b"ftyp":
        return "MP4/MOV"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"AVI ":
        return "AVI"
    if data.startswith(b"\x1a\x45\xdf\xa3"):
        return "Matroska/WebM"
    if data.startswith(b"FLV"):
        return "FLV"
    return None


class ImageRejected(ValueError):
    """An image that will not be decoded; str() is one line saying why and what to send instead."""


class TooManyPixels(ImageRejected):
    """A readable header that claims more pixels than the limit (a decompression bomb included)."""


class TooManyScans(TooManyPixels):
    """A JPEG whose progressive scans would cost more decoding than we allow: as costly as too many pixels."""


@dataclass(frozen=True)
class ImageHeader:
    """What the header says, read without decoding a pixel."""

    media_type: str
    width: int
    height: int

    @property
    def pixels(self) -> int:
        return self.width * self.height

    @property
    def pil_format(self) -> str:
        """The one PIL plugin to decode it with: the format whose header was checked."""
        return _PIL_FORMAT[self.media_type]


def megapixels(pixels: int) -> str:
    """'144 MP', '2.1 MP', or '5000 pixels': a pixel count as the size messages say it."""
    if pixels >= 10_000_000:
        return f"{pixels / 1_000_000:.0f} MP"
    return f"{pixels / 1_000_000:.1f} MP" if pixels >= 100_000 else f"{pixels} pixels"


def _too_big(what: str, size: str, pixels: int, max_pixels: int) -> TooManyPixels:
    return TooManyPixels(f"{what} is {size} ({megapixels(pixels)}); the limit is {megapixels(max_pixels)} — "
                         "send a smaller image.")


def _bomb(what: str, exc: Exception, max_pixels: int) -> TooManyPixels:
    m = _BOMB_PIXELS.search(str(exc))
    if m is None:
        return TooManyPixels(f"{what} looks like a decompression bomb (far more pixels than its file size suggests); "
                             f"the limit is {megapixels(max_pixels)} — send a smaller image.")
    pixels = int(m.group(1))
    return TooManyPixels(f"{what} looks like a decompression bomb ({megapixels(pixels)} in a small file); "
                         f"the limit is {megapixels(max_pixels)} — send a smaller image.")


def _head(source: bytes | Path) -> bytes:
    if isinstance(source, Path):
        with source.open("rb") as fh:
            return fh.read(HEAD_BYTES)
    return source[:HEAD_BYTES]


def check_image(source: bytes | Path, max_pixels: int | None = None, what: str = "this image") -> ImageHeader:
    """The header of an image whose format we know and whose pixel count is within max_pixels.

    Only the header is read (PIL opens lazily, and only with the sniffed format's plugin), so a 445 KB PNG that
    claims 12000×12000 is refused before 432 MB of pixels exist. max_pixels None means PIL's own bomb limit.

    Raises:
        ImageRejected: not an image we know, unreadable header, over max_pixels, or a decompression bomb.
        OSError: a file that cannot be read.
    """
    from PIL import Image, UnidentifiedImageError

    limit = int(max_pixels or Image.MAX_IMAGE_PIXELS or DEFAULT_MAX_PIXELS)
    media_type = media_type_of(_head(source))
    if media_type is None:
        if video := video_type_of(_head(source)):  # a video handed to an image tool: say what takes it
            raise ImageRejected(f"{what} is a video ({video}), not a still image: {VIDEO_TOOLS}.")
        raise ImageRejected(f"{what} is not an image (JPEG, PNG, GIF, WebP, BMP or TIFF expected).")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own limit decides below
            fp = source if isinstance(source, Path) else io.BytesIO(source)
            with Image.open(fp, formats=[_PIL_FORMAT[media_type]]) as img:
                width, height = img.size
    except Image.DecompressionBombError as exc:
        raise _bomb(what, exc, limit) from None
    except (UnidentifiedImageError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageRejected(f"{what} is not a readable {_PIL_FORMAT[media_type]} image ({type(exc).__name__}); "
                            "send it again or export it as JPEG/PNG.") from None
    except OSError as exc:
        if isinstance(source, Path):
            raise
        raise ImageRejected(f"{what} is not a readable {_PIL_FORMAT[media_type]} image ({exc}); "
                            "send it again or export it as JPEG/PNG.") from None
    if width * height > limit:
        raise _too_big(what, f"{width}×{height}", width * height, limit)
    if media_type == "image/jpeg" and (scans := _scans(source)) > MAX_JPEG_SCANS:
        raise TooManyScans(f"{what} is a JPEG of {scans} progressive scans (at most {MAX_JPEG_SCANS} are decoded); "
                            "export it as a baseline JPEG or PNG.")
    return ImageHeader(media_type, width, height)


def _scans(source: bytes | Path) -> int:
    """How many scans a JPEG has (an embedded thumbnail's count too: an over-count, never an under-count)."""
    data = source.read_bytes() if isinstance(source, Path) else source
    return data.count(_SOS)


def still_image(reference: str) -> bool:
    """True when a video reference is a still picture: an existing image file (sniffed), else a name like one."""
    ref = str(reference).strip()
    if ref.isdigit():
        return False
    if "://" not in ref:
        path = Path(ref).expanduser()
        try:
            if path.is_file():
                return media_type_of(_head(path)) not in (None, "image/gif")
        except OSError:
            return False
    name = ref.split("?", 1)[0].split("#", 1)[0].lower()
    return name.endswith(_STILL_SUFFIXES)
