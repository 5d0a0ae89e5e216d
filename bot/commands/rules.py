"""`/vision rule|rules|unrule`: tier-1 monitor rules from the command line (shared by the CLI and Slack)."""

from __future__ import annotations

import html
import shlex
from dataclasses import replace
from typing import Any

from bot.commands.context import CommandContext, CommandReply, fail, parse_options
from bot.commands.rule_classes import check_class, never_fires
from bot.commands.rule_grammar import ALL as _ALL
from bot.commands.rule_grammar import RULE_USAGE, parse_rule
from bot.media.cameras import cameras, close_match
from bot.monitoring.rules import ANY, Rule
from bot.objects.caps import cap_refusal
from bot.objects.owner import Owner, change_refusal, is_operator
from bot.objects.refusal import parse
from bot.objects.rule import RuleSpec
from bot.objects.text import check_name


def _known(ctx: CommandContext) -> dict[str, str]:
    """Camera, pipeline and ruled names (lower case -> as written): what a rule or a snapshot job can name."""
    names = list(cameras(ctx.workspace, ctx.settings))
    if ctx.services.pipelines is not None:
        names += [h.name for h in ctx.manager().snapshot()]
    if ctx.services.monitor is not None:  # a camera that is gone keeps its rules: they must stay listable and removable
        names += [r.camera for r in ctx.services.monitor.rules() if r.camera != ANY]
    return {n.lower(): n for n in names}


def resolve_camera(raw: str, ctx: CommandContext, allow_all: bool = True, allow_new: bool = False) -> str:
    """The canonical camera name; ValueError (listing the known ones) for a name nobody knows.

    allow_new: a plain new name is taken as is (a rule set before its pipeline is started).
    """
    if raw.lower() in _ALL:
        if allow_all:
            return ANY
        raise ValueError("Name one camera here, not all of them.")
    known = _known(ctx)
    if raw.lower() in known:
        return known[raw.lower()]
    if allow_new:
        try:
            return check_name(raw, "a camera name")  # a plain new name: a rule set before its pipeline starts
        except ValueError:
            pass
    listed = ", ".join(sorted(known.values())) or "none yet (add them to CAMERAS.md or `/vision start SOURCE`)"
    guess = close_match(raw, list(known.values()))
    raise ValueError(f"Unknown camera {raw!r}; known cameras and pipelines: {listed}"
                     + (" (or `*` for all)" if allow_all else "") + (f"; did you mean `{guess}`?" if guess else "."))


def _monitor(ctx: CommandContext) -> Any:
    if ctx.services.monitor is None:
        raise LookupError("Rules are not available in this process (the monitor is not running); use "
                          "`vision-agent chat` or `vision-agent serve`.")
    return ctx.services.monitor


def build_rule(args: list[str], camera: str, cooldown: float | None, ctx: CommandContext) -> tuple[Rule, str]:
    """The rule `args` say on `camera`, its cameras named as known and its classes as their models say them, and a
    note on what was corrected (ValueError saying what to type instead). Every rule-setting path comes here."""
    rule = parse_rule(args, camera, cooldown)
    if rule.after_camera is not None:
        second = resolve_camera(rule.camera, ctx, allow_all=False, allow_new=True)
        if second == rule.after_camera:
            raise ValueError(f"`then` needs two different cameras; both are {second}.")
        rule = replace(rule, camera=second)
    return check_class(rule, ctx)


def _rule_line(rule: Rule, default: float) -> str:
    cooldown = default if rule.cooldown_seconds is None else rule.cooldown_seconds
    off = "" if rule.enabled else ", disabled"
    off += {True: ", the model checks its alerts", False: ", never checked by the model", None: ""}[rule.verify]
    by = f" set by {rule.owner.label()}" if rule.owner is not None and rule.owner.member else ""
    return f"`{rule.id}` ({rule.describe()}; cooldown {cooldown:g} s{off}){by}"


async def add_rule(tokens: list[str], ctx: CommandContext) -> CommandReply:
    """`/vision rule CAMERA WORDS… [cooldown=S]`: the words into the one model (bot/objects/rule.py), then `create`."""
    args, opts = parse_options(tokens, {"cooldown", "verify"})
    if len(args) < 2:
        return fail(RULE_USAGE)
    spec = parse(RuleSpec, {"camera": args[0], "rule": " ".join(args[1:]), **opts})
    _, text = create_rule(spec, ctx)
    return CommandReply(text)


