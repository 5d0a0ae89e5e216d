"""Mentions, DMs and thread follow-ups → one serial session queue per thread → agent turns rendered in place."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from bot.rights import Requester
from handlers.answers.feedback import delete_quietly, run_stoppable
from handlers.answers.opening import (
    IMAGE,
    PIPELINES,
    THREAD,
    first_steps,
    images_outcome,
    pipelines_outcome,
    thread_outcome,
)
from handlers.answers.render import WORKING, TurnRenderer, react
from handlers.answers.stream_render import StreamRenderer, renderer_for
from handlers.context import SlackBot
from handlers.state.inflight import resume_plan, turn_key
from handlers.state.queue import Job
from handlers.state.threads import Conversation, conversation_for
from handlers.transport.people import clean_text

log = logging.getLogger(__name__)

# Subtypes that are a person saying something; everything else (edits, deletes, joins, bot_message…) is ignored.
HUMAN_SUBTYPES = {None, "file_share", "thread_broadcast"}
FEEDBACK_WAIT = 2.0
FIRST_STEP_HOPS = 3  # loop turns a 👀 yields after the acks: turns their dispatch releases are taken meanwhile
TITLE_CHARS = 60
EMPTY_HINT = "Hi! Ask me about a camera or a picture — attach an image or name a camera. `/vision help` lists commands."


@dataclass
class Turn:
    conv: Conversation
    text: str
    files: list[dict[str, Any]] = field(default_factory=list)
    user: str = ""  # who wrote it: the tools this turn runs act with this person's rights
    feedback: asyncio.Task[Any] | None = None  # the "working" reaction, sent before any turn starts
    started: int | None = None  # taken up again after a restart: session length when it first began
    answered: bool = False  # taken up again after a restart with its answer already in the thread
    opening: bool = False  # counted in bot.openings: taken into an idle thread, its first step not yet out


_FIELD_TYPES = {"channel": str, "ts": str, "user": str, "text": str, "thread_ts": str, "files": list}


def well_formed(event: Any) -> bool:
    """The fields the adapter relies on have Slack's types (a malformed payload is dropped, not crashed on)."""
    return (isinstance(event, dict) and bool(event.get("channel")) and bool(event.get("ts"))
            and all(event.get(k) is None or isinstance(event[k], t) for k, t in _FIELD_TYPES.items()))


def is_from_person(event: dict[str, Any], bot: SlackBot) -> bool:
    """Ignore our own posts, other bots, edits/deletes/joins, hidden events and malformed payloads."""
    if not well_formed(event) or event.get("subtype") not in HUMAN_SUBTYPES or event.get("hidden"):
        return False
    if event.get("bot_id") or event.get("bot_profile") or not event.get("user"):
        return False
    return event["user"] != bot.bot_user_id


def take(bot: SlackBot, body: dict[str, Any], event: dict[str, Any], mentioned: bool) -> Turn | None:
    """Decide synchronously (no await: arrival order is kept) whether this message is ours; queue it if so."""
    bot.note_event()
    if not is_from_person(event, bot):
        return None
    conv = conversation_for(event, str(body.get("team_id") or event.get("team") or bot.team_id))
    mentioned = mentioned or (bool(bot.bot_user_id) and f"<@{bot.bot_user_id}" in (event.get("text") or ""))
    if not (conv.is_dm or mentioned or bot.threads.known(conv.channel, event.get("thread_ts"))):
        return None
    keys = (f"{conv.channel}:{conv.message_ts}", str(body.get("event_id") or ""))
    if bot.dedupe.seen(*keys):  # Slack's retry, or the message.channels twin of an app_mention
        return None
    bot.dedupe.add(*keys)
    if conv.thread_ts and not conv.is_dm:
        bot.threads.remember(conv.team, conv.channel, conv.thread_ts)
    files = [f for f in event.get("files") or [] if isinstance(f, dict)]
    turn = Turn(conv, event.get("text") or "", files, user=event["user"])
    assert bot.queues is not None
    if bot.queues.idle(conv.key):  # it starts at once: the 👀s of this burst go after its first step
        turn.opening = True
        bot.openings.expect()
    bot.queues.submit(conv.key, conv.message_ts, turn)
    bot.inflight.add(conv, turn.text, files)  # right after the ack: a crash from here on is finished after restart
    return turn


def resume_open_turns(bot: SlackBot) -> int:
    """Queue again the turns an earlier run took and did not finish (a crash); call once the socket is up."""
    assert bot.queues is not None
    open_turns = bot.inflight.open_turns()
    for t in open_turns:
        if t.stop_line:  # its Stop button died with the process that offered it
            bot.spawn(delete_quietly(bot.client, t.conv.channel, t.stop_line))
        if not t.answered:  # its streamed steps stay "in progress" forever: the turn is answered afresh below them
            for ts in t.streams:
                bot.spawn(delete_quietly(bot.client, t.conv.channel, ts))
        turn = Turn(t.conv, t.text, t.files, user=t.conv.user, started=t.started, answered=t.answered)
        bot.queues.submit(t.conv.key, t.conv.message_ts, turn)
        _acknowledge(bot, turn, bot.client)
    if open_turns:
        log.info("finishing %d turn(s) interrupted by the last stop", len(open_turns))
    return len(open_turns)


