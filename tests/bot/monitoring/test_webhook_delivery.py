"""Nothing lost on the way out: bursts of events to a slow, flaky webhook receiver arrive whole and in id order, with
memory bounded (the rest waits in the event log); a restart resumes after the last id delivered; events the log
trimmed before they could be sent are counted, not silently skipped."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.config import load_settings
from bot.monitoring.alerts import Alert, AlertRouter
from bot.monitoring.events_log import EventLog
from bot.monitoring.webhooks.sender import WebhookSender
from tests.fakes.waits import patience
from tests.fixtures.hooks import HookServer, events_in

CAMERAS = ("door", "gate", "yard")


class FlakyReceiver(HookServer):
    """An aiohttp webhook receiver on 127.0.0.1 that sleeps `delay` per request; every `busy`-th request answers 503,
    every `slow`-th 429 (Retry-After: 0), and every `lost`-th takes the events but answers 503 (its answer is lost,
    as on a dropped connection), so the sender sends them again. `down`: every request answers 503."""

    def __init__(self, delay: float = 0.0, busy: int = 0, slow: int = 0, lost: int = 0) -> None:
        super().__init__()
        self.delay, self.busy, self.slow, self.lost = delay, busy, slow, lost
        self.down = False
        self.requests = 0
        self.answer_lost = 0  # events taken whose answer said 503
        self.events: list[dict[str, Any]] = []  # in the order taken, repeats included
        self.bodies: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.requests += 1
        n = self.requests
        body = json.loads(await request.read())
        await asyncio.sleep(self.delay)
        if self.down or (self.busy and n % self.busy == 0):
            return web.Response(status=503, text="busy")
        if self.slow and n % self.slow == 0:
            return web.Response(status=429, headers={"Retry-After": "0"}, text="slow down")
        self.bodies.append(body)
        self.events += events_in(body)
        if self.lost and n % self.lost == 0:
            self.answer_lost += len(events_in(body))
            return web.Response(status=503, text="taken, answer lost")
        return web.Response(text="ok")



@pytest.fixture
async def receivers() -> AsyncIterator[list[FlakyReceiver]]:
    made: list[FlakyReceiver] = []
    yield made
    for rx in made:
        await rx.stop()


def sender_for(base_env: dict[str, str], url: str, events: EventLog, state: Path, **webhook: Any) -> WebhookSender:
    settings = load_settings(dict(base_env, VISION_AGENT_WEBHOOK_URL=url),
                             webhook={"timeout_seconds": 5, "min_interval_seconds": 0, **webhook})
    sender = WebhookSender(settings.webhook, backoff=0.02, events=events, cursor=state / "webhook_cursor.json")
    sender.bind(asyncio.get_running_loop())
    return sender


def router_for(state: Path, events: EventLog, sender: WebhookSender) -> AlertRouter:
    """Wired as the runtime wires it; a long cooldown: each camera's first crossing is posted, the rest held."""
    r = AlertRouter(state / "alerts.json", default_channel="C1", cooldown_seconds=600, events=events)
    r.add_sink(sender, after_clip=True)
    r.observe_held(sender.held)
    return r


def raise_events(r: AlertRouter, loop: asyncio.AbstractEventLoop, n: int, start: int = 0) -> None:
    """The monitor's path, on a pipeline thread, as fast as it goes: decided here, held ones recorded here, the
    others delivered on the loop."""
    for i in range(start, start + n):
        camera = CAMERAS[i % len(CAMERAS)]
        alert = Alert(camera, "line_crossed", f"line crossed (in +1; totals in {i + 1} / out 0)", counts={"person": 1},
                      pipeline_id=f"p-{camera}")
        verdict = r.decide(alert)
        if verdict.held:
            r.record(alert, verdict.held)
        else:
            asyncio.run_coroutine_threadsafe(r.deliver(alert), loop)


def check_whole_and_ordered(received: list[dict[str, Any]], logged: list[dict[str, Any]]) -> int:
    """Every logged event received (repeats only of an id already taken, with the same content) and the first
    arrival of each in id order; returns how many repeats there were."""
    first: dict[str, dict[str, Any]] = {}
    for ev in received:
        if ev["id"] in first:
            assert ev["text"] == first[ev["id"]]["text"]  # a repeat is the same event: dedupable by id
        else:
            first[ev["id"]] = ev
    assert list(first) == [e["id"] for e in logged]  # all of them, none extra, in id order
    assert all(first[e["id"]]["text"] == e["text"] and first[e["id"]]["camera"] == e["camera"] for e in logged)
    return len(received) - len(first)


async def watch_memory(sender: WebhookSender, peak: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], len(sender.backlog.pending))
        await asyncio.sleep(0.005)


