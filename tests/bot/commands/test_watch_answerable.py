"""/vision watch on a camera with a pipeline: watches that could never answer are refused or said at once, and the
refusals show the watch form to type (not a rule's)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bot.commands.dispatch import CommandContext, run_command
from bot.config import Settings
from bot.llm.budget import Payer
from bot.monitoring.watches import WatchBook
from bot.storage import open_storage
from tests.bot.commands.test_commands_monitoring import make_ctx
from tests.tools.fake_backend import FakeBackend


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def ctx(settings: Settings, workspace_dir: Path, tmp_path: Path, backend: FakeBackend):
    ctx = make_ctx(settings, workspace_dir, backend)
    assert ctx.services.router is not None
    book = WatchBook(open_storage(tmp_path / "watches.json"), ctx.services.router)
    ctx.services = replace(ctx.services, watches=book)
    yield ctx
    ctx.scheduler.stop()


async def say(ctx: CommandContext, line: str) -> tuple[bool, str]:
    reply = await run_command(line, ctx)
    return reply.ok, reply.text


async def test_watches_that_can_never_hold_are_refused_with_what_to_ask(ctx: CommandContext) -> None:
    assert (await say(ctx, "start 0 name=street model=builtin/people"))[0]
    refusals = {
        "watch street count person<0": "`count person<0` can never hold: a count is never below 0. "
                                       "Ask `count person<1`",
        "watch street count person&lt;0.0": "can never hold",  # as Slack sends '<'
        "watch street count person<-2": "can never hold",
        "watch street absent person 99999999": "needs 27777.8 h to hold, but the watch lasts 2 h",
        "watch street zone 3600 for 30m": "needs 60 min to hold, but the watch lasts 30 min",
    }
    for line, said in refusals.items():
        ok, text = await say(ctx, line)
        assert not ok and said in text, (line, text)
    ok, text = await say(ctx, "watch street count person<=2")  # counts are whole: <=2 is <3
    assert ok and "once fewer than 3 people are in view" in text, text
    assert ctx.services.watches is not None and len(ctx.services.watches.all()) == 1


async def test_line_and_zone_watches_say_what_pipeline_they_need(ctx: CommandContext) -> None:
    await say(ctx, "start 0 name=street model=builtin/people")
    ok, text = await say(ctx, "watch street line for 1m")
    assert ok and "once something crosses the line, then stop." in text, text
    assert "It needs a pipeline started with line=." in text, text
    ok, text = await say(ctx, "watch street zone 30")
    assert ok and "It needs a pipeline started with zone=." in text, text


async def test_a_camera_that_counts_a_line_already_gets_no_line_hint(ctx: CommandContext) -> None:
    """Said to everyone, the hint read as a doubt on a camera already counting (field test)."""
    assert (await say(ctx, "start 0 name=gate model=builtin/people line=320,0,320,480"))[0]
    ok, text = await say(ctx, "watch gate line for 1m")
    assert ok and "once something crosses the line, then stop." in text and "needs a pipeline" not in text, text
    ok, text = await say(ctx, "rule gate line")
    assert ok and "needs a pipeline" not in text, text
    ok, text = await say(ctx, "rule gate zone 30")  # it has no zone
    assert ok and "It needs a pipeline started with zone=." in text, text


async def test_a_watch_on_a_finished_pipeline_says_no_pipeline_runs(ctx: CommandContext,
                                                                   backend: FakeBackend) -> None:
    await say(ctx, "start 0 name=street model=builtin/people")
    ok, text = await say(ctx, "watch street absent person 60")
    assert ok and "No pipeline runs" not in text, text
    [handle] = ctx.manager().snapshot()
    backend.handles[handle.pipeline_id] = backend.handles[handle.pipeline_id].with_(status="finished")
    assert (await ctx.manager().status("street")).status == "finished"
    ok, text = await say(ctx, "watch street count person<1")
    assert ok and "No pipeline runs on street now (its pipeline is finished): the watch looks once one does " \
                  "(`/vision start street`)." in text, text


async def test_confirm_without_the_model_is_said_at_creation(ctx: CommandContext) -> None:
    await say(ctx, "start 0 name=street model=builtin/people")
    book = ctx.services.watches
    assert book is not None
    ok, text = await say(ctx, "watch street appears person confirm")
    assert ok and "`confirm` needs the model" in text and "marked not confirmed" in text, text

    async def look(frame: bytes, question: str, payer: Payer) -> bool | None:
        return True

    book.confirm = look
    book.model_ready = lambda: False  # the runtime's llm_ready: no key
    assert "`confirm` needs the model" in (await say(ctx, "watch street appears person confirm"))[1]
    book.model_ready = lambda: True
    ok, text = await say(ctx, "watch street appears person confirm")
    assert ok and "after the model confirms it" in text and "needs the model" not in text, text


async def test_refusals_show_the_watch_form_and_counts_read_as_english(ctx: CommandContext) -> None:
    await say(ctx, "start 0 name=street model=builtin/people")
    refusals = {
        "watch street appears car": "e.g. `/vision watch street appears person`.",
        "watch street absent cars 60": "e.g. `/vision watch street absent person 60`.",
        "watch street count car&lt;2": "e.g. `/vision watch street count person<2`.",
        "watch street zone -3": "zone takes a number of seconds, e.g. `zone 60`, not '-3'.",
        "watch street count person<1e309": "count takes CLASS>N or CLASS<N",
        "watch street count person>x": "count takes CLASS>N or CLASS<N",
    }
    for line, said in refusals.items():
        ok, text = await say(ctx, line)
        assert not ok and said in text and "/vision rule" not in text, (line, text)
    assert "once more than 3 people are in view" in (await say(ctx, "watch street count person>3"))[1]
    assert "once more than 1 person is in view" in (await say(ctx, "watch street count person>1"))[1]
    assert "once fewer than 1 person is in view" in (await say(ctx, "watch street count person<1"))[1]
    assert "once fewer than 2 objects are in view" in (await say(ctx, "watch street count *<2"))[1]


async def test_a_line_watch_says_what_it_needs_once_and_its_end_reads_plainly(ctx: CommandContext) -> None:
    """The hint was part of the condition's words, so every later line nested it: "watch `w…` (something crosses the
    line (needs a pipeline started with line=)) ended without an answer" (field test), and the model was asked
    whether a frame shows that "… (needs a pipeline started with line=)"."""
    await say(ctx, "start 0 name=street model=builtin/people")
    ok, text = await say(ctx, "watch street line for 1m")
    assert ok and text.count("needs a pipeline started with line=") == 1, text
    book = ctx.services.watches
    assert book is not None
    [handle] = ctx.manager().snapshot()
    [notice] = book.outlived(handle.with_(status="finished"))
    assert notice.text.endswith("(something crosses the line) ended without an answer"), notice.text
