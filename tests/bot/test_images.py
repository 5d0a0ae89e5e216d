"""Image helpers: media type sniffing, aspect-preserving resize to JPEG, base64 image blocks."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from bot.images import media_type_of, resize_jpeg, to_image_block


def encode(fmt: str, size: tuple[int, int] = (40, 20), mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size).save(out, format=fmt)
    return out.getvalue()


@pytest.mark.parametrize("fmt,media", [("JPEG", "image/jpeg"), ("PNG", "image/png"), ("GIF", "image/gif"),
                                       ("WEBP", "image/webp")])
def test_media_type_of_known_formats(fmt, media):
    assert media_type_of(encode(fmt)) == media


def test_media_type_of_non_image_is_none():
    assert media_type_of(b"%PDF-1.7 ...") is None and media_type_of(b"") is None


def test_block_is_jpeg_resized_keeping_aspect():
    block = to_image_block(encode("PNG", (2000, 500), "RGBA"), max_dim=640)
    assert block["type"] == "image" and block["source"]["media_type"] == "image/jpeg"
    data = base64.b64decode(block["source"]["data"])
    assert media_type_of(data) == "image/jpeg"
    assert Image.open(io.BytesIO(data)).size == (640, 160)


def test_small_jpeg_is_passed_through_untouched():
    small = encode("JPEG", (320, 240))
    assert resize_jpeg(small, 640) is small


def test_not_an_image_raises_value_error():
    with pytest.raises(ValueError, match="not a readable image"):
        to_image_block(b"definitely not an image")
