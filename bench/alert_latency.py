"""Alert latency with clips on: a frame's capture to its alert in Slack, posted at once vs after its clip (the old order).

Both orders run side by side in one run, each a real bot (Runtime + Slack adapter) against the Slack emulator: a
camera thread hands real CCTV frames (OpenCV's vtest street, tests/fixtures/data) to the clip ring and the monitor at
10 fps, as a pipeline does; its detections are scripted (two people every few seconds) so every event is the same.
"before" is `clips.post_first: false` (the alert waits for its clip); "after" is the default. Latency is the alert
message's ts (the emulator's clock at chat.postMessage) minus the event's result time; the clip's arrival in the
thread is shown too. `--quick` (make test): 2 events per order instead of 30.

A third run turns verified alerts on (`monitoring.verify: on`, bot/monitoring/verify.py) with the model emulated
(the Messages API emulator answers at once, so the figure is the bot's own share of the step: frames picked and
encoded, the request, the chat.update): the verify step is the alert's chat.update minus its chat.postMessage, and
alert-to-verified the update minus the event. Its token cost per alert is shown as the emulator counts it (base64
text / 4) and as the API prices images (width x height / 750 tokens each, at the <= 640 px the bot sends).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Headline  # noqa: E402
from bot.llm.usage import cost_of  # noqa: E402

FPS = 10.0
EVENT_EVERY = 40  # frames: one event every 4 s (two people in view for 1 s, then none)
EVENTS, QUICK_EVENTS = 30, 2
GOAL = 1.5  # seconds, p95 from capture to the alert in Slack, clips on
VERIFY_GOAL = 2.0  # seconds, p90 from the alert in Slack to its update with the model's look (issue 35)
SEEN = "SEEN: people walking on the street\nWHY: several people are in view and moving"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def camera(running, frames: list[bytes], events: int, stop: threading.Event) -> None:
    """The pipeline thread: each frame's result to the clip ring, then the monitor (the PipelineManager's order)."""
    from tests.fixtures.street import push, street_camera

    handle = street_camera()
    total = events * EVENT_EVERY + int(5 * FPS)  # and the seconds after the last event: its clip is cut
    start = time.monotonic()
    for i in range(total):
        if stop.is_set():
            return
        faces = 2 if i < events * EVENT_EVERY and i % EVENT_EVERY >= EVENT_EVERY - FPS else 0
        push(running, handle, faces, frames[i % len(frames)])
        time.sleep(max(0.0, start + (i + 1) / FPS - time.monotonic()))


async def one_order(post_first: bool, events: int, frames: list[bytes], verify: bool = False) -> tuple[
        list[float], list[float], int, dict[str, list[float]]]:
    """Seconds from each event to its alert in Slack, to its clip in the thread, how many never arrived, and (with
    `verify`) the verify step per alert: seconds post -> update, event -> update, tokens and USD of its look."""
    from tests.fakes.anthropic_api import API_KEY, FakeAnthropic, text
    from tests.fakes.slack_api import SlackEmulator
    from tests.fixtures.slack import start_bot, stop_bot
    from tests.fixtures.street import faces_rule
    from tests.tools.fake_backend import FakeBackend

    llm = FakeAnthropic().start()
    llm.handler = lambda body: text(SEEN)
    with SlackEmulator() as slack, tempfile.TemporaryDirectory() as root:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
        env.update(VISION_AGENT_WORKSPACE=root, VISION_AGENT_HEARTBEAT_MINUTES="0", ANTHROPIC_BASE_URL=llm.url,
                   ANTHROPIC_API_KEY=API_KEY, SLACK_BOT_TOKEN=slack.bot_token, SLACK_APP_TOKEN=slack.app_token,
                   SLACK_API_URL=slack.api_url, VISION_AGENT_ALERT_CHANNEL="C0ALERTS")
        running = await start_bot(env, slack, backend=FakeBackend(), clips={"post_first": post_first},
                                  monitoring={"verify": "on" if verify else "off", "verify_per_rule_hour": 1000})
        sent: list = []

        async def note(alert, channel) -> None:  # beside the Slack sink: which events went out, and when they happened
            sent.append(alert)

        running.runtime.router.add_sink(note)
        running.runtime.monitor.add_rule(faces_rule(cooldown_seconds=0))
        stop = threading.Event()
        try:
            await asyncio.to_thread(camera, running, frames, events, stop)
            await running.runtime.monitor.flush()
        finally:
            stop.set()
            await stop_bot(running)
            llm.stop()
        posted, clipped = [], []
        step: dict[str, list[float]] = {"step": [], "total": [], "tokens": [], "api_tokens": [], "usd": [],
                                        "frames": []}
        updates = {c.params["ts"]: c.time for c in slack.calls_to("chat.update")}
        for alert in sent:
            where = running.bot.posted_alerts.get(alert.alert_id)
            if where is None:
                continue
            posted.append(float(where.ts) - alert.time)
            shared = [float(m["ts"]) for m in slack.messages("C0ALERTS", where.ts)[1:] if m.get("files")]
            clipped += [min(shared) - alert.time] if shared else []
            if where.ts in updates:
                step["step"].append(updates[where.ts] - float(where.ts))
                step["total"].append(updates[where.ts] - alert.time)
        for rec in llm.ok_requests:  # (only the checks ask the model here: the heartbeat is off)
            usage, body = rec.usage, json.loads(rec.raw)
            step["tokens"].append(float(sum(usage.values())))
            step["usd"].append(cost_of(usage, body.get("model", "")))
            api, images = api_priced(body)
            step["api_tokens"].append(api)
            step["frames"].append(images)
        return posted, clipped, len(sent) - len(posted), step


def api_priced(body: dict) -> tuple[float, int]:
    """A request's tokens as the API counts them: each image width x height / 750, text ~4 characters a token,
    plus the answer's budget actually used (~20 tokens for the two lines); and how many images it had."""
    from io import BytesIO

    from PIL import Image

    tokens, images = 20.0, 0
    for message in body.get("messages", []):
        for block in message.get("content", []):
            if block.get("type") == "image":
                with Image.open(BytesIO(base64.b64decode(block["source"]["data"]))) as im:
                    tokens += im.width * im.height / 750
                images += 1
            elif block.get("type") == "text":
                tokens += len(block["text"]) / 4
    return tokens + sum(len(b.get("text", "")) for b in body.get("system", [])) / 4, images


