"""Slack adapter latency with 50 threads in flight: ack p99 and time-to-first-feedback p95, vs a bare ack-only app.

`--quick` (make test): 5 threads in flight instead of 50, the same two apps as processes of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Headline  # noqa: E402
from bench._slack_answers import answer_times  # noqa: E402
from tests.fakes.anthropic_api import API_KEY, FakeAnthropic, text  # noqa: E402
from tests.fakes.slack_api import SlackEmulator  # noqa: E402
from tests.fakes.slack_socket import Envelope  # noqa: E402

THREADS = 50
QUICK_THREADS = 5
LOG_TAIL = 30  # lines of an app's output shown when a run fails
LLM_DELAY = 0.2  # seconds the emulated model takes per answer


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def warm_up(slack: SlackEmulator, done: str | None = None) -> None:
    """One mention first, so one-time costs (auth.test, first connections) are not in the numbers."""
    _, envs = slack.mention("warm-up")
    for env in envs:
        await slack.await_ack(env, timeout=30)
    if done:
        await slack.await_for("reactions.add", lambda c: c.params["name"] == done, timeout=30)


async def burst(slack: SlackEmulator, threads: int) -> tuple[list[str], list[Envelope]]:
    """`threads` mentions back to back: each arrives twice (app_mention + message.channels), like in Slack."""
    stamps, envelopes = [], []
    for i in range(threads):
        ts, envs = slack.mention(f"question {i}: how many people are in the lobby?")
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
    keep = ("PATH", "HOME", "LANG", "TMPDIR")
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


async def full_bot(llm: FakeAnthropic, threads: int) -> dict[str, list[float]]:
    with SlackEmulator() as slack, tempfile.TemporaryDirectory() as root:
        exe = os.path.join(os.path.dirname(sys.executable), "vision-agent")
        async with in_process([exe, "serve"], env_for(slack, llm, root), slack, "white_check_mark"):
            stamps, envelopes = await burst(slack, threads)
            await slack.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark"
                                  and c.params["timestamp"] in stamps, count=threads, timeout=120)
    sent = {e.payload["event"]["ts"]: e.sent_at[0] for e in envelopes if e.payload["event"]["type"] == "app_mention"}
    feedback: dict[str, float] = {}
    for call in slack.calls_to("reactions.add", lambda c: c.params["name"] == "eyes" and c.params["timestamp"] in sent):
        feedback.setdefault(call.params["timestamp"], call.time - sent[call.params["timestamp"]])
    reply_at = {ts: answer_times(slack, "C0GENERAL", ts)[1] for ts in stamps}  # streamed (stopStream) or posted
    return {"ack": acks(envelopes), "feedback": list(feedback.values()),
            "reply": [t - sent[ts] for ts, t in reply_at.items() if t is not None]}


async def bare_bolt(llm: FakeAnthropic, threads: int) -> dict[str, list[float]]:
    """The floor: a Bolt app over the same socket whose listeners do nothing (ack only)."""
    with SlackEmulator() as slack, tempfile.TemporaryDirectory() as root:
        async with in_process([sys.executable, "-c", BARE_APP], env_for(slack, llm, root), slack, None):
            _, envelopes = await burst(slack, threads)
    return {"ack": acks(envelopes)}


async def measure(threads: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    llm = FakeAnthropic().start()
    llm.handler = lambda body: text("About three people.", delay=LLM_DELAY)
    try:
        return await full_bot(llm, threads), await bare_bolt(llm, threads)
    finally:
        llm.stop()


def main(quick: bool = False) -> Headline:
    threads = QUICK_THREADS if quick else THREADS
    full, bare = asyncio.run(measure(threads))
    ms = 1000.0
    print(f"{threads} threads in flight ({2 * threads} envelopes), emulated model answers in {LLM_DELAY * ms:.0f} ms")
    print(f"{'':<28}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}")
    rows = [("ack, bare ack-only Bolt", bare["ack"]), ("ack, vision-agent", full["ack"]),
            ("first feedback (eyes)", full["feedback"]), ("final reply", full["reply"])]
    for name, values in rows:
        print(f"{name:<28}{pct(values, 50) * ms:>9.1f}{pct(values, 95) * ms:>9.1f}{pct(values, 99) * ms:>9.1f}")
    ratio = pct(full["ack"], 99) / pct(bare["ack"], 99)
    print(f"ack p99 ratio vision-agent / bare Bolt: {ratio:.2f}x "
          f"(p50 ratio {statistics.median(full['ack']) / statistics.median(bare['ack']):.2f}x)")
    feedback = pct(full["feedback"], 95) * ms
    print(f"time-to-first-feedback p95: {feedback:.0f} ms "
          f"({len(full['feedback'])}/{threads} threads got the eyes reaction)")
    return Headline(f"ack p99 {ratio:.2f}x bare Bolt; first feedback p95 {feedback:.0f} ms "
                    f"({len(full['feedback'])}/{threads} threads)", "vs a bare ack-only Bolt app")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main(quick="--quick" in sys.argv[1:])
    print(f"(took {time.perf_counter() - t0:.1f} s)")