def create_rule(spec: RuleSpec, ctx: CommandContext) -> tuple[Rule, str]:
    """Add the rule `spec` asks for, as `ctx.requester`: the one way every door adds one (slash, the tool and MCP,
    REST). Its cameras and classes are checked, it records its owner, a rule of the same id set by someone else is
    theirs to change, and the caps hold (bot/objects/caps.py). (the rule, the reply's line); ValueError otherwise."""
    monitor = _monitor(ctx)
    known = _known(ctx)
    try:
        words = shlex.split(spec.rule)
    except ValueError:
        raise ValueError(f"rule has an unclosed quote: {spec.rule[:80]!r}.") from None
    rule, fixed = build_rule(words, resolve_camera(spec.camera, ctx, allow_new=True), spec.cooldown, ctx)
    camera = rule.camera
    new = [c for c in (rule.after_camera, camera) if c and c != ANY and c.lower() not in known]
    before = next((r for r in monitor.rules() if (r.camera, r.id) == (camera, rule.id)), None)
    who = ctx.requester
    if camera == ANY and not (ctx.operator or is_operator(ctx.settings, who)):
        raise ValueError("rules for every camera are the operator's (they change what every camera alerts on); set "
                         f"yours on one camera, e.g. `/vision rule dock {rule.kind_of.command(rule).split(' ', 3)[-1]}`")
    if before is not None and (why := change_refusal(ctx.settings, before.owner, who, f"rule `{rule.id}` on {camera}")):
        raise ValueError(why)
    owner = Owner.of(who) if before is None or before.owner is None or before.owner.user == who.user_id \
        else before.owner  # an operator's change keeps the rule its owner's
    if before is None and (why := cap_refusal(ctx.settings, "rule", (r.owner.user if r.owner else None
                                                                      for r in monitor.rules()), owner.user)):
        raise ValueError(why)
    kept = [d for d in monitor.effective_rules(camera) if d not in monitor.rules(camera)] if camera != ANY else []
    rule = monitor.add_rule(replace(rule, owner=owner, verify=spec.verify))
    where = "every camera" if camera == ANY else f"*{camera}*"
    note = "".join(f" No camera or pipeline is called {c} yet: the rule applies once a pipeline of that name runs "
                   f"(`/vision start SOURCE name={c}`)." for c in new)
    needs, step = rule.kind_of.needs(rule)
    note += needs_note(needs, step, camera, ctx)
    note += _changed(before, rule, monitor.cooldown_seconds) + _kept(kept, rule, monitor, camera)
    if owner.member and owner.channel:  # a member's rule alerts where they set it, not in the operator's channel
        note += f" Its alerts come to <#{owner.channel}>." if owner.channel[:1] in "CG" else " Its alerts come here."
    return rule, (f"Rule on {where}: {_rule_line(rule, monitor.cooldown_seconds)}{fixed}.{note} "
                  f"Remove it with `/vision unrule {camera} {rule.id}`.")


def needs_note(needs: str, step: str, camera: str, ctx: CommandContext) -> str:
    """' It needs a pipeline started with line=.' for a rule or watch that reads `step`, unless the camera's live
    pipeline runs it (said to everyone, it read as a doubt on a camera already counting)."""
    if not needs or ctx.services.pipelines is not None and ctx.manager().runs_step(camera, step):
        return ""
    return f" It needs {needs}."


def _changed(before: Rule | None, rule: Rule, default: float) -> str:
    """What re-adding a rule changed: its cooldown (or nothing)."""
    if before is None:
        return ""
    old, now = (default if r.cooldown_seconds is None else r.cooldown_seconds for r in (before, rule))
    said = []
    if old != now:
        said.append(f"its cooldown changed from {old:g} s to {now:g} s")
    if before.verify != rule.verify:
        said.append({True: "the model now checks its alerts", False: "the model no longer checks its alerts",
                     None: "whether the model checks its alerts is its route's again"}[rule.verify])
    if said:
        return f" It was set already: {'; '.join(said)}."
    return " It was set already, the same: nothing changed." if before.enabled else " It is on again."


def _kept(defaults: list[Rule], rule: Rule, monitor: Any, camera: str) -> str:
    """The guessed defaults that still run beside the new rule, said (or that it replaces the `appears` guess)."""
    still = [d for d in monitor.effective_rules(camera) if d in defaults]
    said = [f"`{d.id}` ({d.describe()})" for d in still]
    if said:
        return (f" Its default {' and '.join(said)} stays on; `/vision unrule {camera} {still[0].id}` turns it off.")
    if any(d.kind == "class_appears" for d in defaults) and rule.kind != "class_appears":
        return " It replaces the default `appears` alerts this camera had."
    return ""


async def list_rules(tokens: list[str], ctx: CommandContext) -> CommandReply:
    if len(tokens) > 1:
        return fail("Usage: `/vision rules [CAMERA]`")
    monitor = _monitor(ctx)
    if tokens:
        names = [resolve_camera(tokens[0], ctx)]
    else:
        names = sorted({r.camera for r in monitor.rules()} | set(_known(ctx).values()), key=lambda n: (n != ANY, n))
    lines = ["*Rules*"] + [_camera_rules(monitor, n, ctx) for n in names]
    if len(lines) == 1:
        lines.append("No cameras or rules yet. Add one with `/vision rule CAMERA line`.")
    return CommandReply("\n".join(lines))


