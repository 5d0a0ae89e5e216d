"""`/vision watch|watches|unwatch`: one-shot watch tasks ("tell me when a truck reaches the dock in the next 2 hours").

Every door validates the one model (bot/objects/watch.py WatchSpec) and creates through `create_watch`: the grammar,
the camera and class checks, the owner, the caps and where a watch answers are here once; `cancel` lets only its
owner or an operator end one.
"""

from __future__ import annotations

import html
import math
import re
import shlex
from datetime import datetime
from zoneinfo import ZoneInfo

from bot.backends.base import LIVE
from bot.commands.context import CommandContext, CommandReply, fail, parse_options
from bot.commands.rule_classes import UnknownClass, check_class
from bot.commands.rule_grammar import ALL, CountSyntax
from bot.commands.rules import RULE_USAGE, needs_note, parse_rule, resolve_camera
from bot.monitoring.kinds.base import MAX_THRESHOLD
from bot.monitoring.rules import ANY, Rule
from bot.monitoring.watch import Watch, parse_duration, span
from bot.monitoring.watch_conditions import AbsentFor, Condition, CountUnder, RuleCondition
from bot.monitoring.watches import WatchBook
from bot.objects.caps import cap_refusal
from bot.objects.owner import Owner, change_refusal
from bot.objects.refusal import parse
from bot.objects.watch import CONDITIONS, WatchSpec
from bot.places import DM_ROOT, place_of
from bot.rights import LOCAL_CHANNEL

CONDITION_HELP = CONDITIONS
WATCH_USAGE = (f"Usage: `/vision watch CAMERA {CONDITION_HELP} [for 2h] [confirm] [about=\"WORDS\"]` (default "
               "for 2h, at most 24h), e.g. `/vision watch dock appears truck for 2h confirm` or "
               "`/vision watch office absent person 60`")
_UNDER = re.compile(r"^(?P<cls>[^<]+)<(?P<eq>=?)(?P<n>-?\d+(?:\.\d+)?)$")
_AT_MOST = re.compile(r"(<|&lt;)=")
COUNT_FORMS = "count takes CLASS>N or CLASS<N, e.g. `count person>3` or `count person<1` (nobody in view)"


def _book(ctx: CommandContext) -> WatchBook:
    if ctx.services.watches is None:
        raise LookupError("Watches are not available in this process; use `vision-agent serve` or `vision-agent chat`.")
    return ctx.services.watches


def _checked_class(cls: str, camera: str, ctx: CommandContext) -> tuple[str, str]:
    rule, note = check_class(Rule("class_appears", camera, class_name=cls), ctx)
    return rule.class_name or cls, note


def _under(m: re.Match[str], camera: str, ctx: CommandContext) -> tuple[Condition, str]:
    """`count CLASS<N` (or `<=N`: counts are whole, so `< N+1`); refused when no count can ever be that low."""
    n = math.floor(float(m["n"])) + 1 if m["eq"] else float(m["n"])
    if n > MAX_THRESHOLD:
        raise ValueError(f"count takes a number of objects up to {MAX_THRESHOLD:g}, not {m['n']}.")
    if n <= 0:
        raise ValueError(f"`count {m['cls']}<{m['eq']}{m['n']}` can never hold: a count is never below 0. "
                         f"Ask `count {m['cls']}<1` to hear when none is in view.")
    cls, note = (None, "") if m["cls"].lower() in ALL else _checked_class(m["cls"], camera, ctx)
    return CountUnder(cls, n), note


def parse_condition(words: list[str], camera: str, ctx: CommandContext) -> tuple[Condition, str]:
    """A condition from the watch grammar, its class checked against the camera's model (ValueError with usage)."""
    try:
        return _parse(words, camera, ctx)
    except UnknownClass as exc:  # the same refusal, its example a watch (not a rule) to type
        said = re.sub(rf"(?<!\w){re.escape(exc.given)}(?!\w)", exc.suggestion, html.unescape(" ".join(words)))
        raise ValueError(exc.line(f"/vision watch {camera} {said}")) from None


def _parse(words: list[str], camera: str, ctx: CommandContext) -> tuple[Condition, str]:
    kind, rest = (words[0].lower(), words[1:]) if words else ("", [])
    spec = html.unescape("".join(rest))  # Slack sends '<' as '&lt;'
    if kind == "count" and (m := _UNDER.match(spec)):
        return _under(m, camera, ctx)
    if kind == "count" and "<" in spec:
        raise ValueError(f"{COUNT_FORMS}, not {spec!r}.")
    if kind in ("absent", "gone"):
        if len(rest) != 2 or not re.fullmatch(r"\d+(?:\.\d+)?s?", rest[1]):
            raise ValueError("absent takes CLASS SECONDS, e.g. `absent person 60` (nobody seen for a minute).")
        cls, note = _checked_class(rest[0], camera, ctx)
        return AbsentFor(cls, float(rest[1].rstrip("s"))), note
    try:
        rule, note = check_class(parse_rule(words, camera, None), ctx)
    except CountSyntax:
        raise ValueError(f"{COUNT_FORMS}, not {spec!r}.") from None
    except UnknownClass:
        raise
    except ValueError as exc:
        raise ValueError(WATCH_USAGE if str(exc) == RULE_USAGE else str(exc)) from None
    return RuleCondition(rule), note


