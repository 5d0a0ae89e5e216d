"""Signed event webhooks against a real local receiver: signatures, retries, batching, ids in order, dead endpoints
(the burst, backlog and restart cases are in test_webhook_delivery.py)."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.config import load_settings
from bot.monitoring.alerts import Alert, AlertRouter
from bot.monitoring.events_log import EventLog
from bot.monitoring.webhooks.sender import WebhookSender
from bot.monitoring.webhooks.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from tests.fixtures.common import free_port
from tests.fixtures.hooks import HookServer, events_in

TOKEN = "hook-secret-0123456789"


class Receiver(HookServer):
    """An aiohttp webhook receiver on 127.0.0.1; `answers` (status, headers) are used in turn, then 200."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.answers: list[tuple[int, dict[str, str]]] = []
        self.hang = False
        self.got = asyncio.Event()
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append((dict(request.headers), await request.read()))
        self.got.set()
        if self.hang:
            await self.release.wait()  # until stop(): a receiver that never answers
        status, headers = self.answers.pop(0) if self.answers else (200, {})
        return web.Response(status=status, headers=headers, text="ok")


    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.requests]

    async def stop(self) -> None:
        self.release.set()
        await super().stop()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    rx = await Receiver().start()
    yield rx
    await rx.stop()


def make_sender(base_env: dict[str, str], url: str, clock: Callable[[], float] = time.monotonic,
                events: EventLog | None = None, cursor: Path | None = None, **webhook: Any) -> WebhookSender:
    env = dict(base_env, VISION_AGENT_WEBHOOK_URL=url, VISION_AGENT_WEBHOOK_TOKEN=TOKEN)
    opts = {"min_interval_seconds": 0, "timeout_seconds": 2, **webhook}
    settings = load_settings(env, webhook=opts)
    return WebhookSender(settings.webhook, api_base="http://127.0.0.1:8081", backoff=0.05, clock=clock,
                         events=events, cursor=cursor)


def wired(tmp_path: Path, base_env: dict[str, str], url: str, cooldown: float = 0,
          **webhook: Any) -> tuple[AlertRouter, EventLog, WebhookSender]:
    """Router, event log and sender wired as the runtime wires them: the sender follows the log."""
    events = EventLog(tmp_path / "events.jsonl")
    r = AlertRouter(tmp_path / "alerts.json", default_channel="C1", cooldown_seconds=cooldown, events=events)
    sender = make_sender(base_env, url, events=events, cursor=tmp_path / "webhook_cursor.json", **webhook)
    sender.bind(asyncio.get_running_loop())
    r.add_sink(sender, after_clip=True)
    r.observe_held(sender.held)
    return r, events, sender


def bodies_of(receiver: Receiver) -> list[dict[str, Any]]:
    """Every event received, a batch's one by one."""
    return [ev for body in receiver.bodies() for ev in events_in(body)]


def router(tmp_path: Path, *sinks: Any) -> AlertRouter:
    r = AlertRouter(tmp_path / "alerts.json", default_channel="C1", cooldown_seconds=0)
    for sink in sinks:
        r.add_sink(sink)
    return r


async def until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out waiting"
        await asyncio.sleep(0.01)


async def test_each_alert_arrives_once_signed_with_the_bearer_token(receiver: Receiver, base_env, tmp_path) -> None:
    """batch_max 1: one event per post, in the shape receivers have always parsed, with its event-log id."""
    r, events, sender = wired(tmp_path, base_env, receiver.url, batch_max=1)
    try:
        await r.dispatch(Alert("dock", "count_over:person>3", "4 people on the dock", counts={"person": 4},
                               pipeline_id="p1", frame=b"\xff\xd8jpeg"))
        await r.dispatch(Alert("gate", "line_crossed", "1 crossed the line", counts={"person": 1}))
        assert await sender.drain(5)
    finally:
        await sender.close()
    assert len(receiver.requests) == 2
    for headers, body in receiver.requests:
        assert headers["Authorization"] == f"Bearer {TOKEN}"
        assert verify(TOKEN, headers[TIMESTAMP_HEADER], body, headers[SIGNATURE_HEADER])
        assert not verify("other-secret", headers[TIMESTAMP_HEADER], body, headers[SIGNATURE_HEADER])
        assert not verify(TOKEN, headers[TIMESTAMP_HEADER], body + b" ", headers[SIGNATURE_HEADER])
    first, second = receiver.bodies()
    assert first["source"] == "vision-agent" and first["event_type"] == "count_over"
    assert (first["camera"], first["text"], first["counts"], first["pipeline_id"]) == (
        "dock", "4 people on the dock", {"person": 4}, "p1")
    assert first["frame_url"] == f"http://127.0.0.1:8081/api/alerts/{first['alert_id']}/frame"  # its own frame
    assert second["event_type"] == "line_crossed" and second["frame_url"] is None
    assert [first["id"], second["id"]] == [e["id"] for e in events.query()]  # the log's ids, in order


