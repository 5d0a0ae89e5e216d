"""Which process runs a saved pipeline, and active_state.json written by several processes without losing any."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from bot.pipelines.state import PipelineConfig, load_state, save_state


def _start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (clock ticks since boot, /proc), or None where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22; the name in parentheses may hold spaces


def process_tag(pid: int | None = None) -> str:
    """`pid:start`: a pid alone could be reused by another program after the bot died."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{_start_time(pid) or ''}"


def alive(tag: str | None) -> bool:
    """True when the process that wrote `tag` is still running (the same pid, started at the same moment)."""
    if not tag:
        return False
    pid_text, _, start = tag.partition(":")
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # another user's process: it exists
        pass
    return _start_time(pid) == start if start else True


def runs_elsewhere(cfg: PipelineConfig) -> bool:
    """Saved by another process that is still running it: not for this one to restore."""
    return cfg.process is not None and cfg.process.split(":")[0] != str(os.getpid()) and alive(cfg.process)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive flock beside the file: read, merge and write are one step for every process."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def save_mine(path: Path, mine: list[PipelineConfig]) -> None:
    """Write this process's pipelines into `path`, keeping every entry another process saved.

    An entry of this process that is not in `mine` was stopped or finished here and goes; one of another process
    stays whether it runs or died (the next long-running start restores it)."""
    me = process_tag()
    for cfg in mine:
        cfg.process = me
    ids = {c.pipeline_id for c in mine}
    own = str(os.getpid())
    with _locked(path):
        kept = [c for c in load_state(path) if c.pipeline_id not in ids
                and (c.process or "").split(":")[0] != own]  # None: saved before processes were recorded
        save_state(path, [*kept, *mine])