@pytest.mark.parametrize(("events", "delay", "queue", "batch"), [
    (300, 0.05, 16, 25),  # small memory: most of the burst waits in the event log
    (240, 0.3, 40, 100),  # a slow receiver: few, large batches
    (120, 0.0, 7, 1),  # batch_max 1: one event per post, the old shape only
])
async def test_a_burst_to_a_slow_flaky_receiver_arrives_whole_in_order(
    events: int, delay: float, queue: int, batch: int, base_env, tmp_path: Path, receivers
) -> None:
    rx = await FlakyReceiver(delay, busy=7, slow=11, lost=13).start()
    receivers.append(rx)
    log = EventLog(tmp_path / "events.jsonl")
    sender = sender_for(base_env, rx.url, log, tmp_path, queue_size=queue, batch_max=batch)
    r = router_for(tmp_path, log, sender)
    peak, stop = [0], asyncio.Event()
    watcher = asyncio.create_task(watch_memory(sender, peak, stop))
    try:
        await asyncio.to_thread(raise_events, r, asyncio.get_running_loop(), events)
        assert await sender.drain(patience(120)), f"{len({e['id'] for e in rx.events})} of {events} arrived"
    finally:
        stop.set()
        await watcher
        await sender.close()
    logged, _, _ = log.page(0, 10 * events)
    assert len(logged) == events
    repeats = check_whole_and_ordered(rx.events, logged)
    assert repeats == rx.answer_lost  # each event whose answer was lost came once more, the same; none other did
    assert peak[0] <= queue  # memory stayed bounded ...
    assert sender.backlog.spilled > 0  # ... so part of the burst came back from the event log
    assert max(b.get("count", 1) for b in rx.bodies) <= batch
    assert all(e["dropped_before"] == 0 for e in rx.events)
    assert sender.stats["sent"] >= events


async def test_a_restart_resumes_after_the_last_id_delivered(base_env, tmp_path: Path, receivers) -> None:
    """A run whose receiver went down leaves events owed; the next run (a new log object over the same file, a
    new sender over the same cursor) sends exactly those, and a later new URL starts afresh."""
    rx = await FlakyReceiver(0.0).start()
    receivers.append(rx)
    loop = asyncio.get_running_loop()
    log = EventLog(tmp_path / "events.jsonl")
    sender = sender_for(base_env, rx.url, log, tmp_path, queue_size=5)
    r = router_for(tmp_path, log, sender)
    await asyncio.to_thread(raise_events, r, loop, 20)
    assert await sender.drain(patience(30))
    rx.down = True
    await asyncio.to_thread(raise_events, r, loop, 30, 20)
    await asyncio.sleep(0.2)  # it tries, and fails
    await sender.close()  # the process stops with 30 events owed
    taken_before = {e["id"] for e in rx.events}

    rx.down = False
    log2 = EventLog(tmp_path / "events.jsonl")
    sender2 = sender_for(base_env, rx.url, log2, tmp_path, queue_size=5)
    try:
        assert await sender2.drain(patience(30))
    finally:
        await sender2.close()
    logged, _, _ = log2.page(0, 1000)
    check_whole_and_ordered(rx.events, logged)
    resent = [e["id"] for e in rx.events[len(taken_before):] if e["id"] in taken_before]
    assert resent == []  # what the first run delivered is not sent again

    other = await FlakyReceiver(0.0).start()  # another URL: a new receiver gets new events only
    receivers.append(other)
    sender3 = sender_for(base_env, other.url, log2, tmp_path)
    try:
        log2.append({"camera": "door", "rule": "line_crossed", "text": "after the switch"})
        assert await sender3.drain(patience(30))
    finally:
        await sender3.close()
    assert [e["text"] for e in other.events] == ["after the switch"]


async def test_events_the_log_trimmed_before_they_were_sent_are_counted(base_env, tmp_path: Path, receivers) -> None:
    """A receiver down for longer than the bounded log holds: the oldest owed events are gone, and the first event
    sent after them says how many (`dropped_before`); every event still in the log arrives."""
    rx = await FlakyReceiver(0.0).start()
    receivers.append(rx)
    rx.down = True
    log = EventLog(tmp_path / "events.jsonl", max_bytes=8_000)
    sender = sender_for(base_env, rx.url, log, tmp_path, queue_size=4)
    await asyncio.to_thread(lambda: [log.append({"camera": "door", "rule": "line_crossed", "text": f"event {i}"})
                                     for i in range(200)])
    logged, _, _ = log.page(0, 1000)
    assert int(logged[0]["id"]) > 5  # the log was trimmed past what the receiver got
    rx.down = False
    try:
        assert await sender.drain(patience(30))
    finally:
        await sender.close()
    first: dict[str, dict[str, Any]] = {e["id"]: e for e in reversed(rx.events)}
    got = sorted(first)
    kept_ids = [e["id"] for e in logged]
    assert got[-len(kept_ids):] == kept_ids  # everything the log still held
    lost = 200 - len(got)
    assert sum(e["dropped_before"] for e in first.values()) == lost  # and the gap, counted once


async def test_events_appended_from_many_threads_arrive_once_each(base_env, tmp_path: Path, receivers) -> None:
    """Several pipeline threads at once: the log's listener calls arrive out of id order; none is lost or doubled."""
    rx = await FlakyReceiver(0.01).start()
    receivers.append(rx)
    log = EventLog(tmp_path / "events.jsonl")
    sender = sender_for(base_env, rx.url, log, tmp_path, queue_size=30, batch_max=10)
    go = threading.Event()

    def writer(k: int) -> None:
        go.wait()
        for i in range(40):
            log.append({"camera": f"cam{k}", "rule": "line_crossed", "text": f"{k}-{i}", "time": time.time()})

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(5)]
    for t in threads:
        t.start()
    go.set()
    await asyncio.to_thread(lambda: [t.join() for t in threads])
    try:
        assert await sender.drain(patience(60))
    finally:
        await sender.close()
    logged, _, _ = log.page(0, 1000)
    assert check_whole_and_ordered(rx.events, logged) == 0