async def test_held_events_reach_the_webhook_marked_held_also_from_a_pipeline_thread(
    receiver: Receiver, base_env, tmp_path
) -> None:
    """Every tier-1 event is POSTed: a muted one (dispatch) and a cooling-down one (recorded on a pipeline thread,
    as the monitor does) arrive marked `held`, without a frame link (their frames are not kept); a sent alert's
    clip has a clip_url."""
    r, events, sender = wired(tmp_path, base_env, receiver.url, cooldown=300)
    try:
        await r.dispatch(Alert("dock", "line_crossed", "in +1", frame=b"\xff\xd8jpeg",
                               clip_path=str(tmp_path / "clips" / "dock-20261123-101500-ab12cd.mp4")))
        r.mute("gate", 600)
        assert await r.dispatch(Alert("gate", "class_appears:person", "person appeared")) == "muted"
        held = Alert("dock", "line_crossed", "in +2", frame=b"\xff\xd8jpeg")
        await asyncio.to_thread(r.record, held, "cooldown")  # the monitor's cooldown path, off the loop
        await until(lambda: len(bodies_of(receiver)) == 3)
        assert await sender.drain(5)
    finally:
        await sender.close()
    sent, muted, cooling = bodies_of(receiver)
    assert (sent["text"], sent["held"]) == ("in +1", None)
    assert sent["clip_url"] == "http://127.0.0.1:8081/api/clips/dock-20261123-101500-ab12cd"
    assert (muted["camera"], muted["held"], muted["frame_url"]) == ("gate", "muted", None)
    assert (cooling["text"], cooling["held"], cooling["frame_url"]) == ("in +2", "cooldown", None)
    for headers, body in receiver.requests:
        assert verify(TOKEN, headers[TIMESTAMP_HEADER], body, headers[SIGNATURE_HEADER])


async def test_a_replayed_signature_with_a_new_timestamp_fails(receiver: Receiver, base_env) -> None:
    sender = make_sender(base_env, receiver.url)
    try:
        sender.offer(Alert("dock", "line_crossed", "1 crossed"))
        assert await sender.drain(5)
    finally:
        await sender.close()
    headers, body = receiver.requests[0]
    stamp = headers[TIMESTAMP_HEADER]
    assert not verify(TOKEN, str(int(stamp) + 1), body, headers[SIGNATURE_HEADER])
    assert not verify(TOKEN, stamp, body, headers[SIGNATURE_HEADER], now=int(stamp) + 3600)  # too old


async def test_a_500_is_retried_until_it_is_taken(receiver: Receiver, base_env) -> None:
    receiver.answers = [(500, {}), (503, {})]
    sender = make_sender(base_env, receiver.url)
    try:
        sender.offer(Alert("dock", "line_crossed", "1 crossed"))
        assert await sender.drain(5)
    finally:
        await sender.close()
    assert len(receiver.requests) == 3
    assert len({h["X-Vision-Agent-Delivery"] for h, _ in receiver.requests}) == 1  # one delivery, three tries
    assert sender.stats["sent"] == 1 and sender.stats["failed"] == 2


async def test_429_waits_the_retry_after(receiver: Receiver, base_env) -> None:
    receiver.answers = [(429, {"Retry-After": "1"})]
    sender = make_sender(base_env, receiver.url)
    times: list[float] = []
    try:
        sender.offer(Alert("dock", "line_crossed", "1 crossed"))
        await until(lambda: len(receiver.requests) == 1)
        times.append(time.monotonic())
        await until(lambda: len(receiver.requests) == 2)
        times.append(time.monotonic())
    finally:
        await sender.close()
    assert times[1] - times[0] >= 0.9  # not the 0.05 s backoff