def answer_place(ctx: CommandContext) -> tuple[str | None, str | None]:
    """(channel, thread) a watch answers in: the asker's thread (`slack:TEAM:CHANNEL:ROOT`), else their channel;
    (None, None) for the terminal, API and MCP: the camera's alert route."""
    if (place := place_of(ctx.session_key or "")) is not None:
        channel, root = place
        return channel, None if root == DM_ROOT else root
    if ctx.channel_id and ctx.channel_id != LOCAL_CHANNEL and not ctx.operator:
        return ctx.channel_id, None
    return None, None


def words_of(text: str, what: str) -> list[str]:
    """A rule's or a watch's words, split as `/vision` splits them (ValueError in one line for an unclosed quote)."""
    try:
        return shlex.split(text)
    except ValueError:
        raise ValueError(f"{what} has an unclosed quote: {text[:80]!r}.") from None


def create_watch(spec: WatchSpec, ctx: CommandContext) -> tuple[Watch, str]:
    """A new watch, added to the book, and the notes to say with it (ValueError / LookupError: one line to show)."""
    book = _book(ctx)
    camera = resolve_camera(spec.camera, ctx, allow_all=False)
    condition, note = parse_condition(words_of(spec.condition, "condition"), camera, ctx)
    lasts = spec.lasts
    if condition.takes_seconds() >= lasts:
        raise ValueError(f"'{condition.describe()}' needs {span(condition.takes_seconds())} to hold, but the watch "
                         f"lasts {span(lasts)}: ask for less time, or a longer watch (`for 24h` at most).")
    owner = Owner.of(ctx.requester)
    if why := cap_refusal(ctx.settings, "watch", (w.owner.user if w.owner else w.user_id for w in book.all()),
                          owner.user):
        raise ValueError(why)
    now = book.now()
    channel, thread = answer_place(ctx)
    watch = Watch(Watch.new_id(), camera, condition, now, now + lasts, spec.confirm,
                  None if ctx.operator else ctx.user_id, channel, thread, spec.about, owner)
    needs = needs_note(*condition.needs(), camera, ctx)
    return book.add(watch), note + needs + _not_running(camera, ctx) + _unconfirmed(spec.confirm, book)


def answers_go(watch: Watch, ctx: CommandContext) -> list[str]:
    """Where this process shows the watch's answer, in words ("Slack <#C1>", "the webhook at https://host:443"):
    what the REST reply and a relayed `/vision watch` name; [] when nothing here shows it (the event log keeps it)."""
    router = ctx.services.router
    return router.destinations(watch.camera, watch.channel) if router is not None else []


def _not_running(camera: str, ctx: CommandContext) -> str:
    """The note for a camera no live pipeline runs on (a finished file's counts are stale: it never answers)."""
    if ctx.services.pipelines is None:
        return ""
    handles = [h for h in ctx.manager().snapshot() if h.name == camera]
    if any(h.status in LIVE for h in handles):
        return ""
    why = f" (its pipeline is {handles[0].status})" if handles else ""
    return f" No pipeline runs on {camera} now{why}: the watch looks once one does (`/vision start {camera}`)."


def _unconfirmed(confirm: bool, book: WatchBook) -> str:
    """`confirm` without a model: said now (the watch still answers, marked unconfirmed), not found out later."""
    if not confirm or book.can_confirm():
        return ""
    return (" `confirm` needs the model, which this process cannot reach (no ANTHROPIC_API_KEY): the answer will "
            "come marked not confirmed; set the key and restart to have it checked.")


