"""The one long-running process of a workspace: an exclusive flock on `.state/owner.lock`, released by the OS when
its holder exits or dies (kill -9 included)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from workspace.files import WorkspaceError


class WorkspaceBusy(WorkspaceError):
    """Another live process runs this workspace; str() names its pid and what to do."""


class OwnerLock:
    """`take()` or `wait()`, then `release()` (idempotent). The holder's pid is written into the file for the
    message a second process prints; the lock itself, not that text, decides."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / "owner.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_take(self) -> bool:
        """True when this process now holds the workspace (or already did)."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return True

    def held_elsewhere(self) -> str | None:
        """The holder's pid when another live process runs this workspace, else None (a probe: taken and let go)."""
        if self._fd is not None:
            return None
        if self.try_take():
            self.release()
            return None
        return self.holder()

    def holder(self) -> str:
        """The pid the holder wrote ('unknown' while it is still writing it)."""
        try:
            return self.path.read_text().strip() or "unknown"
        except OSError:
            return "unknown"

    def busy(self, root: Path) -> WorkspaceBusy:
        return WorkspaceBusy(
            f"workspace {root} is run by another vision-agent (pid {self.holder()}); stop it first, use "
            "`vision-agent chat -m` beside it, or start this one with --standby to take over when it exits")

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)  # closing drops the flock
