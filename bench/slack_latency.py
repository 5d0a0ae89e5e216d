"""Slack adapter latency at 1, 10 and 50 threads in flight, side by side in one run: a bare ack-only Bolt app (the
floor), vision-agent with the first step off (the streamed answer opens with the model's output, as before issue 34)
and on (it opens with the turn's first step). Per app and load: the ack (p50/p95/p99), the 👀 reaction, the first
thing shown in the thread (a step or words) and the model's first words, all from the emulator's clock, measured
from the moment the emulator sent the event.

Each app is its own process (as deployed), started once and warmed up; each load runs ROUNDS[threads] bursts,
one after the other (a burst's answers all finish before the next starts), so every percentile has 40+ samples.
`--quick` (make test): 1 and 5 threads, a few rounds, the same three apps.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Headline  # noqa: E402
from bench._slack_answers import answer_times, first_words  # noqa: E402
from tests.fakes.anthropic_api import API_KEY, FakeAnthropic, text  # noqa: E402
from tests.fakes.slack_api import SlackEmulator  # noqa: E402
from tests.fakes.slack_socket import Envelope  # noqa: E402

ROUNDS = {1: 40, 10: 5, 50: 3}  # threads in flight -> bursts (first-step samples 40, 50, 150; acks twice as many)
QUICK_ROUNDS = {1: 3, 5: 1}
LOG_TAIL = 30  # lines of an app's output shown when a run fails
LLM_DELAY = 0.2  # seconds the emulated model takes per answer
GOAL_RATIO, GOAL_FIRST_MS = 1.2, 150.0  # issue 34: ack p99 within 1.2x bare Bolt at 50 threads; first step p95


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def warm_up(slack: SlackEmulator, done: str | None = None) -> None:
    """One mention first, so one-time costs (auth.test, first connections) are not in the numbers."""
    ts, envs = slack.mention("warm-up")
    for env in envs:
        await slack.await_ack(env, timeout=30)
    if done:
        await slack.await_for("reactions.add", lambda c: c.params["name"] == done and c.params["timestamp"] == ts,
                              timeout=60)


async def burst(slack: SlackEmulator, threads: int, tag: str) -> tuple[list[str], list[Envelope]]:
    """`threads` mentions back to back: each arrives twice (app_mention + message.channels), like in Slack."""
    stamps, envelopes = [], []
    for i in range(threads):
        ts, envs = slack.mention(f"question {tag}.{i}: how many people are in the lobby?")
        stamps.append(ts)
        envelopes += envs
    for env in envelopes:
        await slack.await_ack(env, timeout=30)
    return stamps, envelopes


BARE_APP = """
import asyncio, os
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

async def main():
    app = AsyncApp(client=AsyncWebClient(token=os.environ["SLACK_BOT_TOKEN"], base_url=os.environ["SLACK_API_URL"]))
    async def nothing(**_):
        return None
    app.event("app_mention")(nothing)
    app.event("message")(nothing)
    await AsyncSocketModeHandler(app, os.environ["SLACK_APP_TOKEN"]).start_async()

