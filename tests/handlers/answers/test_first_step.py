"""A streamed answer opens with the turn's first step before the model says anything (issue 34): the image being
looked at, the thread being read, the running pipelines being checked. The model is held (tests/fakes
anthropic_api.held) until the step is seen, so each test says "on screen while the model has not said a word"
without a clock; the order of the emulator's recorded calls says the rest."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from handlers.answers.opening import (
    IMAGE,
    PIPELINES,
    THREAD,
    Openings,
    first_steps,
    images_outcome,
    pipelines_outcome,
)
from tests.fakes.anthropic_api import FakeAnthropic, held, text, tool_use
from tests.fakes.slack_api import ApiCall, SlackEmulator
from tests.fakes.slack_events import HUMAN
from tests.fixtures.slack import RunningBot, await_answers, start_bot, stop_bot

BYSTANDER = "U0BYSTANDER"


def thread_stream(slack: SlackEmulator, channel: str, ts: str) -> list[ApiCall]:
    """The calls that built the streamed answer(s) in a thread, in the order Slack received them."""
    streams = {m["ts"] for m in slack.messages(channel, ts) if "stream_mode" in m}
    return [c for c in slack.calls if c.ok and c.params.get("channel") == channel and (
        c.method == "chat.startStream" and c.params.get("thread_ts") == ts
        or c.method in ("chat.appendStream", "chat.stopStream") and c.params.get("ts") in streams)]


def cards(call: ApiCall) -> list[tuple[str, str, str]]:
    return [(c["id"], c["title"], c["status"]) for c in call.params.get("chunks") or [] if c["type"] == "task_update"]


def has_words(call: ApiCall) -> bool:
    return any(c["type"] == "markdown_text" and c["text"].strip() for c in call.params.get("chunks") or [])


def final_cards(slack: SlackEmulator, channel: str, ts: str) -> dict[str, dict[str, Any]]:
    return {k: v for m in slack.messages(channel, ts) if "stream_mode" in m for k, v in m["tasks"].items()}


async def opened(slack: SlackEmulator, channel: str, ts: str) -> ApiCall:
    [start] = await slack.await_for("chat.startStream", lambda c: c.params.get("thread_ts") == ts, timeout=30)
    return start


async def test_a_question_shows_its_first_step_while_the_model_has_not_said_a_word(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    gate = threading.Event()
    anthropic_api.enqueue(held(text("Nobody is in the lobby right now."), gate))
    ts, _ = slack_api.mention("how many people are in the lobby?")
    start = await opened(slack_api, "C0GENERAL", ts)
    assert cards(start) == [(PIPELINES, "Checking what is running now", "in_progress")]
    assert not any(has_words(c) for c in thread_stream(slack_api, "C0GENERAL", ts))  # the model is still held
    gate.set()
    assert await await_answers(slack_api, "C0GENERAL", ts) == ["Nobody is in the lobby right now."]
    calls = thread_stream(slack_api, "C0GENERAL", ts)
    words = next(n for n, c in enumerate(calls) if has_words(c))
    done = next(n for n, c in enumerate(calls) if (PIPELINES, "Checking what is running now", "complete") in cards(c))
    assert calls[0] is start and 0 < done <= words  # step, then its outcome, at the latest with the first words
    assert final_cards(slack_api, "C0GENERAL", ts)[PIPELINES]["output"] == "no pipeline running"


@pytest.mark.parametrize(("files", "title", "outcome", "status"), [
    ([("door.jpg", "image/jpeg")], "Looking at the image", "door.jpg", "complete"),
    ([("a.png", "image/png"), ("b.jpg", "image/jpeg"), ("c.webp", "image/webp")], "Looking at the 3 images",
     "a.png, b.jpg, c.webp", "complete"),
    ([("notes.pdf", "application/pdf")], "Looking at the attached file", "refused: see the note below", "error"),
])
async def test_attached_files_open_with_looking_at_them_and_say_what_arrived(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic,
    files: list[tuple[str, str]], title: str, outcome: str, status: str
) -> None:
    gate = threading.Event()
    anthropic_api.enqueue(held(text("Seen."), gate))
    shared = [slack_api.add_file(name, _image(kind), kind) for name, kind in files]
    ts, _ = slack_api.mention("what is in these?", files=shared)
    start = await opened(slack_api, "C0GENERAL", ts)
    assert cards(start) == [(IMAGE, title, "in_progress")]  # no other step: the files are what it looks at first
    gate.set()
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] in ("white_check_mark", "warning")
                              and c.params["timestamp"] == ts, timeout=30)
    card = final_cards(slack_api, "C0GENERAL", ts)[IMAGE]
    assert (card["status"], card["output"]) == (status, outcome)
    ours = [m for m in slack_api.messages("C0GENERAL", ts) if m.get("user") == slack_api.bot_user_id]
    if status == "error":  # steps, then the refusal, then the answer below it: "see the note below" holds
        assert [bool(m.get("tasks")) for m in ours] == [True, False, False]
        assert "only look at images" in ours[1]["text"] and ours[2]["text"] == "Seen."
    else:
        assert len(ours) == 1 and ours[0]["text"] == "Seen."  # one message: the steps, then the answer


def _image(kind: str) -> bytes:
    import io

    from PIL import Image

    if not kind.startswith("image/"):
        return b"%PDF-1.4 not an image"
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), (10, 200, 30)).save(buf, {"image/jpeg": "JPEG", "image/png": "PNG",
                                                          "image/webp": "WEBP"}[kind])
    return buf.getvalue()


async def test_a_thread_joined_late_opens_with_reading_it_then_the_pipelines_check(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    # People talk in a thread the bot is not in (stored, not pushed), then one of them asks it.
    root = slack_api.store_message("C0GENERAL", {"type": "message", "user": BYSTANDER, "text": "door cam is odd",
                                                 "team": slack_api.team_id})["ts"]
    for n in range(3):
        slack_api.store_message("C0GENERAL", {"type": "message", "user": BYSTANDER if n % 2 else HUMAN,
                                              "text": f"note {n}", "thread_ts": root, "team": slack_api.team_id})
    gate = threading.Event()
    anthropic_api.enqueue(held(tool_use(("list_pipelines", {})), gate), text("Nothing runs on the door."))
    slack_api.mention("what do you make of this?", thread_ts=root)
    start = await opened(slack_api, "C0GENERAL", root)
    assert cards(start) == [(THREAD, "Reading the thread so far", "in_progress"),
                            (PIPELINES, "Checking what is running now", "pending")]
    gate.set()
    assert await await_answers(slack_api, "C0GENERAL", root) == ["Nothing runs on the door."]
    got = final_cards(slack_api, "C0GENERAL", root)
    # root + 3 notes were there before the mention (the mention itself is the question, not history)
    assert (got[THREAD]["status"], got[THREAD]["output"]) == ("complete", "4 earlier messages")
    assert got[PIPELINES]["status"] == "complete"
    calls = thread_stream(slack_api, "C0GENERAL", root)
    model_step = next(n for n, c in enumerate(calls) if any(i not in (THREAD, PIPELINES) for i, _, _ in cards(c)))
    finished = {i for c in calls[:model_step + 1] for i, _, st in cards(c) if st == "complete"}
    assert {THREAD, PIPELINES} <= finished  # the first steps are done by the time the model's own step shows


async def test_ten_threads_at_once_each_show_their_first_step_before_any_model_word(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    gate = threading.Event()
    anthropic_api.handler = lambda body: held(text("Two people."), gate)
    stamps = [slack_api.mention(f"question {n}: who is at the door?")[0] for n in range(10)]
    for ts in stamps:  # every thread's step is out while the model has answered none of them
        assert cards(await opened(slack_api, "C0GENERAL", ts)) == [(PIPELINES, "Checking what is running now",
                                                                     "in_progress")]
    assert not any(has_words(c) for c in slack_api.calls if "Stream" in c.method)
    gate.set()
    for ts in stamps:
        assert await await_answers(slack_api, "C0GENERAL", ts, timeout=60) == ["Two people."]
        calls = thread_stream(slack_api, "C0GENERAL", ts)
        assert cards(calls[0]) and not has_words(calls[0]) and any(has_words(c) for c in calls[1:])


@pytest.mark.parametrize("threads", [1, 7])
async def test_the_eyes_go_out_after_the_first_steps_even_when_slack_holds_them(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic, threads: int
) -> None:
    """A step in the thread says more than a reaction, so the 👀 of a burst waits for its first steps: here Slack
    answers every thread's first chat.startStream with a 429 (the client waits Retry-After and sends it again), and
    still no 👀 of those threads reaches Slack before that thread's step."""
    slack_bot.bot.openings.WAIT = 600.0  # far beyond the test: only the steps going out may release the 👀
    anthropic_api.handler = lambda body: text("Two people.")
    slack_api.rate_limit("chat.startStream", calls=threads)
    stamps = [slack_api.mention(f"question {n}: who is at the door?")[0] for n in range(threads)]
    for ts in stamps:
        assert await await_answers(slack_api, "C0GENERAL", ts, timeout=60) == ["Two people."]
    ok = [c for c in slack_api.calls if c.ok]
    for ts in stamps:
        step = next(n for n, c in enumerate(ok) if c.method == "chat.startStream" and c.params["thread_ts"] == ts)
        eyes = next(n for n, c in enumerate(ok) if c.method == "reactions.add" and c.params["timestamp"] == ts
                    and c.params["name"] == "eyes")
        assert step < eyes, f"the 👀 of {ts} reached Slack before its first step"
    assert slack_bot.bot.openings.due == 0