async def test_a_receiver_that_keeps_failing_gets_the_event_once_it_answers(receiver: Receiver, base_env,
                                                                            caplog) -> None:
    """Past max_attempts the event still waits (the log says so, once) and goes when the receiver takes it."""
    receiver.answers = [(500, {})] * 5
    sender = make_sender(base_env, receiver.url, max_attempts=3)
    try:
        sender.offer(Alert("dock", "line_crossed", "1 crossed"))
        assert await sender.drain(20)
    finally:
        await sender.close()
    assert len(receiver.requests) == 6 and sender.stats["sent"] == 1
    assert sum("has not taken a post in 3 tries" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize("status", [401, 404])
async def test_a_receiver_refusing_the_sender_is_retried_until_fixed(status: int, receiver: Receiver,
                                                                   base_env) -> None:
    """A wrong token or path is the operator's to fix: the event waits for it instead of being dropped."""
    receiver.answers = [(status, {}), (status, {})]
    sender = make_sender(base_env, receiver.url)
    try:
        sender.offer(Alert("dock", "line_crossed", "1 crossed"))
        assert await sender.drain(10)
    finally:
        await sender.close()
    assert len(receiver.requests) == 3 and sender.stats["sent"] == 1


async def test_a_refused_batch_goes_again_one_event_per_post(receiver: Receiver, base_env, tmp_path) -> None:
    """A receiver that cannot parse a batch (400) still gets every event, each alone; one it refuses alone is
    passed, not retried for ever."""
    receiver.hang = True  # the first post waits: the next events gather into one batch meanwhile
    r, events, sender = wired(tmp_path, base_env, receiver.url)
    try:
        await r.dispatch(Alert("dock", "line_crossed", "first"))
        await asyncio.wait_for(receiver.got.wait(), 5)
        for n in range(3):
            await r.dispatch(Alert("dock", "line_crossed", f"then {n}"))
        receiver.answers = [(200, {}), (400, {}), (200, {}), (200, {}), (422, {})]
        receiver.hang = False
        receiver.release.set()
        assert await sender.drain(10)
    finally:
        await sender.close()
    shapes = [b.get("count", 1) for b in receiver.bodies()]
    assert shapes == [1, 3, 1, 1, 1]  # the batch, refused, then its events alone
    assert [b["text"] for b in receiver.bodies()[2:]] == ["then 0", "then 1", "then 2"]
    assert sender.stats["sent"] == 3 and sender.stats["refused"] == 1


async def test_events_faster_than_the_interval_are_batched_in_order_none_dropped(receiver: Receiver, base_env,
                                                                                 tmp_path) -> None:
    r, events, sender = wired(tmp_path, base_env, receiver.url, min_interval_seconds=2)
    try:
        for n in range(6):
            await r.dispatch(Alert("dock" if n % 2 else "gate", "line_crossed", f"{n} crossed"))
        assert await sender.drain(20)
    finally:
        await sender.close()
    got = bodies_of(receiver)
    assert [e["text"] for e in got] == [f"{n} crossed" for n in range(6)]
    assert [e["id"] for e in got] == [e["id"] for e in events.query()]
    assert len(receiver.requests) < 6  # some went together
    batch = next(b for b in receiver.bodies() if b["event_type"] == "batch")
    assert batch["count"] == len(batch["events"]) and batch["first_id"] == batch["events"][0]["id"]
    assert all(e["dropped_before"] == 0 for e in got)


async def test_the_same_text_twice_is_two_events_both_sent(receiver: Receiver, base_env, tmp_path) -> None:
    """dedupe_ttl_seconds no longer drops: two crossings that read alike are two events, with two ids."""
    r, events, sender = wired(tmp_path, base_env, receiver.url, dedupe_ttl_seconds=600)
    try:
        for _ in range(2):
            await r.dispatch(Alert("dock", "line_crossed", "1 crossed"))
        assert await sender.drain(5)
    finally:
        await sender.close()
    got = bodies_of(receiver)
    assert [e["text"] for e in got] == ["1 crossed", "1 crossed"] and got[0]["id"] < got[1]["id"]


@pytest.mark.parametrize("dead", ["refused", "hanging"])
async def test_a_dead_endpoint_does_not_delay_the_other_sink(dead: str, receiver: Receiver, base_env,
                                                             tmp_path) -> None:
    url = f"http://127.0.0.1:{free_port()}/hook" if dead == "refused" else receiver.url
    receiver.hang = dead == "hanging"
    sender = make_sender(base_env, url, timeout_seconds=30)
    arrived: list[float] = []

    async def slack_sink(alert: Alert, channel: str | None) -> None:
        arrived.append(time.monotonic())

    r = router(tmp_path, sender, slack_sink)  # the webhook sink first: it must not hold the next one
    try:
        for n in range(5):
            await r.dispatch(Alert("dock", "line_crossed", f"{n} crossed"))
            start = time.monotonic()
            await r.dispatch(Alert("gate", "line_crossed", f"{n} crossed"))
            assert arrived[-1] - start < 0.1
        if dead == "hanging":
            await asyncio.wait_for(receiver.got.wait(), 5)  # the webhook was really being tried meanwhile
    finally:
        await sender.close()
    assert len(arrived) == 10


async def test_a_redirect_into_the_local_network_is_not_followed(receiver: Receiver, base_env) -> None:
    other = await Receiver().start()  # another local service the webhook must not be bounced to
    receiver.answers = [(307, {"Location": other.url})] * 2
    sender = make_sender(base_env, receiver.url)
    try:
        sender.offer(Alert("dock", "line_crossed", "1 crossed"))
        assert await sender.drain(10)  # retried, never bounced: once the receiver stops redirecting it gets it
    finally:
        await sender.close()
        await other.stop()
    assert other.requests == [] and len(receiver.requests) == 3 and sender.stats["sent"] == 1


async def test_a_redirect_within_the_configured_origin_is_followed(receiver: Receiver, base_env) -> None:
    receiver.answers = [(308, {"Location": "/hook?v=2"})]
    sender = make_sender(base_env, receiver.url)
    try:
        sender.offer(Alert("dock", "line_crossed", "1 crossed"))
        assert await sender.drain(5)
    finally:
        await sender.close()
    assert len(receiver.requests) == 2 and sender.stats["sent"] == 1


async def test_inline_frames_and_redacted_text(receiver: Receiver, base_env) -> None:
    sender = make_sender(base_env, receiver.url, inline_frames=True)
    try:
        sender.offer(Alert("dock", "pipeline_error", "rtsp://admin:hunter2@10.0.0.5/live dropped",
                           frame=b"\xff\xd8frame", pipeline_id="p1"))
        assert await sender.drain(5)
    finally:
        await sender.close()
    body = receiver.bodies()[0]
    assert "hunter2" not in json.dumps(body) and "admin:***@" in body["text"]
    assert base64.b64decode(body["frame_base64"]) == b"\xff\xd8frame" and body["frame_url"] is None
    assert body["event_type"] == "health"


async def test_without_a_token_nothing_is_signed(receiver: Receiver, base_env) -> None:
    settings = load_settings(dict(base_env, VISION_AGENT_WEBHOOK_URL=receiver.url))
    sender = WebhookSender(settings.webhook)
    try:
        sender.offer(Alert("dock", "line_crossed", "1 crossed"))
        assert await sender.drain(5)
    finally:
        await sender.close()
    headers, _ = receiver.requests[0]
    assert "Authorization" not in headers and SIGNATURE_HEADER not in headers


def test_a_bad_webhook_url_is_one_settings_line(base_env) -> None:
    from bot.config import SettingsError

    with pytest.raises(SettingsError, match="VISION_AGENT_WEBHOOK_URL"):
        load_settings(dict(base_env, VISION_AGENT_WEBHOOK_URL="ftp://x"))


async def test_the_models_verdict_reaches_the_webhook_with_the_alert_or_after_it(receiver: Receiver, base_env,
                                                                                 tmp_path) -> None:
    """verify=hold: the alert goes out with its check, a dropped one held with it; verify=on: the alert at once, then
    an `alert_checked` event `about` it with the verdict (the model's words redacted like every text)."""
    from dataclasses import replace

    from bot.monitoring.verify import Check

    r, events, sender = wired(tmp_path, base_env, receiver.url, batch_max=1)
    try:
        held_back = Alert("gate", "class_appears:person", "person appears", check=Check(True, "a courier"))
        await r.dispatch(held_back)  # hold: posted once seen, with what was seen
        dropped = Alert("gate", "class_appears:cat", "cat appears", check=Check(False, "a plastic bag"))
        r.decide(dropped)
        await r.drop(dropped, "not verified: a plastic bag")
        posted = Alert("yard", "class_appears:person", "person appears", pipeline_id="p9")
        await r.dispatch(posted)  # on: posted at once ...
        await r.checked(replace(posted, check=Check(False, "a shadow, password=hunter2", "no legs")))  # ... then
        await until(lambda: len(bodies_of(receiver)) == 4)
        assert await sender.drain(5)
    finally:
        await sender.close()
    first, second, third, fourth = bodies_of(receiver)
    assert first["check"] == {"seen": True, "what": "a courier", "reason": ""} and first["held"] is None
    assert second["check"]["seen"] is False and second["held"] == "not verified: a plastic bag"
    assert "check" not in third and third["alert_id"] == posted.alert_id
    assert fourth["event_type"] == "alert_checked" and fourth["about"] == [posted.alert_id]
    assert fourth["check"]["seen"] is False and fourth["check"]["reason"] == "no legs"
    assert "hunter2" not in json.dumps(fourth)
    assert (fourth["camera"], fourth["pipeline_id"]) == ("yard", "p9") and fourth["text"].startswith("✗ likely not")
    assert [e["id"] for e in bodies_of(receiver)] == [e["id"] for e in events.query()]