async def add_watch(tokens: list[str], ctx: CommandContext) -> CommandReply:
    # `count person<=2` is a condition, not an option called `person<`
    hidden = [t.replace("=", "\0") if _AT_MOST.search(t) else t for t in tokens]
    args, opts = parse_options(hidden, {"about"})
    args = [a.replace("\0", "=") for a in args]
    # `confirm` and `for DURATION` may come in either order after the condition (never the camera's name)
    confirm = any(a.lower() == "confirm" for a in args[1:])
    args = args[:1] + [a for a in args[1:] if a.lower() != "confirm"]
    seconds = None
    at = next((i for i in range(2, len(args) - 1) if args[i].lower() == "for"), None)
    if at is not None:
        seconds, args = parse_duration(args[at + 1]), args[:at] + args[at + 2:]
    if len(args) < 2:
        return fail(WATCH_USAGE)
    spec = parse(WatchSpec, {"camera": args[0], "condition": shlex.join(args[1:]), "seconds": seconds,
                             "confirm": confirm, "about": opts.get("about", "")})
    watch, note = create_watch(spec, ctx)
    # the terminal is its own alert channel: the answer prints there (not for a line relayed from another one)
    here = watch.channel or (ctx.local_files and ctx.cwd is None)
    places = answers_go(watch, ctx)
    where = ("in this thread" if watch.thread_ts else "here" if here else f"to {' and '.join(places)}" if places
             else "in the camera's alert channel")
    return CommandReply(f"Watching *{watch.camera}* for {span(watch.expires_at - watch.created_at)}: I'll say so "
                        f"{where} once {watch.condition.describe()}"
                        f"{', after the model confirms it on the frame' if confirm else ''}, then stop.{note} "
                        f"Cancel it with `/vision unwatch {watch.id}`.")


async def list_watches(tokens: list[str], ctx: CommandContext) -> CommandReply:
    if len(tokens) > 1:
        return fail("Usage: `/vision watches [CAMERA]`")
    book = _book(ctx)
    camera = resolve_camera(tokens[0], ctx, allow_all=True) if tokens else ANY
    every = book.all(None if camera == ANY else camera)
    gone = [g for g in book.ended(None if camera == ANY else camera) if _visible(g[0], ctx)]
    if not every and not gone:
        return CommandReply("No watches run. Start one with `/vision watch CAMERA appears CLASS for 2h`.")
    shown = [w for w in every if _visible(w, ctx)]
    now = book.now()
    more = len(every) - len(shown)
    tail = [f"…and {more} more asked in other conversations (`/vision unwatch ID` still takes their ids)."] if more else []
    ended = [f"• {_ended_line(w, why, at, ctx)}" for w, why, at in gone]
    return CommandReply("\n".join(["*Watches*"] + [f"• {w.line(now)}" for w in shown] + tail + ended))


def _ended_line(w: Watch, why: str, at: float, ctx: CommandContext) -> str:
    """'`w1a2b3` on *dock*: a truck appears — ended at 14:03 UTC: pipeline dock finished (its video file ran out)'."""
    what = f"{w.about} — {w.condition.describe()}" if w.about else w.condition.describe()
    when = datetime.fromtimestamp(at, ZoneInfo(ctx.settings.heartbeat.timezone)).strftime("%H:%M %Z")
    return f"`{w.id}` on *{w.camera}*: {what} — ended at {when}: {why}"


def _visible(w: Watch, ctx: CommandContext) -> bool:
    """A watch's words are shown where it answers, to its asker and to the operator (a DM's question stays there)."""
    return ctx.operator or w.channel is None or w.user_id == ctx.user_id or w.channel == ctx.channel_id


async def remove_watch(tokens: list[str], ctx: CommandContext) -> CommandReply:
    if len(tokens) != 1:
        return fail("Usage: `/vision unwatch WATCH_ID` (see `/vision watches` for the ids)")
    gone = cancel(tokens[0].strip("`"), ctx)
    return CommandReply(f"Stopped watch `{gone.id}` on *{gone.camera}* ({gone.condition.describe()}).")


def cancel(watch_id: str, ctx: CommandContext) -> Watch:
    """End one watch as `ctx.requester` may (its owner or an operator); LookupError for an unknown id."""
    book = _book(ctx)
    w = book.get(watch_id)
    if w is None and (ended := next((g for g in book.ended() if g[0].id == watch_id), None)) is not None:
        raise LookupError(f"Watch `{watch_id}` has already ended: {ended[1]}.")
    if w is None:
        ids = ", ".join(f"`{x.id}`" for x in book.all() if _visible(x, ctx)) or "none"
        raise LookupError(f"No watch `{watch_id[:40]}`; the watches that run: {ids}.")
    if why := change_refusal(ctx.settings, w.owner or (Owner(user=w.user_id) if w.user_id else None),
                             ctx.requester, f"watch `{w.id}`"):
        raise ValueError(why)
    gone = book.remove(w.id)
    if gone is None:
        raise LookupError(f"watch `{watch_id[:40]}` has just ended.")
    return gone


def watches_status(ctx: CommandContext) -> list[str]:
    """The status line about watches (none when this process keeps none)."""
    if ctx.services.watches is None:
        return []
    n = len(ctx.services.watches.all())
    return [f"*Watches*: {n}" + (" (`/vision watches` lists them)" if n else "")]
