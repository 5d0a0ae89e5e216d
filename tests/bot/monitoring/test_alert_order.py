"""Alerts for one channel reach the sinks in the order they were dispatched, whatever the waits after the decision.

The race these reproduce: alerts dispatched together each stored their frame on a worker thread before taking the
channel's send lane, so whichever thread finished first went first (cam0, cam1, cam2, cam4, cam3 under 429s). The
stores and clips below would finish in reverse order if the alerts ran side by side: an order-keeping router is
the only way the sinks still see them in order. The waits are bounded: they only make the race certain, and a
router that serialises per channel simply lets them time out.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from pathlib import Path

from bot.monitoring.alert_frames import AlertFrames
from bot.monitoring.alerts import Alert, AlertRouter
from tests.bot.monitoring.test_webhooks import until

RACE_WAIT = 0.3  # seconds a store or clip waits for a later alert's to start (only reached when there is no race)


def alerts(n: int, channel: str | None = None) -> list[Alert]:
    return [Alert(f"cam{i}", "person_count", f"event {i}", frame=b"\xff\xd8\xff frame", channel=channel)
            for i in range(n)]


class ReverseFrames(AlertFrames):
    """A frame store on which the first alert's frame is stored last, if several are stored at once."""

    def __init__(self, folder: Path, order: list[str]) -> None:
        super().__init__(folder)
        self.order = order
        self.entered = [threading.Event() for _ in order]

    def put(self, alert_id: str, frame: bytes) -> bool:
        i = self.order.index(alert_id)
        self.entered[i].set()
        if i + 1 < len(self.order):
            self.entered[i + 1].wait(RACE_WAIT)  # the next alert's store, if it runs alongside, finishes first
        return super().put(alert_id, frame)


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    async def __call__(self, alert: Alert, channel: str | None) -> None:
        self.seen.append((alert.camera, channel))


async def test_alerts_dispatched_together_reach_the_sink_in_order_though_their_frames_store_in_reverse(
    tmp_path: Path,
) -> None:
    batch = alerts(5)
    frames = ReverseFrames(tmp_path / "frames", [a.alert_id for a in batch])
    router = AlertRouter(tmp_path / "alerts.json", default_channel="C1", cooldown_seconds=0, frames=frames)
    sink = Recorder()
    router.add_sink(sink)
    assert await asyncio.gather(*(router.dispatch(a) for a in batch)) == [None] * 5
    assert sink.seen == [(f"cam{i}", "C1") for i in range(5)]
    assert all(frames.get(a.alert_id) for a in batch)  # and every frame was kept


async def test_a_slow_clip_on_the_first_alert_does_not_let_the_second_overtake_it(tmp_path: Path) -> None:
    router = AlertRouter(tmp_path / "alerts.json", default_channel="C1", cooldown_seconds=0)
    sink = Recorder()
    router.add_sink(sink)
    started = [asyncio.Event() for _ in range(4)]

    def clip_for(i: int):  # the first alert's clip takes longest: it waits for the next one's to start
        async def attach(alert: Alert) -> Alert:
            started[i].set()
            if i + 1 < len(started):
                try:
                    await asyncio.wait_for(started[i + 1].wait(), RACE_WAIT)
                except TimeoutError:
                    pass
            return replace(alert, clip_path=f"/clips/{i}.mp4")
        return attach

    batch = alerts(4)
    await asyncio.gather(*(router.dispatch(a, attach=clip_for(i)) for i, a in enumerate(batch)))
    assert sink.seen == [(f"cam{i}", "C1") for i in range(4)]


