"""The watch book: a watch answers its asker once and ends, runs out with a line, survives a restart, and with
`confirm` tells only what the model agreed it sees."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.backends.base import Detection, InferenceResult
from bot.llm.budget import Payer
from bot.monitoring.rules import Rule
from bot.monitoring.watch import EXPIRED, Watch
from bot.monitoring.watch_conditions import AbsentFor, CountUnder, RuleCondition
from bot.monitoring.watches import MAX_LOOKS, WatchBook
from bot.storage import open_storage
from tests.bot.monitor_helpers import JPEG, Clock, FakePipelines, make_router
from tests.fakes.waits import patience


def people(n: int) -> InferenceResult:
    dets = tuple(Detection("person", 0.9, (10.0 * i, 10.0, 10.0 * i + 8, 30.0), i) for i in range(n))
    return InferenceResult(detections=dets, frame=JPEG)


def _book(tmp_path: Path, clock: Clock) -> tuple[WatchBook, FakePipelines, list]:
    router, sink = make_router(tmp_path, clock)
    pipes = FakePipelines()
    pipes.add("dock")
    book = WatchBook(open_storage(tmp_path / "watches.json"), router, clock=clock)
    book.start(pipes)
    return book, pipes, sink.received


def _watch(clock: Clock, condition, seconds: float = 3600.0, **kw) -> Watch:
    return Watch(Watch.new_id(), "dock", condition, clock.now, clock.now + seconds, **kw)


async def until(check, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + patience(timeout)
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_a_watch_answers_its_asker_once_in_their_thread_and_ends(tmp_path: Path) -> None:
    clock = Clock()
    book, pipes, sent = _book(tmp_path, clock)
    w = book.add(_watch(clock, RuleCondition(Rule("class_appears", "dock", class_name="person")), user_id="U0ASKER",
                        channel="C0OPS", thread_ts="1700000000.000100"))
    other = book.add(_watch(clock, RuleCondition(Rule("count_over", "dock", class_name="person", threshold=3))))
    pipes.push("dock", people(0))
    await book.flush()
    assert sent == []
    pipes.push("dock", people(2))
    pipes.push("dock", people(2))
    await book.flush()
    [(alert, channel)] = sent
    assert channel == "C0OPS" and alert.thread_ts == "1700000000.000100" and alert.frame == JPEG
    assert alert.text.startswith("<@U0ASKER> person appeared (2 people in view)") and f"`{w.id}`" in alert.text
    assert [x.id for x in book.all()] == [other.id]  # the answered one is gone, the other still waits
    assert open_storage(tmp_path / "watches.json").table("watches").get(id=w.id) is None


async def test_nobody_left_and_absent_for_a_while_fire_on_the_change(tmp_path: Path) -> None:
    clock = Clock()
    book, pipes, sent = _book(tmp_path, clock)
    book.add(_watch(clock, CountUnder("person", 1)))
    book.add(_watch(clock, AbsentFor("person", 30)))
    pipes.push("dock", people(2))
    clock.advance(20)
    pipes.push("dock", people(0))  # gone now, not yet for 30 s
    await book.flush()
    assert [a.text.split(".")[0] for a, _ in sent] == ["0 people in view, under 1"]
    clock.advance(31)
    pipes.push("dock", people(0))
    await book.flush()
    assert sent[-1][0].text.startswith("no person in view for 51 s (nothing in view)")
    assert book.all() == []


async def test_a_watch_that_runs_out_says_so_in_one_line_where_it_answers(tmp_path: Path) -> None:
    clock = Clock()
    book, _, sent = _book(tmp_path, clock)
    w = book.add(_watch(clock, RuleCondition(Rule("class_appears", "dock", class_name="truck")), seconds=0.05,
                        user_id="U0ASKER", channel="C0OPS"))
    await until(lambda: bool(sent))
    [(alert, channel)] = sent
    assert alert.rule == EXPIRED and channel == "C0OPS" and alert.frame is None
    assert alert.text == f"<@U0ASKER> Watch `{w.id}` on dock ended: truck appears did not happen within 0 s."
    assert book.all() == []


async def test_watches_come_back_after_a_restart_and_one_that_ran_out_meanwhile_says_so(tmp_path: Path) -> None:
    clock = Clock()
    book, _, _ = _book(tmp_path, clock)
    kept = book.add(_watch(clock, CountUnder("person", 1), seconds=7200, confirm=True, about="last one out"))
    late = book.add(_watch(clock, RuleCondition(Rule("line_crossed", "dock")), seconds=60))
    book.close()
    clock.advance(120)  # the bot was down two minutes
    again, pipes, sent = _book(tmp_path, clock)
    await until(lambda: bool(sent))
    assert [w.id for w in again.all()] == [kept.id] and again.all()[0] == kept
    assert sent[0][0].rule == EXPIRED and late.id in sent[0][0].text
    pipes.push("dock", people(0))  # it still works after the restart (no model here: said unconfirmed)
    await again.flush()
    assert "(not confirmed: the model could not look)" in sent[-1][0].text and again.all() == []


async def test_confirm_tells_only_what_the_model_agreed_it_sees(tmp_path: Path) -> None:
    clock = Clock()
    book, pipes, sent = _book(tmp_path, clock)
    asked: list[tuple[bytes, str]] = []
    verdicts = iter([False, True])

    async def look(frame: bytes, question: str, payer: Payer) -> bool | None:
        asked.append((frame, question))
        return next(verdicts)

    book.confirm = look
    book.add(_watch(clock, RuleCondition(Rule("class_appears", "dock", class_name="person")), confirm=True,
                    about="a courier at the door"))
    pipes.push("dock", people(1))
    await book.flush()
    pipes.push("dock", people(1))  # still in view: the same sighting, not asked again
    await book.flush()
    assert sent == [] and len(asked) == 1 and len(book.all()) == 1
    clock.advance(10)
    pipes.push("dock", people(0))
    pipes.push("dock", people(1))  # a new sighting after a clear gap: asked again, and this time it agrees
    await book.flush()
    assert len(asked) == 2 and asked[1][0] == JPEG
    assert "person appears" in asked[1][1] and "a courier at the door" in asked[1][1]
    assert "(the model agreed on the frame)" in sent[0][0].text and book.all() == []


async def test_a_confirm_watch_the_model_keeps_refusing_ends_after_its_looks_and_says_so(tmp_path: Path) -> None:
    clock = Clock()
    book, pipes, sent = _book(tmp_path, clock)
    asked: list[str] = []

    async def look(frame: bytes, question: str, payer: Payer) -> bool | None:
        asked.append(question)
        return False

    book.confirm = look
    w = book.add(_watch(clock, RuleCondition(Rule("class_appears", "dock", class_name="person")), confirm=True))
    for _ in range(MAX_LOOKS + 3):
        pipes.push("dock", people(1))
        await book.flush()
        clock.advance(10)
        pipes.push("dock", people(0))  # a clear gap: the next sighting is a new one
    await book.flush()
    assert len(asked) == MAX_LOOKS and book.all() == []
    [(alert, _)] = sent
    assert alert.rule == EXPIRED and alert.text.startswith(f"Watch `{w.id}` on dock ended: the model did not see "
                                                           f"person appears in {MAX_LOOKS} sightings")
