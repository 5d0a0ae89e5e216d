"""A hosted pipeline whose live camera went away is started again on its server, until the camera answers.

inference's stream manager ends a server-side pipeline once its camera refuses a reconnection (a 5 fps MJPEG camera
away for two seconds: the pipeline's process gone, consume answering 404), where the same InferencePipeline in this
process reconnects for as long as it takes. A live source never ends, so the poller starts it again with the launch
it keeps, after the camera watch's backoff (bot/backends/faults/link.py: 1 s, 2 s, … at most 15 s), each try said on
the status line (`reconnecting, try 3: …`); a file that ends has finished.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from bot.backends.faults.watch import CameraWatch
from bot.media.sources import is_live

log = logging.getLogger(__name__)


class Reopenable(Protocol):
    """What reopen() needs of a hosted pipeline."""

    backend: Any
    name: str
    url: str
    launch: dict | None
    frames: int
    watch: CameraWatch

    def stopping(self) -> bool: ...

    def reopened(self, server_id: str) -> None: ...


def camera_gone(pipe: Reopenable, exc: BaseException, reference: str) -> bool:
    """Whether the server ended the pipeline of a live camera that had given frames (its camera went away)."""
    return getattr(exc, "status_code", None) == 404 and pipe.frames > 0 and is_live(reference) and bool(pipe.launch)


def reopen(pipe: Reopenable) -> bool:
    """Start it again on its server until that takes (True), or the pipeline is stopped (False)."""
    link = pipe.watch.link
    while not pipe.stopping():
        if not link.wait_turn():
            return False
        try:
            server_id = pipe.backend.launch_on(pipe.url, pipe.launch)
        except Exception as exc:  # noqa: BLE001 - the camera still away (the server cannot open it): try again
            link.tried(False, str(getattr(exc, "api_message", None) or exc))
            log.debug("pipeline %s: not started again yet: %s", pipe.name, type(exc).__name__)
            continue
        link.tried(True)
        if pipe.stopping():  # stopped meanwhile: end the copy just started
            pipe.backend.end_on(pipe.url, server_id)
            return False
        pipe.reopened(server_id)
        log.info("pipeline %s: started again on its server (its camera had gone away)", pipe.name)
        return True
    return False
