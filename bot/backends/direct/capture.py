"""The video source a direct pipeline opens: OpenCV's, with frames over `media.max_pixels` scaled at decode.

InferencePipeline queues decoded frames (decoder queue, results queue, each frame with its drawn copy: frames.py),
so what one frame weighs is multiplied: a 12000x12000 MJPEG camera (432 MB a frame) took one pipeline to 4 GB
(test_frame_bound.py's loopback camera: +2.1 GB within a minute, now +0.15 GB at a 10 MP limit).
Here frames are bounded where they are decoded (bot/media/frame_limit.py says to what size):

- JPEG frames (MJPEG cameras and files) are not decoded by FFmpeg at all, whatever size the source declares when it
  is opened: OpenCV hands over each compressed frame (its raw-stream mode), its own header says its size (a few
  bytes read: jpeg_size), and libjpeg decodes it at the scale that size needs: whole when within the limit, else
  straight at 1/2, 1/4 or 1/8. So a camera that raises its resolution after it connects is bounded from its next
  frame, and one that lowers it is decoded whole again. (Deciding once, from the declared size, let FFmpeg decode
  each later 12000x12000 frame whole and squash it to the first size: a pipeline on a camera that opened at 640x480
  took +0.25 GB of peak RSS at a 10 MP limit, and nobody was told; now +0.12-0.15 GB, as for one huge from the
  start.) No full-size frame over the limit ever exists, and frames the source drops (a live source keeps only the
  newest) are not decoded either.
- Any other codec's frame (and a JPEG one where OpenCV cannot hand over compressed frames: not its FFmpeg backend)
  is resized right after its decode, frame by frame: the decoder's own full-size buffers remain (one frame,
  whatever the queue depths), but nothing queued is ever larger than the limit.

Each size the frames take over the limit is told to the pipeline (and their return under it), not each frame:
`FrameSizes`, one per source, so a reconnection does not say it again.

InferencePipeline takes a callable as its video reference and calls it for each (re)connection: `BoundedSource`.
Given the pipeline's CameraWatch, it also tells it each frame that comes (a video loss is no frame for a while) and
each (re)connection tried, and waits the watch's backoff before each (bot/backends/faults/link.py): streamvision
alone tries a camera that is away every second, forever.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from bot.backends.faults.watch import CameraWatch
from bot.media.frame_limit import divisor, jpeg_size, scaled

log = logging.getLogger(__name__)
# FFmpeg's names for JPEG-per-frame video (CAP_PROP_FOURCC: the container's tag, else the codec's name cut to 4).
JPEG_FOURCCS = frozenset({"MJPG", "mjpe", "jpeg", "AVRn", "mjpa", "dmb1"})
_REDUCED = {1: "IMREAD_COLOR", 2: "IMREAD_REDUCED_COLOR_2", 4: "IMREAD_REDUCED_COLOR_4", 8: "IMREAD_REDUCED_COLOR_8"}
ScaledListener = Callable[[int, int], None]  # (width, height) the source sends now: over the limit, scaled
# Undecodable compressed frames in a row skipped before the stream is taken as ended (FFmpeg skips a frame it cannot
# decode too; a source of nothing else ends).
MAX_BAD_FRAMES = 16


class FrameSizes:
    """The size of a source's frames, frame by frame; the listener hears each change to a size over the limit, and
    the change back under it (a camera that never goes over the limit is never heard of)."""

    def __init__(self, max_pixels: int, on_scaled: ScaledListener) -> None:
        self.max_pixels, self.on_scaled = max_pixels, on_scaled
        self.size: tuple[int, int] | None = None
        self._over = False  # the listener last heard of a size over the limit

    def seen(self, size: tuple[int, int]) -> None:
        if size == self.size:
            return
        self.size = size
        over = size[0] * size[1] > self.max_pixels
        if over or self._over:
            self._over = over
            self.on_scaled(*size)


class BoundedSource:
    """The reference InferencePipeline opens: each call opens the source anew as a BoundedProducer.

    str() is the reference, which is what streamvision logs and puts in its errors (redacted by the pipeline).
    """

    def __init__(self, reference: str | int, max_pixels: int, on_scaled: ScaledListener,
                 watch: CameraWatch | None = None) -> None:
        self.reference, self.max_pixels = reference, max_pixels
        self.sizes = FrameSizes(max_pixels, on_scaled)  # across reconnections: a size is said once, not per open
        self.watch = watch

    def __call__(self) -> Any:
        watch = self.watch
        if watch is not None and not watch.link.wait_turn():  # the backoff; False: the pipeline is stopping
            return _Closed("the pipeline stopped")
        producer: BoundedProducer | _Closed
        try:
            producer = BoundedProducer(self.reference, self.max_pixels, self.sizes.on_scaled, self.sizes, watch)
        except Exception as exc:  # noqa: BLE001 - an open that fails is retried, never the end of a live source
            log.warning("the video source could not be opened: %s", type(exc).__name__)  # no reference: a password
            producer = _Closed(str(exc))
        if watch is not None:
            watch.link.tried(producer.isOpened(), "" if producer.isOpened() else producer.connection_error_message())
        return producer

    def __str__(self) -> str:
        return str(self.reference)


class BoundedProducer:
    """streamvision's OpenCV frame producer (the one InferencePipeline uses for a plain reference), bounded.

    Built by delegation, not inheritance, so importing this module does not import inference (seconds).
    """

    def __init__(self, reference: str | int, max_pixels: int, on_scaled: ScaledListener,
                 sizes: FrameSizes | None = None, watch: CameraWatch | None = None) -> None:
        import cv2
        from streamvision.camera.video_source import CV2VideoFrameProducer

        self._inner = CV2VideoFrameProducer(reference)
        self._watch = watch
        self._max_pixels = max_pixels
        self._sizes = sizes or FrameSizes(max_pixels, on_scaled)
        self._raw = False
        if not self._inner.isOpened():
            return
        stream = self._inner.stream
        width, height = int(stream.get(cv2.CAP_PROP_FRAME_WIDTH)), int(stream.get(cv2.CAP_PROP_FRAME_HEIGHT))
        fourcc = (int(stream.get(cv2.CAP_PROP_FOURCC)) & 0xFFFFFFFF).to_bytes(4, "little").decode("latin-1")
        if width > 0 and height > 0:
            self._sizes.seen((width, height))  # over the limit: said at once, the pipeline's start already knows
        # JPEG frames are taken compressed whatever the declared size, so each is decoded at the scale its own
        # header needs: the size a camera declares when opened need not be the size it sends later.
        if fourcc in JPEG_FOURCCS:  # -1: OpenCV's raw mode (FFmpeg backend only; set before the first grab)
            self._raw = bool(stream.set(cv2.CAP_PROP_FORMAT, -1))

    # --- what VideoSource calls --------------------------------------------------------------------------------

    def isOpened(self) -> bool:  # noqa: N802 - streamvision's producer interface
        return bool(self._inner.isOpened())

    def grab(self) -> bool:
        got = bool(self._inner.grab())  # raw mode: reads the next packet, decodes nothing
        if got and self._watch is not None:  # a frame came, decoded or not (a live source drops what it cannot use)
            self._watch.arrived()
        return got

    def retrieve(self) -> tuple[bool, Any]:
        ok, image = self._inner.retrieve()
        if not ok or image is None:
            return False, None
        if not self._raw:
            return True, self._fit(image)
        for _ in range(MAX_BAD_FRAMES):
            image = self._decode_jpeg(image)
            if image is not None:
                return True, image
            if not self._inner.grab():  # skipped, as FFmpeg skips a frame it cannot decode
                return False, None
            ok, image = self._inner.retrieve()
            if not ok or image is None:
                return False, None
        log.warning("%d compressed frames in a row could not be decoded: the stream ends", MAX_BAD_FRAMES)
        return False, None

    def release(self) -> None:
        self._inner.release()

    def initialize_source_properties(self, properties: dict[str, Any]) -> None:
        self._inner.initialize_source_properties(properties)

    def discover_source_properties(self) -> Any:
        """The source's properties, with the size of the frames it is given (scaled when over the limit)."""
        props = self._inner.discover_source_properties()
        if props.width <= 0 or props.height <= 0:
            return props
        k = divisor(props.width, props.height, self._max_pixels)
        return dataclasses.replace(props, width=scaled(props.width, k), height=scaled(props.height, k))

    def connection_error_message(self) -> str:
        return str(self._inner.connection_error_message())

    # --- bounding ----------------------------------------------------------------------------------------------

    def _decode_jpeg(self, packet: Any) -> Any:
        """One compressed frame, decoded at the scale its own header needs (None if it is not a JPEG or libjpeg
        cannot decode it)."""
        import cv2
        import numpy as np

        data = np.ascontiguousarray(packet).reshape(-1)
        size = jpeg_size(data.data)  # the array's own buffer: nothing copied
        if size is None:
            log.debug("a compressed frame is not a JPEG: skipped")  # no reference: it may hold a password
            return None
        self._sizes.seen(size)
        k = divisor(*size, self._max_pixels)
        flags = getattr(cv2, _REDUCED[min(k, 8)]) | cv2.IMREAD_IGNORE_ORIENTATION  # as FFmpeg: no EXIF turn
        image = cv2.imdecode(data, flags)
        if image is None:
            return None
        return self._resized(image, size, k)

    def _fit(self, image: Any) -> Any:
        """A decoded frame, resized to the limit's scale if it is over it."""
        height, width = image.shape[:2]
        self._sizes.seen((width, height))
        return self._resized(image, (width, height), divisor(width, height, self._max_pixels))

    def _resized(self, image: Any, size: tuple[int, int], k: int) -> Any:
        if k == 1:
            return image
        import cv2

        target = (scaled(size[0], k), scaled(size[1], k))
        if (image.shape[1], image.shape[0]) != target:  # a decoded frame, or past JPEG's own 1/8
            image = cv2.resize(image, target, interpolation=cv2.INTER_AREA)
        return image


class _Closed:
    """A source that did not open (the open raised, or the pipeline is stopping): streamvision sees a connection
    error and tries again, as for a camera that refused, instead of ending the pipeline."""

    def __init__(self, message: str) -> None:
        self._message = message

    def isOpened(self) -> bool:  # noqa: N802 - streamvision's producer interface
        return False

    def connection_error_message(self) -> str:
        return self._message

    def grab(self) -> bool:
        return False

    def retrieve(self) -> tuple[bool, Any]:
        return False, None

    def release(self) -> None:
        pass

    def initialize_source_properties(self, properties: dict[str, Any]) -> None:
        pass

    def discover_source_properties(self) -> Any:
        raise RuntimeError(self._message)
