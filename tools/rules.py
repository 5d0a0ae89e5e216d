"""set_alert_rule: the agent sets a standing tier-1 alert rule from plain words, through `/vision rule` itself."""

from __future__ import annotations

from pydantic import Field

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolArgs, ToolContext, ToolResult
from bot.commands.context import CommandContext
from bot.commands.rules import add_rule
from bot.rights import CONTROLLED

RULE_HELP = (
    "The rule, in `/vision rule` words after the camera: `line` (a counting line is crossed); `appears [CLASS]`; "
    "`count CLASS>N` (more than N in view); `zone SECONDS` (an object stays in the pipeline's zone that long); "
    "`near CLASS OTHER [GAP]` (an object of CLASS within GAP of, or overlapping, one of OTHER in the same frame; "
    "GAP is in box sizes: the space between the two boxes over the smaller box's longer side, default 0.5, 0 = "
    "touching or overlapping; e.g. `near person car` for 'a person near a vehicle'); `then CAMERA2 [CLASS] [SECONDS]` "
    "(CLASS seen on `camera`, then on CAMERA2 within SECONDS, default 60; the alert comes from CAMERA2). CLASS is "
    "a class the camera's model reports (person, face, motion for the builtin detectors)."
)


class SetRuleArgs(ToolArgs):
    camera: str = Field(description="The camera or pipeline name the rule watches ('*' = every camera); for "
                        "`then`, the camera that must see the class first")
    rule: str = Field(min_length=1, max_length=200, description=RULE_HELP)
    cooldown_seconds: float | None = Field(None, ge=0, description="Seconds between two alerts of this rule "
                                           "(default: the configured alert cooldown)")


async def set_alert_rule(args: SetRuleArgs, ctx: ToolContext) -> ToolResult:
    who = ctx.requester
    command = CommandContext(ctx.settings, ctx.services, user_id=who.user_id, channel_id=who.channel_id,
                             operator=who.operator)
    tokens = [args.camera, *args.rule.split()]
    if args.cooldown_seconds is not None:
        tokens.append(f"cooldown={args.cooldown_seconds:g}")
    try:
        reply = await add_rule(tokens, command)
    except (ValueError, LookupError) as exc:
        return ToolResult.error(f"{exc} Fix the rule and call again.")
    return ToolResult(text=reply.text) if reply.ok else ToolResult.error(reply.text)


def register(reg: ToolRegistry) -> None:
    reg.register("set_alert_rule", "Set a standing alert rule (tier 1, checked on every result of the camera's "
                 "pipeline, no model involved) when the user asks to be alerted: counts, crossings, dwell, two "
                 "classes near each other, or one camera then another. Says the rule's id and how to remove it; "
                 "`/vision rules` lists them.", SetRuleArgs, set_alert_rule, changes=CONTROLLED)
