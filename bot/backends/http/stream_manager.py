"""The inference server's stream manager (the process that runs its hosted pipelines): on a port of its own, seen
listening before the server says it is ready, and watched after.

inference's stream manager binds STREAM_MANAGER_PORT (7070 unless set) and the server's pipeline API talks to
whatever answers there. Two servers on one machine with the default both aimed at 7070: the second's manager died on
the taken port while its server said it ran and passed every pipeline call to the first's manager, so every
pipeline landed there. Here each server process takes a free port of its own (unless STREAM_MANAGER_PORT pins one)
and checks that its own child, not another process, listens on it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

READY_TIMEOUT = 180.0  # seconds the manager has to listen (it imports the pipeline runtime first; slow on a busy box)
TRIES = 3  # ports tried when we pick them (another process may take a free port before the manager binds it)


class StreamManagerError(Exception):
    """The stream manager did not start; the message says what to do."""


@dataclass
class StreamManager:
    """The running manager: its process, its port, and whether its exit is expected (the server is stopping)."""

    process: Any  # multiprocessing.Process
    port: int
    stopping: threading.Event = field(default_factory=threading.Event)

    def stop(self) -> None:
        """SIGTERM (its pipelines drain), and if it has not ended within 10 s, its pipelines and it are killed."""
        self.stopping.set()
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout=10)
        if self.process.is_alive():
            _end_tree(self.process.pid, grace=0.0)
            self.process.kill()
            self.process.join(timeout=5)


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def configured_port() -> int | None:
    """STREAM_MANAGER_PORT when set (StreamManagerError when it is no port number)."""
    raw = os.environ.get("STREAM_MANAGER_PORT", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise StreamManagerError(f"STREAM_MANAGER_PORT={raw!r} is not a port: set a number from 1 to 65535, or unset "
                                 "it (each server then picks a free one)")
    return int(raw)


def start(configured: int | None, build: Callable[[], Any], timeout: float = READY_TIMEOUT) -> tuple[StreamManager, Any]:
    """Start the manager on `configured` or, unset, on a free port, and `build()` the server's app meanwhile (it reads
    the port); return both once the manager listens there (another free port if the picked one was taken in
    between, the app built again for it). StreamManagerError when it does not."""
    why = ""
    port = configured or 0
    for _ in range(1 if configured else TRIES):
        port = configured or free_port()
        manager = StreamManager(_spawn(port), port)
        app = build()
        why = listening(manager.process, port, timeout)
        if not why:
            return manager, app
        manager.stop()
    fix = ("set STREAM_MANAGER_PORT to a free port" if configured
           else "see the lines above; set STREAM_MANAGER_PORT to a free port to pin one")
    raise StreamManagerError(f"the stream manager (hosted pipelines) did not start on 127.0.0.1:{port}: {why}; {fix}")


def _spawn(port: int) -> Any:
    from multiprocessing import Process

    from inference.core.interfaces.stream_manager.manager_app.app import start as run_manager

    os.environ["STREAM_MANAGER_PORT"] = str(port)  # the server's pipeline API reads it when the app is built
    module: Any = sys.modules[run_manager.__module__]
    module.PORT = port  # read once at its import: a second try sets it again
    process = Process(target=_run, name="stream-manager")
    process.start()
    return process


def _run() -> None:
    """The manager process: it ends with the server, however the server ends (kill -9 too), instead of running on
    with its pipelines and its port."""
    from inference.core.env import STREAM_API_PRELOADED_PROCESSES
    from inference.core.interfaces.stream_manager.manager_app.app import start as run_manager

    threading.Thread(target=_end_with, args=(os.getppid(),), name="end-with-server", daemon=True).start()
    run_manager(expected_warmed_up_pipelines=STREAM_API_PRELOADED_PROCESSES)


def _end_with(server: int) -> None:
    """In the manager: once the server is gone, end its pipeline processes and itself. A thread of our own, not
    inference's SIGTERM handler, which joins each pipeline under a lock a request may hold and can wait for good."""
    while os.getppid() == server:
        time.sleep(1.0)
    _end_tree(os.getpid())
    os._exit(0)


def _end_tree(pid: int, grace: float = 5.0) -> None:
    """SIGTERM to every process under `pid` (a pipeline drains its video), SIGKILL to what is left after `grace`."""
    import psutil

    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.terminate()
    _, left = psutil.wait_procs(children, timeout=grace)
    for child in left:
        with contextlib.suppress(psutil.Error):
            child.kill()


def listening(process: Any, port: int, timeout: float) -> str:
    """'' once `process` itself listens on `port`; else why not (it exited, or it did not in time)."""
    import psutil  # inference's own dependency (its stream manager uses it): installed with it

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.is_alive():
            return f"it exited with code {process.exitcode} (the port may be taken)"
        try:
            conns = psutil.Process(process.pid).net_connections("tcp")
        except psutil.Error:
            conns = []
        if any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in conns):
            return ""
        time.sleep(0.2)
    return f"it did not listen within {timeout:.0f} s"


def watch(manager: StreamManager) -> threading.Thread:
    """Say it in one line when the manager exits while the server runs, and end the pipeline processes it leaves
    behind (they would go on reading their cameras for nobody). The server's pipeline calls then fail (HTTP 500,
    ConnectivityError), so clients place no pipeline here and move theirs to another server."""

    def wait() -> None:
        import psutil

        known: list[Any] = []  # its pipeline processes as last seen (psutil checks a pid is still the same process)
        while manager.process.is_alive():
            with contextlib.suppress(psutil.Error):
                known = psutil.Process(manager.process.pid).children(recursive=True)
            manager.process.join(timeout=2.0)
        if manager.stopping.is_set():
            return
        left = 0
        for child in known:
            with contextlib.suppress(psutil.Error):
                child.terminate()
                left += 1
        print(f"the stream manager (pid {manager.process.pid}, port {manager.port}) exited with code "
              f"{manager.process.exitcode}, {left} pipeline process(es) it left ended: this server runs no pipelines "
              "any more (clients move theirs to another server); restart `vision-agent inference-server`",
              file=sys.stderr, flush=True)

    thread = threading.Thread(target=wait, name="stream-manager-watch", daemon=True)
    thread.start()
    return thread