async def test_openings_hold_the_eyes_until_every_first_step_due_is_out() -> None:
    openings = Openings()
    openings.WAIT = 60.0  # far beyond the test: only the steps may release it
    openings.expect()
    openings.expect()
    waiting = asyncio.ensure_future(openings.wait())
    for _ in range(20):
        await asyncio.sleep(0)
    openings.settle()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not waiting.done()  # one first step still due
    openings.settle()
    await asyncio.wait_for(waiting, 60)
    await asyncio.wait_for(openings.wait(), 60)  # none due: at once
    openings.WAIT = 0.0
    openings.expect()
    await asyncio.wait_for(openings.wait(), 60)  # never stuck: a step that never settles costs WAIT at most


async def test_with_first_step_off_the_answer_opens_with_the_model_and_a_status_line_says_it_works(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    running = await start_bot(slack_env, slack_api, slack={"first_step": False})
    try:
        anthropic_api.enqueue(text("Quiet."))
        ts, _ = slack_api.mention("anything at the door?")
        assert await await_answers(slack_api, "C0GENERAL", ts) == ["Quiet."]
        calls = thread_stream(slack_api, "C0GENERAL", ts)
        assert has_words(calls[0]) and not any(cards(c) for c in calls)
        assert slack_api.calls_to("assistant.threads.setStatus", lambda c: c.params.get("thread_ts") == ts)
    finally:
        await stop_bot(running)


async def test_a_channel_refusing_streams_gets_no_step_and_the_answer_still_comes_once(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    slack_api.stream_error = "not_allowed"
    anthropic_api.enqueue(text("Posted instead."))
    ts, _ = slack_api.mention("hello there")
    assert await await_answers(slack_api, "C0GENERAL", ts) == ["Posted instead."]
    assert [c.error for c in slack_api.calls if c.method == "chat.startStream"] == ["not_allowed"]  # the step's try
    assert slack_api.calls_to("assistant.threads.setStatus", lambda c: c.params.get("thread_ts") == ts)


# -- what the first step is, for any message (handlers/answers/opening.py) -----------------------------------------

def _file(name: str, mimetype: str | None) -> dict[str, Any]:
    return {"id": "F1", "name": name, **({"mimetype": mimetype} if mimetype else {})}


@pytest.mark.parametrize(("text", "files", "joined", "want"), [
    ("how many cars?", [], False, [(PIPELINES, "Checking what is running now")]),
    ("", [], False, []),  # a bare mention gets the hint, no step
    ("   ", [], True, [(THREAD, "Reading the thread so far")]),
    ("and this?", [_file("x.gif", "image/gif")], True, [(IMAGE, "Looking at the image"),
                                                        (THREAD, "Reading the thread so far")]),
    ("", [_file(f"{n}.jpg", "image/jpeg") for n in range(7)], False, [(IMAGE, "Looking at the 7 images")]),
    ("", [_file("a.jpg", "image/jpeg"), _file("b.mov", "video/quicktime")], False,
     [(IMAGE, "Looking at the 2 attached files")]),
    ("lazy", [_file("x", None)], False, [(IMAGE, "Looking at the attached file")]),  # Slack Connect: no mimetype yet
])
def test_first_steps_follow_what_the_message_carries(text: str, files: list[dict[str, Any]], joined: bool,
                                                     want: list[tuple[str, str]]) -> None:
    assert [(s.id, s.title) for s in first_steps(text, files, joined)] == want


def test_step_outcomes_say_what_was_found() -> None:
    assert images_outcome(["a.jpg"], 0) == ("a.jpg", False)
    assert images_outcome(["a.jpg", "b.png"], 2) == ("a.jpg, b.png (2 refused)", False)
    assert images_outcome([], 1) == ("refused: see the note below", True)
    assert pipelines_outcome([]) == "no pipeline running"
    assert pipelines_outcome([("door", "running"), ("yard", "stopped"), ("lot", "starting")]) == \
        "2 pipelines running: door, lot"
    many = pipelines_outcome([(f"cam{n}", "running") for n in range(9)])
    assert many.startswith("9 pipelines running: cam0, cam1, cam2, cam3") and many.endswith("…")