async def _after_acks(bot: SlackBot, call: Coroutine[Any, Any, Any]) -> Any:
    """The 👀 call, sent once the envelopes read so far are acked (a burst acks first, then says it is on it), and
    after the first steps of the turns taken meanwhile (bot.openings): a step in the thread says more than a
    reaction, and at 50 threads the reactions' calls would otherwise go out ahead of the last threads' steps."""
    await bot.acks.wait()
    for _ in range(FIRST_STEP_HOPS):
        await asyncio.sleep(0)
    await bot.openings.wait()
    return await call


def _acknowledge(bot: SlackBot, turn: Turn | None, client: Any) -> None:
    if turn is not None:  # feedback at once, even when the thread is still busy with an earlier message
        turn.feedback = bot.spawn(_after_acks(bot, react(client, turn.conv.channel, turn.conv.message_ts,
                                                          add=WORKING)))
        bot.feedback.add(turn.feedback)
        turn.feedback.add_done_callback(bot.feedback.discard)


async def handle_mention(body: dict[str, Any], event: dict[str, Any], client: Any, context: Any) -> None:
    """app_mention: answered in the thread rooted at the mention."""
    _acknowledge(context["vision"], take(context["vision"], body, event, mentioned=True), client)


async def handle_message(body: dict[str, Any], event: dict[str, Any], client: Any, context: Any) -> None:
    """message.im / .channels / .groups: DMs, follow-ups in our threads, and mentions arriving this way first."""
    _acknowledge(context["vision"], take(context["vision"], body, event, mentioned=False), client)


async def _feedback_out(bot: SlackBot) -> None:
    """Wait (up to FEEDBACK_WAIT in all) until no 👀 or first step is in flight, including those of turns taken
    while waiting: in a burst, later envelopes are dispatched while the first ones' feedback is on its way.
    The turns of a burst share one wait (each waiting on every feedback call itself cost 50 x 100 callbacks at
    50 threads, spent while the last first steps were still to go out)."""
    if not bot.feedback:
        return
    if bot.feedback_drain is None or bot.feedback_drain.done():
        bot.feedback_drain = asyncio.ensure_future(_drain_feedback(bot))
    await asyncio.shield(bot.feedback_drain)


async def _drain_feedback(bot: SlackBot) -> None:
    deadline = asyncio.get_running_loop().time() + FEEDBACK_WAIT
    while bot.feedback and (left := deadline - asyncio.get_running_loop().time()) > 0:
        await asyncio.wait(set(bot.feedback), timeout=left)


async def run_turn(bot: SlackBot, job: Job) -> None:
    """The queue worker: fetch images, run the agent, render its events, set the final reaction."""
    turn: Turn = job.payload
    opening = None
    try:
        r = renderer_for(bot, turn.conv)
        bot.stats.turns += 1
        opening = _first_steps(bot, turn, r)  # on screen before the 👀 (which waits for it) and the prompt
    finally:
        _opened(bot, turn, opening)
    # Building a prompt holds the event loop for tens of ms; let every pending "working" reaction and first step
    # leave first, so people see within a moment that we are on it however many threads start at once.
    await _feedback_out(bot)
    try:
        if not turn.answered:  # a turn taken up after a restart may only lack its final reaction
            await r.status("is thinking…")
            await _converse(bot, turn, r)
    except asyncio.CancelledError:
        raise  # shutting down: the turn stays open on disk and is finished after the restart
    except Exception as exc:  # the agent or Slack broke mid-turn: say so in the thread, never silently
        log.exception("turn in %s failed", turn.conv.key)
        bot.stats.turn_errors += 1
        try:
            await r.error(f"Something went wrong on my side ({type(exc).__name__}); try again in a moment.")
        except Exception:
            log.exception("could not report the failure in %s", turn.conv.key)
    bot.inflight.answered(turn.conv)
    await r.finish(turn.feedback)  # never raises; ✅ or ⚠️ replaces 👀 even when the answer could not go out
    bot.inflight.done(turn.conv)


def _joins_late(bot: SlackBot, conv: Conversation) -> bool:
    """Mentioned in a thread the bot had no part in: what others wrote there is read before the model is asked."""
    return (not conv.is_dm and conv.thread_ts is not None and conv.thread_ts != conv.message_ts
            and bot.agent.sessions.length(conv.key) == 0)


