"""Time to the first visible step or token after a mention: streamed answers with the first step (issue 34), streamed
without it, and the post-at-end path, one run.

The real bot (`vision-agent serve`, this checkout) against the Slack emulator, three times: `slack.stream_answers`
on with `slack.first_step` on (the defaults) and off, then `stream_answers` off. The emulated model streams its
answer slowly (40 SSE text pieces, 50 ms apart, as a real model writes), so what people wait for is the model, not
Slack. For each of MENTIONS mentions, one at a time: from the moment the emulator sent the event to the first
chat.startStream/appendStream that shows a step or words (streamed), or the first chat.postMessage of the answer
(posted); to the model's first words on screen; and to the complete answer. p50/p95 of each.

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
from bench._slack_answers import answer_times, first_words  # noqa: E402
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


async def one_path(llm: FakeAnthropic, stream: bool, mentions: int, first_step: bool = True
                   ) -> dict[str, list[float]]:
    """`mentions` mentions, one after the other, against a fresh bot; seconds from each event to the first thing
    shown, the first words and the complete answer."""
    with SlackEmulator() as slack, tempfile.TemporaryDirectory() as root:
        (Path(root) / "config.yaml").write_text(f"slack:\n  stream_answers: {'true' if stream else 'false'}\n"
                                                f"  first_step: {'true' if first_step else 'false'}\n")
        exe = os.path.join(os.path.dirname(sys.executable), "vision-agent")
        first: list[float] = []
        words: list[float] = []
        complete: list[float] = []
        async with in_process([exe, "serve"], env_for(slack, llm, root), slack, "white_check_mark"):
            for i in range(mentions):
                ts, envelopes = slack.mention(f"question {i}: what happened at the door?")
                await slack.await_for("reactions.add", finished(ts), timeout=60)
                sent = min(e.sent_at[0] for e in envelopes if e.sent_at)
                shown, done = answer_times(slack, "C0GENERAL", ts)
                said = first_words(slack, "C0GENERAL", ts)
                if shown is None or done is None or said is None:
                    raise RuntimeError(f"no answer found in thread {ts}")
                first.append(shown - sent)
                words.append(said - sent)
                complete.append(done - sent)
        streamed = len(slack.calls_to("chat.startStream"))
    if stream and streamed < mentions:
        raise RuntimeError(f"only {streamed}/{mentions} answers streamed")
    return {"first": first, "words": words, "complete": complete}


STREAMED, BARE, POSTED = "streamed, first step on", "streamed, first step off", "posted at the end"


async def measure(mentions: int) -> dict[str, dict[str, list[float]]]:
    llm = FakeAnthropic().start()
    llm.handler = lambda body: text(ANSWER, pace=PACE)
    try:
        return {STREAMED: await one_path(llm, True, mentions), BARE: await one_path(llm, True, mentions, False),
                POSTED: await one_path(llm, False, mentions)}
    finally:
        llm.stop()


def main(quick: bool = False) -> Headline:
    mentions = QUICK_MENTIONS if quick else MENTIONS
    results = asyncio.run(measure(mentions))
    ms = 1000.0
    print(f"{mentions} mentions one at a time; the emulated model streams {PIECES} pieces {PACE * ms:.0f} ms apart")
    print(f"{'':<26}{'first p50':>11}{'first p95':>11}{'words p50':>11}{'words p95':>11}{'done p50':>10}"
          f"{'done p95':>10}   (ms after the event; first: a step or words)")
    for name, r in results.items():
        print(f"{name:<26}{pct(r['first'], 50) * ms:>11.0f}{pct(r['first'], 95) * ms:>11.0f}"
              f"{pct(r['words'], 50) * ms:>11.0f}{pct(r['words'], 95) * ms:>11.0f}"
              f"{pct(r['complete'], 50) * ms:>10.0f}{pct(r['complete'], 95) * ms:>10.0f}")
    step, bare, posted = (pct(results[k]["first"], 95) * ms for k in (STREAMED, BARE, POSTED))
    return Headline(f"first step/word p95 {step:.0f} ms (first step off {bare:.0f}, posted {posted:.0f})",
                    "first step p95 < 150 ms", None if quick else step < 150)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main(quick="--quick" in sys.argv[1:])
    print(f"(took {time.perf_counter() - t0:.1f} s)")
