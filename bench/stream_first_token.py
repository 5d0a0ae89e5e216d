"""Time to the first visible token or step after a mention: streamed answers vs the post-at-end path, one run.

The real bot (`vision-agent serve`) against the Slack emulator, twice: with `slack.stream_answers` on (the default)
and off. The emulated model streams its answer slowly (40 SSE text pieces, 50 ms apart, as a real model writes), so
what people wait for is the model, not Slack. For each of MENTIONS mentions, one at a time: from the moment the
emulator sent the event to the first chat.startStream/appendStream that shows words or a step (streamed), or the
first chat.postMessage of the answer (posted); and to the complete answer. p50/p95 of each.

`--quick` (make test): 3 mentions per path instead of 20, the same bot, emulators and model pace.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Headline  # noqa: E402
from bench._slack_answers import answer_times  # noqa: E402
from bench.slack_latency import env_for, in_process, pct  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, text  # noqa: E402
from tests.fakes.slack_api import ApiCall, SlackEmulator  # noqa: E402

MENTIONS = 20
QUICK_MENTIONS = 3
PIECES, PACE = 40, 0.05  # the emulator streams text 12 characters a piece
ANSWER = ("The door camera saw two people come in and one go out since nine. " * 8)[: PIECES * 12]


def finished(ts: str) -> Callable[[ApiCall], bool]:
    """The bot's final ✅ on the message `ts`."""
    return lambda c: c.params["name"] == "white_check_mark" and c.params["timestamp"] == ts


async def one_path(llm: FakeAnthropic, stream: bool, mentions: int) -> dict[str, list[float]]:
    """`mentions` mentions, one after the other, against a fresh bot; seconds from each event to first/complete."""
    with SlackEmulator() as slack, tempfile.TemporaryDirectory() as root:
        (Path(root) / "config.yaml").write_text(f"slack:\n  stream_answers: {'true' if stream else 'false'}\n")
        exe = os.path.join(os.path.dirname(sys.executable), "vision-agent")
        first: list[float] = []
        complete: list[float] = []
        async with in_process([exe, "serve"], env_for(slack, llm, root), slack, "white_check_mark"):
            for i in range(mentions):
                ts, envelopes = slack.mention(f"question {i}: what happened at the door?")
                await slack.await_for("reactions.add", finished(ts), timeout=60)
                sent = min(e.sent_at[0] for e in envelopes if e.sent_at)
                shown, done = answer_times(slack, "C0GENERAL", ts)
                if shown is None or done is None:
                    raise RuntimeError(f"no answer found in thread {ts}")
                first.append(shown - sent)
                complete.append(done - sent)
        streamed = len(slack.calls_to("chat.startStream"))
    if stream and streamed < mentions:
        raise RuntimeError(f"only {streamed}/{mentions} answers streamed")
    return {"first": first, "complete": complete}


STREAMED, POSTED = "streamed (chat.*Stream)", "posted at the end"


async def measure(mentions: int) -> dict[str, dict[str, list[float]]]:
    llm = FakeAnthropic().start()
    llm.handler = lambda body: text(ANSWER, pace=PACE)
    try:
        return {STREAMED: await one_path(llm, True, mentions), POSTED: await one_path(llm, False, mentions)}
    finally:
        llm.stop()


def main(quick: bool = False) -> Headline:
    mentions = QUICK_MENTIONS if quick else MENTIONS
    results = asyncio.run(measure(mentions))
    ms = 1000.0
    print(f"{mentions} mentions one at a time; the emulated model streams {PIECES} pieces {PACE * ms:.0f} ms apart")
    print(f"{'':<26}{'first p50':>11}{'first p95':>11}{'done p50':>10}{'done p95':>10}   (ms after the event)")
    for name, r in results.items():
        print(f"{name:<26}{pct(r['first'], 50) * ms:>11.0f}{pct(r['first'], 95) * ms:>11.0f}"
              f"{pct(r['complete'], 50) * ms:>10.0f}{pct(r['complete'], 95) * ms:>10.0f}")
    streamed, posted = (pct(results[k]["first"], 50) * ms for k in (STREAMED, POSTED))
    return Headline(f"first word/step p50 {streamed:.0f} ms streamed vs {posted:.0f} ms posted",
                    "streamed vs posted answer")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main(quick="--quick" in sys.argv[1:])
    print(f"(took {time.perf_counter() - t0:.1f} s)")