def _first_steps(bot: SlackBot, turn: Turn, r: TurnRenderer) -> asyncio.Task[Any] | None:
    """Open a streamed answer with what the turn does before the model speaks (handlers/answers/opening.py); the
    call joins `bot.feedback`, so no thread builds its prompt (which holds the event loop) before it is out.
    Returns the task sending it, None when the turn has no first step."""
    if not isinstance(r, StreamRenderer) or turn.started is not None or turn.answered \
            or not bot.settings.slack.first_step or bot.llm_unavailable():
        return None
    steps = first_steps(clean_text(turn.text, bot.bot_user_id), turn.files, _joins_late(bot, turn.conv))
    task = r.begin(steps, before=bot.acks.wait)
    if task is not None:
        bot.feedback.add(task)
        task.add_done_callback(bot.feedback.discard)
    return task


def _opened(bot: SlackBot, turn: Turn, sending: asyncio.Task[Any] | None) -> None:
    """The turn's first step is out (or it has none): it no longer holds back the 👀s (once per turn)."""
    if not turn.opening:
        return
    turn.opening = False
    if sending is None:
        bot.openings.settle()
    else:
        sending.add_done_callback(lambda _t: bot.openings.settle())


async def _converse(bot: SlackBot, turn: Turn, r: TurnRenderer) -> None:
    if turn.started is not None:  # begun before a crash: never ask the same question twice
        plan, text = resume_plan(bot.agent.sessions, turn.conv.key, turn.started)
        if plan == "answer":  # the answer was saved (and paid for) but maybe never shown
            await r.reply(text)
            return
        if plan == "continue":
            await _ask(bot, turn, r, text, [])
            return
    attachments = []
    if turn.files:
        fetched = await bot.fetcher.fetch_all(turn.files, bot.client)
        attachments = fetched.attachments
        if isinstance(r, StreamRenderer):
            r.step_done(IMAGE, *images_outcome([a.name for a in attachments], len(fetched.refusals)))
            if fetched.refusals:  # the refusal reads before the answer: the answer streams on below it
                await r.split()
        for line in fetched.refusals:
            await r.note(line)
    text = clean_text(turn.text, bot.bot_user_id)
    if not text and not attachments:
        if not turn.files:
            await r.reply(EMPTY_HINT)
        return
    await _ask(bot, turn, r, text, attachments)


async def _ask(bot: SlackBot, turn: Turn, r: TurnRenderer, text: str, attachments: list[Any]) -> None:
    why_not = bot.llm_unavailable()
    if why_not:
        await r.error(f"I can't chat right now: {why_not}. `/vision` commands still work.")
        return
    conv = turn.conv
    # Who asks, by id and display name: the model reads every message marked with its author and follows only
    # the asker's (bot/agent/quoting.py); a thread the bot joins late brings what others said there, marked too.
    asker = Requester.slack(turn.user, conv.channel, conv.place, await bot.people.name(bot.client, turn.user))
    first = bot.agent.sessions.length(conv.key) == 0
    joined = _joins_late(bot, conv)
    earlier = await bot.people.thread_before(bot.client, conv.channel, conv.thread_ts or "", conv.message_ts,
                                             bot.bot_user_id) if joined else []
    bot.inflight.started(conv, bot.agent.sessions.length(conv.key))
    if isinstance(r, StreamRenderer):  # the prompt about to be built carries these: the first steps are done
        r.step_done(THREAD, thread_outcome(len(earlier)))
        r.step_done(PIPELINES, pipelines_outcome([(h.name, h.status) for h in bot.runtime.pipelines.snapshot()]))

    async def answer() -> None:
        async for ev in bot.agent.process_message(conv.key, text, attachments, asker, earlier):
            await r.handle(ev)

    stopped_by = await run_stoppable(bot.client, bot.running, (conv.channel, conv.thread_ts), turn_key(conv),
                                     turn.user, answer(), lambda ts: bot.inflight.stop_offered(conv, ts))
    if stopped_by is not None:  # the loop closed every tool call it had begun; the next message starts clean
        who = "you" if stopped_by == turn.user else "a teammate"
        await r.note(f"Stopped, as {who} asked. Nothing more runs for this message; ask again whenever you like.")
        r.replied = True
        return
    if first and turn.conv.is_dm and turn.conv.thread_ts and r.replied and not r.failed:
        await _title(bot, turn.conv, text)


async def _title(bot: SlackBot, conv: Conversation, text: str) -> None:
    """An agent DM thread is titled after its first answer: the question's first line (best effort)."""
    title = " ".join(text.split())[:TITLE_CHARS] or "Vision Agent"
    if conv.thread_ts is None:  # only a thread has a title (the caller checks; this tells the type checker)
        return
    try:
        await bot.client.assistant_threads_setTitle(channel_id=conv.channel, thread_ts=conv.thread_ts, title=title)
    except Exception as exc:  # a title is never worth failing a turn (e.g. no Agent feature in this workspace)
        log.info("setTitle in %s skipped (%s)", conv.channel, type(exc).__name__)


def register(app: Any, bot: SlackBot) -> None:
    app.event("app_mention")(handle_mention)
    app.event("message")(handle_message)
