"""What decoded frames one direct pipeline may hold: queue depths from a byte budget, and freed frames returned."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

from bot.media.sources import file_frame_size, is_live

log = logging.getLogger(__name__)
LIVE_FRAME = (1920, 1080)  # a live source's size is unknown until it opens: budget for a 1080p main stream
MAX_DEPTH = 64  # InferencePipeline's own default decoder depth: a bigger budget never queues more
# Frames one step of queue depth holds: a decoded frame in the decoder's queue, and in the predictions queue (results
# waiting for the dispatcher) the frame with its drawn copy.
FRAMES_PER_DEPTH = 3
# Never less: a file pipeline (WAIT/LAZY) with one-frame queues never ends when asked (inference 1.8.3; a direct
# 1080p file hung its stop for good, and a server's ignored its terminate request), whatever the budget says.
MIN_DEPTH = 2
_M_MMAP_THRESHOLD = -3  # glibc mallopt parameter
MMAP_THRESHOLD = 128 * 1024  # glibc's default, pinned: a frame (640x480: 900 KB) is always mmapped
_released = False


def queue_depth(budget_bytes: int, reference: str) -> int:
    """Depth of a pipeline's two queues (decoded frames, results) so together they stay within budget_bytes, and
    at least MIN_DEPTH (a 1080p or bigger source then goes over the budget rather than hang).

    A file's frame size is read from the file; a live source is budgeted as 1080p (a sub-stream then queues
    fewer frames than it could).
    """
    size = None if is_live(reference) else file_frame_size(reference)
    width, height = size or LIVE_FRAME
    return max(MIN_DEPTH, min(MAX_DEPTH, budget_bytes // (FRAMES_PER_DEPTH * width * height * 3)))


def return_freed_frames() -> None:
    """Make freed frames go back to the OS at once (glibc only; once per process).

    glibc raises its mmap threshold to the size of the largest block freed, so after the first frame is freed every
    later frame comes from the heap of whichever thread decoded it; each pipeline's threads then keep their own
    heaps of frame-sized holes. Pinning the threshold keeps frames mmapped, so a freed frame is unmapped (bench
    cameras, 1 -> 8 VGA cameras of builtin/people: +35 MB RSS per added camera without it, +27 MB with it).
    """
    global _released
    if _released or not sys.platform.startswith("linux"):
        return
    _released = True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        if not libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD):
            log.debug("mallopt refused the mmap threshold")
    except (OSError, AttributeError):  # not glibc (musl has no mallopt): its allocator keeps its own policy
        log.debug("no mallopt here: frames are freed the allocator's way")
