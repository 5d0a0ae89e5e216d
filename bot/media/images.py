"""Image helpers for the Messages API: resize (after the size check), build base64 image blocks."""

from __future__ import annotations

import base64
import io
from typing import Any

from bot.media.sniff import check_image, media_type_of

__all__ = ["media_type_of", "resize_jpeg", "to_image_block"]


def resize_jpeg(data: bytes, max_dim: int = 640, quality: int = 85, max_pixels: int | None = None) -> bytes:
    """JPEG bytes whose longest side is at most max_dim (aspect kept).

    A JPEG that already fits is returned unchanged, so re-encoding never degrades it. The header is checked
    first (max_pixels, default PIL's decompression-bomb limit), so nothing oversized is ever decoded here.

    Raises:
        ValueError: the bytes are not an image PIL can open, or too many pixels (ImageRejected, one line).
    """
    from PIL import Image

    if media_type_of(data) is None:
        raise ValueError(f"not a readable image ({len(data)} bytes)")
    header = check_image(data, max_pixels)
    if header.media_type == "image/jpeg" and max(header.width, header.height) <= max_dim:
        return data
    img: Image.Image = Image.open(io.BytesIO(data), formats=[header.pil_format])
    img.draft("RGB", (max_dim, max_dim))  # JPEG: decode at 1/2..1/8 scale straight away (no full-size buffer)
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
