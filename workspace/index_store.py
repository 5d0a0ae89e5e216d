"""The memory index's files under .index/: a log of changes and a vector file, both only ever appended to, so one
new note costs one line and one row however many notes there are.

- `memory_log.jsonl`: a header line (format, model, epoch, vector file name), then one JSON line per change: a
  memory file's new chunks (rows numbered on from `first`) and the rows it dropped, the vectors' width once known,
  rows embedded after they were added.
- `memory_vectors-<epoch>.f32`: row i's float32 vector at byte i * width * 4 (zeros until embedded).

A change writes its vectors first, then its line: a crash between them (or mid-line) leaves a tail the next start
detects (a torn or unparseable line, rows the vector file does not hold, a row count that does not follow on) and
cuts off; the memory files it covered then look changed and are read again (stored data never stops start-up).
`rewrite` writes the live rows afresh under a new epoch (when many rows are dead, or to move a store from the old
format): the new vector file first, then the log replaced atomically, so a crash leaves the old store or the new one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workspace.atomic import write_atomic
from workspace.chunking import Chunk, file_date

log = logging.getLogger(__name__)

LOG_FILE = "memory_log.jsonl"
FORMAT = 2
MAX_WIDTH = 8_192  # wider is a damaged line, not a sentence model


@dataclass
class Loaded:
    """What a log replays to: per memory file its signature and rows; every row's chunk (dropped ones too)."""

    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {"mtime_ns", "size", "rows"}
    chunks: list[Chunk] = field(default_factory=list)
    alive: list[bool] = field(default_factory=list)
    embedded: list[bool] = field(default_factory=list)
    vectors: np.ndarray | None = None  # (at least rows, width) float32 when the width is known


@dataclass
class Change:
    """One memory file's change: its new signature (None: the file is gone), the chunks added, the rows dropped."""

    name: str
    mtime_ns: int | None
    size: int | None
    add: list[Chunk]
    drop: list[int]


def _chunk(name: str, row: list[Any]) -> Chunk:
    text, section, audience = row
    return Chunk(str(text), name, file_date(name), section, str(audience))


