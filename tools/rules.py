"""set_alert_rule: the agent sets a standing tier-1 alert rule from plain words, through the one rule creation."""

from __future__ import annotations

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolContext, ToolResult
from bot.commands.context import CommandContext
from bot.commands.rules import create_rule
from bot.objects.rule import RuleSpec

RULE_HELP = (
    "The rule, in `/vision rule` words after the camera: `line` (a counting line is crossed); `appears [CLASS]`; "
    "`count CLASS>N` (more than N in view); `zone SECONDS` (an object stays in the pipeline's zone that long); "
    "`near CLASS OTHER [GAP]` (an object of CLASS within GAP of, or overlapping, one of OTHER in the same frame; "
    "GAP is in box sizes: the space between the two boxes over the smaller box's longer side, default 0.5, 0 = "
    "touching or overlapping; e.g. `near person car` for 'a person near a vehicle'); `then CAMERA2 [CLASS] [SECONDS]` "
    "(CLASS seen on `camera`, then on CAMERA2 within SECONDS, default 60; the alert comes from CAMERA2). CLASS is "
    "a class the camera's model reports (person, face, motion for the builtin detectors)."
)


async def set_alert_rule(args: RuleSpec, ctx: ToolContext) -> ToolResult:
    who = ctx.requester
    command = CommandContext(ctx.settings, ctx.services, user_id=who.user_id, channel_id=who.channel_id,
                             operator=who.operator)
    try:
        _, text = create_rule(args, command)
    except (ValueError, LookupError) as exc:  # the same line /vision rule and REST give
        return ToolResult.error(str(exc))
    return ToolResult(text=text)


def register(reg: ToolRegistry) -> None:
    reg.register_operation("set_alert_rule", set_alert_rule)
