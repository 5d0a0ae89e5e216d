"""Image helpers: media type sniffing, aspect-preserving resize to JPEG, base64 image blocks."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from bot.media.images import media_type_of, resize_jpeg, to_image_block
from bot.media.sniff import ImageHeader, ImageRejected, TooManyPixels, check_image


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


@pytest.mark.parametrize("fmt,media", [("BMP", "image/bmp"), ("TIFF", "image/tiff")])
def test_media_type_of_other_formats_tools_accept(fmt, media):
    assert media_type_of(encode(fmt)) == media


def test_a_riff_file_that_is_not_webp_is_not_an_image():
    assert media_type_of(b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00") is None  # a WAV (or AVI) header


def test_check_image_reads_the_size_without_decoding_and_enforces_the_limit(png_12000):
    assert check_image(encode("PNG", (40, 20))) == ImageHeader("image/png", 40, 20)
    with pytest.raises(TooManyPixels, match=r"^the upload is 12000×12000 \(144 MP\); the limit is 40 MP"):
        check_image(png_12000, 40_000_000, "the upload")
    assert check_image(png_12000, 200_000_000).pixels == 144_000_000  # an operator may allow more


def test_a_header_that_lies_about_its_format_is_refused():
    with pytest.raises(ImageRejected, match="not a readable PNG image"):
        check_image(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    with pytest.raises(ImageRejected, match="not a readable BMP image"):  # two magic bytes are not enough
        check_image(b"BM but really a text file")


def test_image_blocks_refuse_a_bomb_before_decoding(png_bomb, png_12000):
    with pytest.raises(ValueError, match="decompression bomb"):
        to_image_block(png_bomb)
    with pytest.raises(ValueError, match="144 MP"):  # over PIL's own 89 MP default when no limit is given
        resize_jpeg(png_12000)
