"""What the webhook still owes its receiver: every event-log id after the last one delivered, in id order.

A bounded few wait in memory (`webhook.queue_size`), with the alert itself (frame, clip) when the router handed it
over; the rest are read back from the event log when their turn comes, so a slow or dead receiver costs disk, not
memory, and loses nothing the log still holds. The id delivered last is kept in `.state/webhook_cursor.json`: a
restart resumes after it. Memory holds a contiguous run of ids (cursor+1 … tail): an event heard out of that run
(memory full, or its thread's call came late) is read from the log in its turn instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.storage import records
from workspace.atomic import DAMAGED, keep_aside, load_json, write_atomic

if TYPE_CHECKING:
    from bot.monitoring.alert import Alert
    from bot.monitoring.events_log import EventLog

log = logging.getLogger(__name__)

ALERT_WAIT = 60.0  # seconds a posted alert's event waits for the alert itself (its clip is cut first); then the record
HELD_WAIT = 2.0  # seconds a held event with a frame waits for its frame (webhook.inline_frames)


@dataclass
class Pending:
    """One event owed: its log record, the alert when the router handed it over, and until when it waits for it."""

    seq: int
    event: dict[str, Any]
    alert: Alert | None = None
    wait_until: float = 0.0  # 0: ready now
    dropped: int = 0  # ids before it that were no longer in the log when it was read (trimmed)

    def ready(self, now: float) -> bool:
        return self.alert is not None or now >= self.wait_until


class Backlog:
    """The owed events (on the event loop; `refill` reads the log in a thread)."""

    def __init__(self, size: int, events: EventLog | None, cursor_path: Path | None, url: str,
                 clock: Callable[[], float], inline: bool = False) -> None:
        self.size, self.events, self.path, self.inline, self._clock = size, events, cursor_path, inline, clock
        self._key = hashlib.sha256(url.encode()).hexdigest()[:16]  # another URL is another receiver: starts afresh
        self.pending: dict[int, Pending] = {}
        self._by_alert: dict[str, int] = {}
        self.high = events.last_id if events is not None else 0  # the newest id heard of
        self.cursor = self._load_cursor() if events is not None else 0  # the last id delivered
        self.tail = self.cursor  # memory holds cursor+1 … tail
        self.spilled = self.lost = 0
        self._carry = 0  # ids passed over (no longer in the log) that the next event sent says it follows

    # what is owed -----------------------------------------------------------
    @property
    def owed(self) -> bool:
        return bool(self.pending) or self.cursor < self.high

    def heard(self, ev: dict[str, Any]) -> None:
        """The event log appended `ev` (its listener, moved onto the loop)."""
        ident = str(ev.get("id") or "")
        if not ident.isdigit():
            return
        seq = int(ident)
        self.high = max(self.high, seq)
        if seq <= self.tail:
            return  # already read back from the log
        if seq != self.tail + 1 or len(self.pending) >= self.size:
            self.spilled += 1  # read from the log in its turn
            return
        self._keep(Pending(seq, ev, wait_until=self._wait(ev)))

    def local(self, ev: dict[str, Any], alert: Alert) -> bool:
        """Without an event log (a sender on its own): the alert itself, numbered here; False when memory is full."""
        if len(self.pending) >= self.size:
            self.lost += 1
            return False
        self.high += 1
        self._keep(Pending(self.high, ev, alert))
        return True

    def enrich(self, alert: Alert) -> None:
        """The router handed over the alert of an event owed (its frame, its clip): it goes with it."""
        seq = self._by_alert.get(alert.alert_id)
        if seq is not None and seq in self.pending:
            self.pending[seq].alert = alert

    def _wait(self, ev: dict[str, Any]) -> float:
        """Until when an event waits for its alert: a posted alert always comes to the webhook (after its clip); a
        held one only brings its frame, wanted inline."""
        if not ev.get("alert_id"):
            return 0.0
        if not ev.get("held"):
            return self._clock() + ALERT_WAIT
        return self._clock() + HELD_WAIT if self.inline and ev.get("has_frame") else 0.0

    def _keep(self, item: Pending) -> None:
        self.pending[item.seq] = item
        self.tail = max(self.tail, item.seq)
        if alert_id := item.event.get("alert_id"):
            self._by_alert[str(alert_id)] = item.seq

    # taking, in order ---------------------------------------------------------
    def needs_refill(self) -> bool:
        return self.events is not None and not self.pending and self.tail < self.high

    async def refill(self) -> None:
        """The next owed ids from the event log into memory (ids it no longer holds are counted, then passed)."""
        assert self.events is not None
        start = self.tail
        got, scanned, _ = await asyncio.to_thread(self.events.page, start, self.size)
        if self.tail != start:
            return  # heard meanwhile: memory moved on, read again next turn
        expected = start + 1
        for ev in got:
            seq = int(ev["id"])
            item = Pending(seq, ev, dropped=seq - expected)
            self.lost += item.dropped
            self._keep(item)
            expected = seq + 1
        if not got and scanned <= start:  # the log holds none of them (trimmed away, or never written: disk full)
            missing = self.high - start
            log.warning("webhook: events %d-%d are no longer in the event log; they cannot be sent", start + 1,
                        self.high)
            self.lost += missing
            self._keep_lost(missing)

    def _keep_lost(self, missing: int) -> None:
        """Nothing to send for the ids the log lost: move past them, and say so on the next event sent."""
        self.cursor = self.tail = self.high
        self._carry += missing

    def take(self, most: int) -> tuple[list[Pending], float | None]:
        """(the ready events at the head, at most `most`; or none and when the head will be ready)."""
        now, out = self._clock(), list[Pending]()
        for item in islice(self.pending.values(), most):  # kept in id order: ids come contiguous
            if not item.ready(now):
                if not out:
                    return [], item.wait_until
                break
            out.append(item)
        for item in out:
            del self.pending[item.seq]
            if alert_id := item.event.get("alert_id"):
                self._by_alert.pop(str(alert_id), None)
        if out and self._carry:
            out[0].dropped, self._carry = out[0].dropped + self._carry, 0
        return out, None

    def put_back(self, batch: list[Pending]) -> None:
        """A batch that could not be posted goes back to the head, in order."""
        rest, self.pending = self.pending, {}
        for item in [*batch, *rest.values()]:
            self._keep(item)

    async def done(self, batch: list[Pending]) -> None:
        """The receiver took `batch` (or refused it for good): the cursor moves past it, on disk too."""
        if not batch:
            return
        self.cursor = max(self.cursor, batch[-1].seq)
        if self.path is not None and self.events is not None:
            data = json.dumps({"url": self._key, "last_id": str(self.cursor).zfill(12)})
            try:
                await asyncio.to_thread(write_atomic, self.path, data)
            except OSError as exc:  # a full disk costs a resend after a restart, never an event
                log.warning("webhook cursor not saved (%s): a restart may send some events again", exc)

    # the cursor on disk ---------------------------------------------------------
    def _load_cursor(self) -> int:
        """The last id delivered to this URL; a new URL (or none saved) starts after the newest event."""
        assert self.events is not None
        newest = self.events.last_id
        data = load_json(self.path) if self.path is not None else None
        if data is DAMAGED:
            assert self.path is not None
            kept = keep_aside(self.path)
            records.note(f"{self.path.name} was damaged; kept as {kept.name}: webhooks go on from the newest event")
            return newest
        if not isinstance(data, dict) or data.get("url") != self._key or not str(data.get("last_id", "")).isdigit():
            return newest
        cursor = int(data["last_id"])
        if cursor > newest:  # the log was removed or started afresh: its ids start again from 1
            log.warning("webhook cursor %d is past the event log's newest id %d: sending from its start", cursor,
                        newest)
            return 0
        if cursor < newest:
            log.info("webhook: %d events from before this start are still to send (after id %d)", newest - cursor,
                     cursor)
        return cursor
