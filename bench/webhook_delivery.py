"""Webhook delivery under bursts: events raised / events a slow, flaky receiver got, at several rates and delays.

A real Runtime (its router, event log and webhook sender wired as `serve` wires them) gets bursts of line-crossing
events the way the monitor raises them: on a pipeline thread, the first of each camera posted, the rest held by the
cooldown. The receiver is an aiohttp server on 127.0.0.1 that sleeps per request and answers some requests 503 or
429 (Retry-After: 1). Each event's text is unique, so a receiver can count what it got whatever the body's shape
(one event, or a batch with `events: [...]`). Figures: delivered / raised, repeats, and whether the ids came in
order. Run it on another tree (main, for the "before" figures) with `PYTHONPATH=/that/tree python
bench/webhook_delivery.py`. `--quick` (make test): one burst of 20.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # after PYTHONPATH: another tree's `bot` can be measured

from bench import Headline  # noqa: E402

CAMERAS = ("door", "gate", "dock")
RATES = (0.0, 50.0, 10.0, 2.0, 1.0)  # events per second; 0: as fast as the thread raises them
DELAYS = (0.0, 0.2, 1.0)  # seconds the receiver sleeps per request
EVENTS, QUICK_EVENTS = 200, 20
ROW_SECONDS = 20  # a slow row raises what comes in this long (at least 20 events)
FLAKY_EVERY = 7  # every 7th request answers 503, every 11th 429 (Retry-After: 1)
PATIENCE = 180.0  # seconds to wait for the last event after the burst


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Receiver:
    delay: float
    requests: int = 0
    got: list[dict[str, Any]] = field(default_factory=list)

    async def handle(self, request: Any) -> Any:
        from aiohttp import web

        self.requests += 1
        n = self.requests
        body = json.loads(await request.read())
        await asyncio.sleep(self.delay)
        if n % FLAKY_EVERY == 0:
            return web.Response(status=503, text="busy")
        if n % 11 == 0:
            return web.Response(status=429, headers={"Retry-After": "1"}, text="slow down")
        self.got += body["events"] if isinstance(body.get("events"), list) else [body]
        return web.Response(text="ok")


async def one_run(rate: float, delay: float, events: int) -> dict[str, Any]:
    from aiohttp import web

    from bot.config import load_settings
    from bot.monitoring.alerts import Alert
    from bot.runtime import Runtime

    rx = Receiver(delay)
    app = web.Application()
    app.router.add_post("/hook", rx.handle)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    with tempfile.TemporaryDirectory() as root:
        env = {"VISION_AGENT_WORKSPACE": root, "VISION_AGENT_HEARTBEAT_MINUTES": "0",
               "VISION_AGENT_WEBHOOK_URL": f"http://127.0.0.1:{port}/hook"}
        rt = Runtime(load_settings(env), background=False)
        await rt.start()
        loop = asyncio.get_running_loop()
        raised: list[tuple[str, str]] = []

        def pipeline_thread() -> None:  # the monitor's path: decide on the pipeline thread, held ones recorded there
            start = time.monotonic()
            for i in range(events):
                camera = CAMERAS[i % len(CAMERAS)]
                alert = Alert(camera, "line_crossed", f"line crossed (in +1; totals in {i // len(CAMERAS) + 1} / out 0)",
                              counts={"person": 1}, pipeline_id=f"p-{camera}")
                raised.append((camera, alert.text))
                verdict = rt.router.decide(alert)
                if verdict.held:
                    rt.router.record(alert, verdict.held)
                else:
                    asyncio.run_coroutine_threadsafe(rt.router.deliver(alert), loop)
                if rate:
                    time.sleep(max(0.0, start + (i + 1) / rate - time.monotonic()))

        t0 = time.monotonic()
        await asyncio.to_thread(pipeline_thread)
        end = time.monotonic() + PATIENCE
        while len({(e.get("camera"), e.get("text")) for e in rx.got}) < events and time.monotonic() < end:
            sender = rt.webhooks
            if sender is not None and await sender.drain(0.5) and time.monotonic() - t0 > 3 + 3 * delay:
                await asyncio.sleep(2 + delay)  # drained: what is still to come is at most one post in flight
                if sender is not None and await sender.drain(0.1):
                    break
        took = time.monotonic() - t0
        stats = dict(getattr(rt.webhooks, "stats", {}))
        await rt.close()
    await runner.cleanup()
    keys = [(e.get("camera"), e.get("text")) for e in rx.got]
    unique = set(keys) & set(raised)
    ids = [e["id"] for e in rx.got if e.get("id") is not None]
    first_seen = list(dict.fromkeys(ids))
    return {"rate": rate, "delay": delay, "raised": len(raised), "delivered": len(unique),
            "repeats": len(keys) - len(set(keys)), "posts": rx.requests,
            "in_order": (first_seen == sorted(first_seen)) if ids else None, "seconds": took, "stats": stats}


def main(quick: bool = False) -> Headline:
    combos = [(0.0, 0.2)] if quick else [(r, d) for r in RATES for d in DELAYS]
    events = QUICK_EVENTS if quick else EVENTS
    rows = [asyncio.run(one_run(rate, delay, min(events, max(QUICK_EVENTS, int(rate * ROW_SECONDS))) if rate else events))
            for rate, delay in combos]
    print(f"up to {events} events over {len(CAMERAS)} cameras per row; receiver: every {FLAKY_EVERY}th request 503, "
          "every 11th 429 (Retry-After: 1)")
    print(f"{'rate/s':>8}{'delay s':>9}{'delivered':>11}{'of':>5}{'ratio':>8}{'repeats':>9}{'posts':>7}"
          f"{'in order':>10}{'s':>7}")
    for r in rows:
        rate = "burst" if not r["rate"] else f"{r['rate']:.0f}"
        order = "-" if r["in_order"] is None else ("yes" if r["in_order"] else "NO")
        print(f"{rate:>8}{r['delay']:>9.1f}{r['delivered']:>11}{r['raised']:>5}{r['delivered'] / r['raised']:>8.2f}"
              f"{r['repeats']:>9}{r['posts']:>7}{order:>10}{r['seconds']:>7.1f}")
    worst = min(r["delivered"] / r["raised"] for r in rows)
    total = sum(r["delivered"] for r in rows), sum(r["raised"] for r in rows)
    print("sender stats of the last row:", rows[-1]["stats"])
    figure = f"{total[0]}/{total[1]} events delivered ({total[0] / total[1]:.0%}), worst row {worst:.0%}"
    return Headline(figure, "every event delivered", None if quick else worst == 1.0)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main(quick="--quick" in sys.argv[1:])
    print(f"(took {time.perf_counter() - t0:.1f} s)")
