"""Image helpers for the Messages API: sniff the media type, resize, build base64 image blocks."""

from __future__ import annotations

import base64
import io
from typing import Any

_MAGIC: list[tuple[bytes, str]] = [
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
]


def media_type_of(data: bytes) -> str | None:
    """The image media type from the leading bytes (JPEG, PNG, GIF, WebP), or None if not an image we know."""
    for magic, media_type in _MAGIC:
        if data.startswith(magic):
            return media_type
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def resize_jpeg(data: bytes, max_dim: int = 640, quality: int = 85) -> bytes:
    """JPEG bytes whose longest side is at most max_dim (aspect kept).

    A JPEG that already fits is returned unchanged, so re-encoding never degrades it.

    Raises:
        ValueError: the bytes are not an image PIL can open.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        img = Image.open(io.BytesIO(data))
        size = img.size
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"not a readable image ({len(data)} bytes)") from exc
    if media_type_of(data) == "image/jpeg" and max(size) <= max_dim:
        return data
    img.thumbnail((max_dim, max_dim))  # keeps the aspect ratio, only ever shrinks
    if img.mode not in ("RGB", "L"):
        img = img.convert("RGB")
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=quality)
    return out.getvalue()


def to_image_block(data: bytes, max_dim: int = 640) -> dict[str, Any]:
    """A Messages API image block (base64 JPEG, longest side <= max_dim).

    Raises:
        ValueError: the bytes are not an image.
    """
    jpeg = resize_jpeg(data, max_dim)
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/jpeg", "data": base64.b64encode(jpeg).decode("ascii")},
    }
