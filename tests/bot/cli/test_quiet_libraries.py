"""A camera that drops its stream makes OpenCV's FFmpeg print "[http @ 0x…] Stream ends prematurely at …" on stderr,
between the REPL's own lines (field test). The CLI quiets it as it quiets the other libraries; -v keeps it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bot.cli.main import QUIET_LIBRARIES
from tests.fakes.waits import patience
from tests.fixtures.mjpeg import flat_jpeg, mjpeg_camera

# As the CLI runs a camera in-process (the direct backend): its logging set up first, then OpenCV opens the stream.
READER = """
import sys
from bot.cli.main import _setup_logging
_setup_logging(int(sys.argv[2]))
import cv2
cap = cv2.VideoCapture(sys.argv[1], cv2.CAP_FFMPEG)
n = 0
while cap.read()[0]:
    n += 1
    if n == 3:
        print("reading", flush=True)
print("ended", n, flush=True)
"""


@pytest.mark.parametrize(("verbose", "shown"), [(0, False), (1, True)])
def test_a_dropped_camera_stream_prints_no_ffmpeg_line_unless_verbose(verbose: int, shown: bool) -> None:
    with mjpeg_camera([flat_jpeg(320, 240)], fps=10) as camera:
        env = {k: v for k, v in os.environ.items() if k not in QUIET_LIBRARIES}  # as a user's shell starts it
        proc = subprocess.Popen([sys.executable, "-c", READER, camera.url, str(verbose)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "reading"
            camera.away()  # the camera lost power mid-stream
            out, err = proc.communicate(timeout=patience(60))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert out.startswith("ended")
    assert ("Stream ends prematurely" in err) is shown, err