class Store:
    """One index's log and vector file; `rows` and `width` say what they hold."""

    def __init__(self, directory: Path, model: str | None) -> None:
        self.dir, self.model = directory, model
        self.epoch = ""
        self.width: int | None = None
        self.rows = 0
        self._log_bytes = 0  # the log's size after our last read or write: more means another writer

    @property
    def log_path(self) -> Path:
        return self.dir / LOG_FILE

    @property
    def vector_path(self) -> Path:
        return self.dir / f"memory_vectors-{self.epoch}.f32"

    # reading ---------------------------------------------------------------------------------------------------
    def load(self) -> Loaded | None:
        """The replayed store; None when there is none in this format, or its header is unreadable or for another
        model (then the index is built again from the notes). A damaged tail is cut off and said once."""
        try:
            raw = self.log_path.read_bytes()
        except FileNotFoundError:
            return None
        lines = raw.split(b"\n")
        try:
            head = json.loads(lines[0])
            if head.get("format") != FORMAT or not isinstance(head.get("epoch"), str):
                raise ValueError(f"unknown header {lines[0][:80]!r}")
        except (ValueError, AttributeError, RecursionError) as exc:
            log.warning("memory index log unreadable (%s); rebuilding it from the notes", exc)
            return None
        if head.get("model") != self.model:
            return None  # vectors of another model: every note is embedded again
        self.epoch, self.width = head["epoch"], None
        out = Loaded()
        try:
            have = self.vector_path.stat().st_size
        except FileNotFoundError:
            have = 0
        good = len(lines[0]) + 1
        bad = ""
        for line in lines[1:-1]:  # the last piece follows the last newline: empty unless a line was torn
            try:
                self._apply(json.loads(line), out, have)
            except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
                bad = str(exc)
                break
            good += len(line) + 1
        if not bad and lines[-1]:
            bad = "a line cut short"
        self.rows = len(out.chunks)
        if bad:
            log.warning("memory index: its last changes were cut short (%s); rebuilding them from the notes", bad)
            with contextlib.suppress(OSError):
                os.truncate(self.log_path, good)
        self._log_bytes = min(good, len(raw))
        if self.width is not None and self.rows:
            row_bytes = self.width * 4
            if have > self.rows * row_bytes:  # a change's vectors written, its line not: cut them off
                with contextlib.suppress(OSError):
                    os.truncate(self.vector_path, self.rows * row_bytes)
            # an eighth spare room: the next notes land without copying every vector
            out.vectors = np.zeros((self.rows + self.rows // 8 + 64, self.width), dtype=np.float32)
            with open(self.vector_path, "rb") as fh:
                got = fh.readinto(memoryview(out.vectors[: self.rows]).cast("B"))
            if got != self.rows * self.width * 4:
                raise ValueError("vector file shorter than its rows")
        return out

    def _apply(self, rec: dict[str, Any], out: Loaded, have: int) -> None:
        """One log line into `out`; raises when it does not follow on from the lines before it."""
        if "width" in rec:
            width = int(rec["width"])
            if not 0 < width <= MAX_WIDTH or (self.width is not None and width != self.width):
                raise ValueError(f"vector width {width}")
            if have < len(out.chunks) * width * 4:
                raise ValueError("vector file shorter than its rows")
            self.width = width
            return
        if "embedded" in rec:
            rows = [int(r) for r in rec["embedded"]]
            if self.width is None or any(not 0 <= r < len(out.chunks) for r in rows):
                raise ValueError("embedded rows out of range")
            for r in rows:
                out.embedded[r] = True
            return
        name, first = str(rec["f"]), int(rec["first"])
        if first != len(out.chunks):
            raise ValueError(f"rows from {first}, expected {len(out.chunks)}")
        added = [_chunk(name, row) for row in rec["add"]]
        end = first + len(added)
        if self.width is not None and have < end * self.width * 4:
            raise ValueError("vector file shorter than its rows")
        dropped = {int(r) for r in rec["drop"]}
        old = out.files.get(name, {"rows": []})["rows"]
        if not dropped <= set(old):
            raise ValueError("dropped rows not the file's")
        flags = rec.get("v", 0)
        flags = [bool(flags)] * len(added) if not isinstance(flags, list) else [bool(f) for f in flags]
        if len(flags) != len(added):
            raise ValueError("embedded flags do not match the rows")
        for r in dropped:
            out.alive[r] = False
        out.chunks.extend(added)
        out.alive.extend([True] * len(added))
        out.embedded.extend(flags)
        if rec.get("m") is None:
            out.files.pop(name, None)
        else:
            out.files[name] = {"mtime_ns": int(rec["m"]), "size": int(rec["s"]),
                               "rows": [r for r in old if r not in dropped] + list(range(first, end))}

    # writing ---------------------------------------------------------------------------------------------------
    def append(self, changes: list[Change], vectors: np.ndarray | None, embedded: list[bool],
               width: int | None, late: dict[int, np.ndarray]) -> bool:
        """Append the changes (their added rows in order; `vectors` one row each, zeros where not embedded), and
        `late`: earlier rows embedded now. False when the log is not as we left it (another process wrote to it)
        or there is no log: the caller rewrites the whole store instead."""
        if not self.epoch:
            return False
        try:
            if self.log_path.stat().st_size != self._log_bytes:
                return False
        except FileNotFoundError:
            return False
        lines: list[str] = []
        if width is not None and self.width is None:  # the first vectors: every earlier row gets its zero slot
            self.width = width
            self._write_rows(0, np.zeros((self.rows, width), dtype=np.float32))
            lines.append(json.dumps({"width": width}))
        first, count = self.rows, sum(len(ch.add) for ch in changes)
        if self.width is not None and count:
            self._write_rows(first, vectors if vectors is not None else np.zeros((count, self.width), np.float32))
        for r, vec in late.items():
            self._write_rows(r, vec[None, :])
        at = 0
        for ch in changes:
            flags = embedded[at:at + len(ch.add)]
            lines.append(json.dumps({
                "f": ch.name, "m": ch.mtime_ns, "s": ch.size, "first": first + at,
                "add": [[c.text, c.section, c.audience] for c in ch.add], "drop": ch.drop,
                "v": 1 if all(flags) else ([int(f) for f in flags] if any(flags) else 0)}))
            at += len(ch.add)
        if late:
            lines.append(json.dumps({"embedded": sorted(late)}))
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        with open(self.log_path, "ab") as fh:
            fh.write(data)
        self._log_bytes += len(data)
        self.rows = first + at
        return True

    def _write_rows(self, first: int, vectors: np.ndarray) -> None:
        assert self.width is not None
        mode = "r+b" if self.vector_path.exists() else "wb"
        with open(self.vector_path, mode) as fh:
            fh.seek(first * self.width * 4)
            fh.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())

    def rewrite(self, files: dict[str, dict[str, Any]], chunks: list[Chunk], embedded: list[bool],
                vectors: np.ndarray | None) -> None:
        """A fresh store of exactly these rows (every one live) under a new epoch; older files removed."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.epoch, self.width = secrets.token_hex(8), (vectors.shape[1] if vectors is not None else None)
        lines = [json.dumps({"format": FORMAT, "model": self.model, "epoch": self.epoch})]
        if vectors is not None:
            with open(self.vector_path, "wb") as fh:
                fh.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
                fh.flush()
                os.fsync(fh.fileno())
            lines.append(json.dumps({"width": self.width}))
        at = 0
        for name in sorted(files):
            rows = files[name]["rows"]
            if rows != list(range(at, at + len(rows))):
                raise ValueError("rewrite needs the rows file by file, in file name order")
            flags = [embedded[r] for r in rows]
            lines.append(json.dumps({
                "f": name, "m": files[name]["mtime_ns"], "s": files[name]["size"], "first": at,
                "add": [[chunks[r].text, chunks[r].section, chunks[r].audience] for r in rows], "drop": [],
                "v": 1 if all(flags) else ([int(f) for f in flags] if any(flags) else 0)}))
            at += len(rows)
        data = "".join(line + "\n" for line in lines)
        write_atomic(self.log_path, data)
        self._log_bytes, self.rows = len(data.encode("utf-8")), len(chunks)
        for p in self.dir.glob("memory_vectors*"):  # the previous epoch's vectors, the old format's, strays
            if p != self.vector_path:
                with contextlib.suppress(OSError):
                    p.unlink()