def _camera_rules(monitor: Any, camera: str, ctx: CommandContext) -> str:
    if camera == ANY:
        rules = [r for r in monitor.rules() if r.camera == ANY]
        return "• *every camera*: " + (", ".join(_rule_line(r, monitor.cooldown_seconds) for r in rules) or "none")
    configured = monitor.rules(camera)
    own = [r for r in configured if r.enabled]
    rules = monitor.effective_rules(camera)
    marked = [_rule_line(r, monitor.cooldown_seconds) + (" (default)" if own and r not in configured else "")
              + _holding(monitor, camera, r) + never_fires(r, ctx) for r in rules]
    if not rules:
        return f"• *{camera}*: none yet (a default is guessed from its first result)"
    return (f"• *{camera}*: {', '.join(marked)}" + ("" if own else " — default, guessed from its results")
            + paused(monitor, camera, ctx))


def paused(monitor: Any, camera: str, ctx: CommandContext) -> str:
    """' — paused: pipeline dock finished (its video file ran out) at 14:03 UTC; resumes when dock runs again' while
    the camera's last pipeline has ended (bot/monitoring/outlived.py), else ''."""
    ended = monitor.outlived.ended(camera) if hasattr(monitor, "outlived") else None
    if ended is None:
        return ""
    return f" — paused: {ended.line(ctx.settings.heartbeat.timezone)}; resumes when {camera} runs again"


def _holding(monitor: Any, camera: str, rule: Rule) -> str:
    """' — alerts held for 212 s more: +12 crossed since the last alert: in 7 / out 5' while the cooldown runs."""
    left = monitor.router.cooling(camera, rule.id, rule.cooldown_seconds)
    if not left:
        return ""
    held = monitor.held.pending(camera, rule.id)
    return f" — alerts held for {left:.0f} s more" + (f": {held.text()}" if held else "")


async def remove_rule(tokens: list[str], ctx: CommandContext) -> CommandReply:
    if len(tokens) != 2:
        return fail("Usage: `/vision unrule CAMERA RULE_ID` (see `/vision rules CAMERA` for the ids)")
    camera, rule_id = resolve_camera(tokens[0], ctx), html.unescape(tokens[1])
    return CommandReply(remove(camera, rule_id, ctx))


def remove(camera: str, rule_id: str, ctx: CommandContext) -> str:
    """Remove one rule (or turn a guessed default off) as `ctx.requester` may: its owner or an operator (a default
    belongs to whoever runs the camera's pipeline). The reply's line; ValueError / LookupError otherwise."""
    monitor = _monitor(ctx)
    stored = next((r for r in monitor.rules() if (r.camera, r.id) == (camera, rule_id)), None)
    if stored is not None and (why := change_refusal(ctx.settings, stored.owner, ctx.requester,
                                                     f"rule `{rule_id}` on {camera}")):
        raise ValueError(why)
    if monitor.remove_rule(rule_id, camera):
        return f"Removed rule `{rule_id}` from {'every camera' if camera == ANY else '*' + camera + '*'}."
    default = next((r for r in monitor.effective_rules(camera) if r.id == rule_id and r.camera == ANY
                    and r not in monitor.rules(camera)), None) if camera != ANY else None
    if default is not None:  # a guessed default: a disabled rule of its kind keeps it off
        runs = _camera_owner(camera, ctx)
        if why := change_refusal(ctx.settings, runs, ctx.requester, f"the default `{rule_id}` alerts of {camera}"):
            raise ValueError(why)
        monitor.add_rule(replace(default, camera=camera, enabled=False, owner=runs))
        word = {"line_crossed": "line", "time_in_zone": f"zone {default.threshold:g}"}.get(default.kind, "")
        return (f"Turned off the default `{rule_id}` alerts on *{camera}*; "
                f"`/vision rule {camera} {word}` turns them on again.")
    if camera != ANY and any(r.id == rule_id for r in monitor.rules() if r.camera == ANY):
        raise LookupError(f"`{rule_id}` is set for every camera; remove it with `/vision unrule * {rule_id}`.")
    ids = ", ".join(f"`{r.id}`" for r in monitor.rules() if r.camera == camera) or "none"
    raise LookupError(f"No rule `{rule_id}` on {camera}; its rules: {ids}.")


def _camera_owner(camera: str, ctx: CommandContext) -> Owner:
    """Whose a camera's guessed defaults are: the owner of the pipeline that runs it, else the operator's."""
    if ctx.services.pipelines is None:
        return Owner()
    try:
        return ctx.services.pipelines.owner(camera)
    except LookupError:
        return Owner()


def rules_status(ctx: CommandContext) -> list[str]:
    """The status line about rules (none when the monitor does not run here)."""
    if ctx.services.monitor is None:
        return []
    rules = ctx.services.monitor.rules()
    cams = sorted({"every camera" if r.camera == ANY else r.camera for r in rules})
    where = f" on {', '.join(cams)}" if cams else " (each camera uses its guessed default)"
    return [f"*Rules*: {len(rules)}{where}"]