def main(quick: bool = False) -> Headline:
    from tests.fixtures.street import street_frames

    events = QUICK_EVENTS if quick else EVENTS
    frames = street_frames()
    before = asyncio.run(one_order(False, events, frames))
    after = asyncio.run(one_order(True, events, frames))
    print(f"{events} events per order, real frames at {FPS:.0f} fps, clips on (5 s before, 3 s after the event)")
    print(f"{'capture -> Slack':<34}{'n':>4}{'p50 s':>9}{'p95 s':>9}")
    rows = [("alert, before (waits for its clip)", before[0]), ("alert, after (posted at once)", after[0]),
            ("clip in thread, before", before[1]), ("clip in thread, after", after[1])]
    for name, values in rows:
        print(f"{name:<34}{len(values):>4}{pct(values, 50):>9.2f}{pct(values, 95):>9.2f}")
    p95_before, p95_after = pct(before[0], 95), pct(after[0], 95)
    print(f"alert p95 ratio before / after: {p95_before / p95_after:.1f}x")
    missing = before[2] + after[2]
    if missing:
        print(f"{missing} events never reached Slack")
    checked = asyncio.run(one_order(True, events, frames, verify=True))[3]
    print(f"\nverified alerts (monitoring.verify: on, the model emulated), {len(checked['step'])} of {events} updated")
    print(f"{'verify step':<34}{'n':>4}{'p50 s':>9}{'p90 s':>9}{'p99 s':>9}")
    for name, values in (("post -> updated with the look", checked["step"]), ("event -> verified", checked["total"])):
        print(f"{name:<34}{len(values):>4}{pct(values, 50):>9.2f}{pct(values, 90):>9.2f}{pct(values, 99):>9.2f}")
    api_usd = [cost_of({"input_tokens": int(t) - 20, "output_tokens": 20}, "claude-sonnet-4-5") for t in checked["api_tokens"]]
    print(f"per alert: {pct(checked['frames'], 50):.0f} frame(s) (p50; {max(checked['frames'], default=0):.0f} at most), "
          f"{pct(checked['tokens'], 50):.0f} tokens / ${pct(checked['usd'], 50):.4f} as the emulator counts; "
          f"~{pct(checked['api_tokens'], 50):.0f} tokens / ${pct(api_usd, 50):.4f} as the API prices images "
          "(claude-sonnet-4-5)")
    p90_step = pct(checked["step"], 90)
    figure = (f"alert p95 {p95_after:.2f} s posted at once vs {p95_before:.2f} s after its clip "
              f"({p95_before / p95_after:.1f}x); verify step p90 {p90_step:.2f} s")
    met = p95_after < GOAL and not missing and p90_step < VERIFY_GOAL and len(checked["step"]) == events
    return Headline(figure, f"p95 < {GOAL} s with clips on; verify p90 < {VERIFY_GOAL} s", None if quick else met)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main(quick="--quick" in sys.argv[1:])
    print(f"(took {time.perf_counter() - t0:.1f} s)")