async def test_a_channel_stuck_on_a_429_does_not_hold_up_another_channel(tmp_path: Path) -> None:
    router = AlertRouter(tmp_path / "alerts.json", cooldown_seconds=0)
    release = asyncio.Event()
    seen: list[str] = []

    async def sink(alert: Alert, channel: str | None) -> None:
        if channel == "C_SLOW":
            await release.wait()  # waiting out a rate limit, say
        seen.append(f"{channel}:{alert.camera}")

    router.add_sink(sink)
    slow = [asyncio.create_task(router.dispatch(a)) for a in alerts(2, channel="C_SLOW")]
    assert await router.dispatch(Alert("door", "appeared", "someone", channel="C_FAST")) is None
    assert seen == ["C_FAST:door"]  # delivered while C_SLOW still waits
    release.set()
    await asyncio.gather(*slow)
    assert seen == ["C_FAST:door", "C_SLOW:cam0", "C_SLOW:cam1"]


async def test_a_held_alert_is_decided_at_once_and_never_queues_behind_a_delivery(tmp_path: Path) -> None:
    router = AlertRouter(tmp_path / "alerts.json", default_channel="C1", cooldown_seconds=300)
    release = asyncio.Event()

    async def sink(alert: Alert, channel: str | None) -> None:
        await release.wait()

    router.add_sink(sink)
    first = asyncio.create_task(router.dispatch(Alert("dock", "line_crossed", "1 crossed")))
    await asyncio.sleep(0)  # the first has decided and holds the lane
    assert await router.dispatch(Alert("dock", "line_crossed", "2 crossed")) == "cooldown"
    release.set()
    assert await first is None


def test_one_decision_a_muted_alert_is_held_without_starting_the_cooldown(tmp_path: Path) -> None:
    now = [1000.0]
    router = AlertRouter(tmp_path / "alerts.json", default_channel="C1", cooldown_seconds=300, clock=lambda: now[0])
    router.mute("dock", 60)
    assert router.decide(Alert("dock", "line_crossed", "1 crossed")).held == "muted"
    now[0] += 61  # the mute ran out: the next crossing goes out at once, no cooldown was started while muted
    first = router.decide(Alert("dock", "line_crossed", "2 crossed"))
    assert first.held is None and first.suppressed == 0
    assert router.decide(Alert("dock", "line_crossed", "3 crossed")).held == "cooldown"
    now[0] += 301
    assert router.decide(Alert("dock", "line_crossed", "4 crossed")).suppressed == 1  # the next one says what was held


async def test_a_late_clip_holds_no_later_alert_and_follows_to_the_clip_and_after_clip_sinks(tmp_path: Path) -> None:
    """Posted at once (clips.post_first): the next alert for the channel goes out while the first one's clip is still
    being cut; the clip sinks then get it (or None when it failed) and an after-clip sink (webhooks) the whole alert."""
    router = AlertRouter(tmp_path / "alerts.json", default_channel="C1", cooldown_seconds=0)
    posted, clips, whole = Recorder(), [], []

    async def clip_sink(alert: Alert, channel: str | None) -> None:
        clips.append((alert.camera, alert.clip_path))

    async def webhook(alert: Alert, channel: str | None) -> None:
        whole.append((alert.camera, alert.clip_path))

    router.add_sink(posted)
    router.add_clip_sink(clip_sink)
    router.add_sink(webhook, after_clip=True)
    cut = asyncio.Event()

    async def slow_clip(alert: Alert) -> str | None:
        await cut.wait()
        return "/clips/0.mp4"

    async def failed_clip(alert: Alert) -> str | None:
        raise OSError("disk full")

    first, second = alerts(2)
    task = asyncio.create_task(router.deliver(first, late=slow_clip))
    await until(lambda: bool(posted.seen))
    await router.deliver(second, late=failed_clip)
    assert posted.seen == [("cam0", "C1"), ("cam1", "C1")]  # the second was not held behind the first one's clip
    assert clips == [("cam1", None)] and whole == [("cam1", None)]
    cut.set()
    await task
    assert clips == [("cam1", None), ("cam0", "/clips/0.mp4")]
    assert whole == [("cam1", None), ("cam0", "/clips/0.mp4")]
