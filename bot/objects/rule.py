"""A standing alert rule as a member asks for one (`/vision rule`, set_alert_rule, POST /api/rules), and the camera
reference every object takes: one name, or `*` for every camera."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar

from pydantic import AliasChoices, BeforeValidator, Field

from bot.objects.base import Spec
from bot.objects.text import NAME_MAX, NAME_PATTERN, Text200, check_name

ALL = {"*", "all", "any"}  # words that mean every camera or any class
WEEK = 7 * 86400.0
MAX_COOLDOWN = WEEK  # a longer cooldown silences a rule for good: `/vision unrule` says that honestly
_SECONDS = re.compile(r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds?)?\s*$", re.I)


def _camera(value: Any) -> str:
    if isinstance(value, str) and value.strip().lower() in ALL:
        return "*"
    return check_name(value, "")


CameraRef = Annotated[str, BeforeValidator(_camera),
                      Field(json_schema_extra={"pattern": rf"^\*$|{NAME_PATTERN}", "maxLength": NAME_MAX})]


def seconds_of(value: Any) -> Any:
    """`30`, `30s`, `30 seconds` as a number of seconds (anything else is left for the field to refuse)."""
    if isinstance(value, str) and (m := _SECONDS.match(value)):
        return float(m["n"])
    return value


Seconds = Annotated[float, BeforeValidator(seconds_of)]


class RuleSpec(Spec):
    """What adding a rule asks for: the camera, the rule in `/vision rule` words, its cooldown."""

    REFUSALS: ClassVar[dict[str, str]] = {
        "cooldown": f"cooldown is a number of seconds from 0 to {MAX_COOLDOWN:g} (a week; to silence a rule longer, "
                    "`/vision unrule` it), e.g. cooldown=60",
        "verify": "verify is yes or no (the model looks at each alert's frame and says if it saw the event), "
                  "e.g. verify=yes"}

    camera: CameraRef = Field(description="The camera or pipeline name the rule watches ('*' = every camera); for "
                              "`then`, the camera that must see the class first")
    rule: Text200 = Field(min_length=1, description="line | appears [CLASS] | count CLASS>N | zone SECONDS | "
                               "near CLASS OTHER [GAP] | then CAMERA2 [CLASS] [SECONDS]")
    cooldown: Seconds | None = Field(None, ge=0, le=MAX_COOLDOWN,
                                     validation_alias=AliasChoices("cooldown", "cooldown_seconds"),
                                     description="Seconds between two alerts of this rule, 0 to a week (default: the "
                                     "configured alert cooldown; to silence a rule longer, remove it)", examples=[120])
    verify: bool | None = Field(None, description="Have the model look at each alert's frame (and a few of its "
                                "clip's when things move) and update the alert: seen, or likely not and why (default: "
                                "the route's or monitoring.verify)")