asyncio.run(main())
"""


def env_for(slack: SlackEmulator, llm: FakeAnthropic, root: str) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH")  # PYTHONPATH: the code of this checkout, not an install
    return {**{k: v for k, v in os.environ.items() if k in keep}, "HF_HUB_OFFLINE": "1", "NO_PROXY": "127.0.0.1",
            "VISION_AGENT_WORKSPACE": root, "VISION_AGENT_HEARTBEAT_MINUTES": "0",
            "ANTHROPIC_BASE_URL": llm.url, "ANTHROPIC_API_KEY": API_KEY, "SLACK_BOT_TOKEN": slack.bot_token,
            "SLACK_APP_TOKEN": slack.app_token, "SLACK_API_URL": slack.api_url}


@contextlib.asynccontextmanager
async def in_process(cmd: list[str], env: dict[str, str], slack: SlackEmulator,
                     done: str | None) -> AsyncIterator[subprocess.Popen]:
    """The app as its own process (as deployed: Slack's servers are not in its process), warmed up; stopped after.

    Its stdout and stderr go to a file, never into the bench's output; when the run fails, the file's tail is
    printed before the error so the cause shows."""
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            await slack.await_connected(timeout=60)
            await warm_up(slack, done)
            yield proc
        except BaseException:
            code = proc.poll()
            proc.kill()
            proc.wait()
            log.seek(0)
            tail = log.read().decode(errors="replace").splitlines()[-LOG_TAIL:]
            name = " ".join(Path(part).name for part in cmd[:2])
            state = "was still running" if code is None else f"had exited with {code}"
            print(f"`{name}` {state}; its output ends:\n  " + "\n  ".join(tail or ["(nothing)"]), flush=True)
            raise
        finally:
            stop(proc)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()


def acks(envelopes: list[Envelope]) -> list[float]:
    """Seconds from each envelope sent to its ack (burst() waited for every ack)."""
    return [e.ack_latency for e in envelopes if e.ack_latency is not None]


Samples = dict[str, list[float]]  # "ack", "eyes", "first", "words" -> seconds after the event


async def full_bot(llm: FakeAnthropic, rounds: dict[int, int], first_step: bool) -> dict[int, Samples]:
    """vision-agent serve, `slack.first_step` on or off; per load, the four latencies of every thread."""
    out: dict[int, Samples] = {}
    with SlackEmulator() as slack, tempfile.TemporaryDirectory() as root:
        (Path(root) / "config.yaml").write_text(f"slack:\n  first_step: {'true' if first_step else 'false'}\n")
        exe = os.path.join(os.path.dirname(sys.executable), "vision-agent")
        async with in_process([exe, "serve"], env_for(slack, llm, root), slack, "white_check_mark"):
            for threads, times in rounds.items():
                got: Samples = {"ack": [], "eyes": [], "first": [], "words": []}
                for n in range(times):
                    stamps, envelopes = await burst(slack, threads, f"{threads}.{n}")
                    await slack.await_for("reactions.add", lambda c, s=set(stamps): c.params["name"] ==
                                          "white_check_mark" and c.params["timestamp"] in s, count=threads, timeout=180)
                    for kind, values in _latencies(slack, stamps, envelopes).items():
                        got[kind] += values
                out[threads] = got
    return out


def _latencies(slack: SlackEmulator, stamps: list[str], envelopes: list[Envelope]) -> Samples:
    sent = {e.payload["event"]["ts"]: e.sent_at[0] for e in envelopes if e.payload["event"]["type"] == "app_mention"}
    eyes: dict[str, float] = {}
    for call in slack.calls_to("reactions.add", lambda c: c.params["name"] == "eyes" and c.params["timestamp"] in sent):
        eyes.setdefault(call.params["timestamp"], call.time - sent[call.params["timestamp"]])
    first, words = [], []
    for ts in stamps:
        shown = answer_times(slack, "C0GENERAL", ts)[0]  # a step or words, streamed; or the posted answer
        said = first_words(slack, "C0GENERAL", ts)
        if shown is not None:
            first.append(shown - sent[ts])
        if said is not None:
            words.append(said - sent[ts])
    return {"ack": acks(envelopes), "eyes": list(eyes.values()), "first": first, "words": words}


async def bare_bolt(llm: FakeAnthropic, rounds: dict[int, int]) -> dict[int, Samples]:
    """The floor: a Bolt app over the same socket whose listeners do nothing (ack only)."""
    out: dict[int, Samples] = {}
    with SlackEmulator() as slack, tempfile.TemporaryDirectory() as root:
        async with in_process([sys.executable, "-c", BARE_APP], env_for(slack, llm, root), slack, None):
            for threads, times in rounds.items():
                values: list[float] = []
                for n in range(times):
                    _, envelopes = await burst(slack, threads, f"{threads}.{n}")
                    values += acks(envelopes)
                    await asyncio.sleep(0.2)  # as the full bot's bursts, one after the other
                out[threads] = {"ack": values}
    return out


BARE, OFF, ON = "bare ack-only Bolt", "vision-agent, first step off", "vision-agent, first step on"


async def measure(rounds: dict[int, int]) -> dict[str, dict[int, Samples]]:
    llm = FakeAnthropic().start()
    llm.handler = lambda body: text("About three people.", delay=LLM_DELAY)
    try:
        return {BARE: await bare_bolt(llm, rounds), OFF: await full_bot(llm, rounds, False),
                ON: await full_bot(llm, rounds, True)}
    finally:
        llm.stop()


def _cells(values: list[float] | None, ps: tuple[int, ...]) -> str:
    return "".join(f"{pct(values, p) * 1000:>7.0f}" if values else f"{'-':>7}" for p in ps)


def main(quick: bool = False) -> Headline:
    rounds = QUICK_ROUNDS if quick else ROUNDS
    results = asyncio.run(measure(rounds))
    print(f"emulated model answers in {LLM_DELAY * 1000:.0f} ms; ms after the event (the emulator's clock)")
    print(f"{'threads':>7}  {'app':<30}{'ack p50':>8}{'p95':>7}{'p99':>7}{'👀 p50':>8}{'p95':>7}"
          f"{'first p50':>10}{'p95':>7}{'p99':>7}{'words p50':>10}{'p95':>7}")
    for threads in rounds:
        for app in (BARE, OFF, ON):
            r = results[app][threads]
            print(f"{threads:>7}  {app:<30} {_cells(r['ack'], (50, 95, 99))}{_cells(r.get('eyes'), (50, 95))}   "
                  f"{_cells(r.get('first'), (50, 95, 99))}   {_cells(r.get('words'), (50, 95))}")
    top = max(rounds)
    ratios = {app: pct(results[app][top]["ack"], 99) / pct(results[BARE][top]["ack"], 99) for app in (OFF, ON)}
    first = {n: pct(results[ON][n]["first"], 95) * 1000 for n in rounds}
    shown = {n: f"{len(results[ON][n]['first'])}/{len(results[ON][n]['ack']) // 2}" for n in rounds}
    print(f"ack p99 at {top} threads / bare Bolt: first step off {ratios[OFF]:.2f}x, on {ratios[ON]:.2f}x "
          f"(goal <= {GOAL_RATIO}x)")
    print("first thing shown p95, first step on: " + ", ".join(f"{first[n]:.0f} ms at {n} thread(s)" for n in rounds)
          + f" (goal < {GOAL_FIRST_MS:.0f} ms; answers found: " + ", ".join(shown.values()) + ")")
    met = None if quick else (ratios[ON] <= GOAL_RATIO and all(v < GOAL_FIRST_MS for v in first.values()))
    return Headline(f"ack p99 {ratios[ON]:.2f}x bare Bolt at {top} threads; first step p95 "
                    + " / ".join(f"{first[n]:.0f}" for n in rounds) + f" ms at {'/'.join(map(str, rounds))} threads",
                    f"ack p99 <= {GOAL_RATIO}x bare Bolt; first step p95 < {GOAL_FIRST_MS:.0f} ms", met)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main(quick="--quick" in sys.argv[1:])
    print(f"(took {time.perf_counter() - t0:.1f} s)")
