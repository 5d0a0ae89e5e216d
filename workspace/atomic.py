"""Files that survive kill -9: written whole to a temp file, flushed to disk, then renamed over the old one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: str | bytes, keep_previous: bool = False) -> None:
    """Replace `path` with `data` so a reader, or the next start after a crash, sees the old file or the new one,
    never a half-written one. keep_previous: the replaced version stays as `<name>.bak` (a hard link, no copy),
    the last good state to fall back on if the file is ever damaged from outside."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        if keep_previous and path.exists():
            bak, bak_tmp = path.with_name(path.name + ".bak"), path.with_name(f".{path.name}.bak.tmp")
            with contextlib.suppress(FileNotFoundError):
                bak_tmp.unlink()
            with contextlib.suppress(OSError):  # a file system without hard links keeps no .bak: still atomic
                os.link(path, bak_tmp)
                os.replace(bak_tmp, bak)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # the rename itself reaches the disk with its directory
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
