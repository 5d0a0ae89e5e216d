"""Video frames within `media.max_pixels`, as stills are: the size a frame over it is scaled to, and the one line
that says so.

A still over the limit is refused before it is decoded (sniff.check_image). A camera cannot be refused frame by
frame without stopping it, so its frames are decoded smaller instead: at 1/2, 1/4, 1/8… of each side, the first
of those within the limit. Halvings, because a JPEG (an MJPEG camera's frames) decodes straight at those scales
(libjpeg's reduced decode: no full-size frame ever exists); any other codec's frame is resized to the same size
right after its decode (bot/backends/direct/capture.py). One 12000x12000 MJPEG camera took a pipeline to 4 GB.
"""

from __future__ import annotations

from bot.media.sniff import megapixels

MAX_HALVINGS = 16  # 1/65536: past any frame a codec can describe
# Sizes over the limit said (logged, alerted) per pipeline: a camera may change size after it connects, and each new
# size is said once; one that keeps changing is not a stream of alerts.
SAID_SIZES = 16
# Frame headers (SOF0..SOF15); C4 (Huffman tables), C8 (reserved) and CC (arithmetic conditioning) share the range.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})  # markers with no length field (TEM, RST0..7)


def scaled(side: int, divisor: int) -> int:
    """One side decoded at 1/divisor: rounded up, as libjpeg's reduced decode rounds."""
    return -(-side // divisor)


def divisor(width: int, height: int, max_pixels: int) -> int:
    """1 for a width x height frame within max_pixels, else the smallest power of two whose scale is within it."""
    k = 1
    while scaled(width, k) * scaled(height, k) > max_pixels and k < 1 << MAX_HALVINGS:
        k *= 2
    return k


def bounded_size(width: int, height: int, max_pixels: int) -> tuple[int, int]:
    """(width, height) of the frames a pipeline gets from a source whose frames are width x height."""
    k = divisor(width, height, max_pixels)
    return scaled(width, k), scaled(height, k)


def scaled_note(width: int, height: int, max_pixels: int, live: bool = True) -> str | None:
    """The one line saying a source's frames are scaled and what to do, or None for frames within the limit:
    'the camera sends 12000×12000 frames (144 MP), over media.max_pixels (40 MP): frames are scaled to 6000×6000
    (36 MP); lower the camera's resolution or raise media.max_pixels'."""
    if width * height <= max_pixels:
        return None
    w, h = bounded_size(width, height, max_pixels)
    sends, fix = ("the camera sends", "lower the camera's resolution") if live else ("the video has", "use a smaller video")
    return (f"{sends} {width}×{height} frames ({megapixels(width * height)}), over media.max_pixels "
            f"({megapixels(max_pixels)}): frames are scaled to {w}×{h} ({megapixels(w * h)}); {fix} or raise "
            "media.max_pixels")


def jpeg_size(data: bytes | memoryview) -> tuple[int, int] | None:
    """(width, height) from a JPEG's frame header (nothing decoded), or None if data is not a JPEG with one.

    `data` may be any C-contiguous buffer (an OpenCV raw packet too); only its header is read.
    """
    view = memoryview(data).cast("B")
    n = len(view)
    if n < 4 or view[0] != 0xFF or view[1] != 0xD8:
        return None
    i = 2
    while i + 4 <= n:
        if view[i] != 0xFF:
            return None
        marker = view[i + 1]
        if marker == 0xFF:  # fill byte before a marker
            i += 1
            continue
        if marker in _STANDALONE:
            i += 2
            continue
        if marker == 0xDA or marker == 0xD9:  # scan data or the end, and no frame header before them
            return None
        if marker in _SOF:
            if i + 9 > n:
                return None
            height, width = view[i + 5] << 8 | view[i + 6], view[i + 7] << 8 | view[i + 8]
            return (width, height) if width and height else None
        i += 2 + (view[i + 2] << 8 | view[i + 3])
    return None


def decoded_whole(width: int, height: int, max_pixels: int, backend: str, live: bool = True) -> str | None:
    """Why a source of width x height frames is refused on a backend that decodes every frame whole elsewhere (an
    inference server cannot be told to scale them), with what to do; None for frames within the limit."""
    if width * height <= max_pixels:
        return None
    sends, fix = ("the camera sends", "lower the camera's resolution") if live else ("the video has", "use a smaller video")
    return (f"{sends} {width}×{height} frames ({megapixels(width * height)}), over media.max_pixels "
            f"({megapixels(max_pixels)}), and the {backend} backend decodes every frame whole: {fix}, raise "
            "media.max_pixels, or start it with backend=direct, which scales such frames to fit")
