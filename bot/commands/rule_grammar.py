"""The `/vision rule` words after the camera, parsed into a `Rule` (no camera lookups, no class checks: those are
`bot.commands.rules.build_rule`'s)."""

from __future__ import annotations

import html
import re

from bot.monitoring.kinds.base import MAX_THRESHOLD
from bot.monitoring.kinds.near import DEFAULT_GAP
from bot.monitoring.kinds.then import DEFAULT_WINDOW
from bot.monitoring.rules import ANY, Rule
from bot.objects.rule import ALL, MAX_COOLDOWN
from bot.objects.text import check_name

RULE_USAGE = ("Usage: `/vision rule CAMERA line | appears [CLASS] | count CLASS>N | zone SECONDS | near CLASS OTHER [GAP]"
              " | then CAMERA2 [CLASS] [SECONDS] [cooldown=SECONDS]` (CAMERA `*` = every camera; GAP in box sizes: "
              "the space between the boxes over the smaller one's longer side, default 0.5, 0 = touching; `then`: "
              "seen on CAMERA, then on CAMERA2 within SECONDS, 1 to 86400, default 60; cooldown at most a week), "
              "e.g. `/vision rule dock count person>3 cooldown=120`, `/vision rule cam2 near person car`, "
              "`/vision rule cam1 then cam2 person 60`")
_COUNT = re.compile(r"^(?P<cls>[^>]*)>(?P<n>\d+(?:\.\d+)?)$")
_SECONDS = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds?)?$", re.I)
MAX_THEN = 86400.0  # a longer gap between two cameras is no longer one visit passing through


class CountSyntax(ValueError):
    """`count` words that are no CLASS>N (a watch says its own forms instead)."""


def seconds(raw: str, what: str, option: bool = True) -> float:
    """`30`, `30s`, `30 seconds` as a number (ValueError saying what to type: `what=60` for an option such as
    cooldown=, `what 60` for a word of the grammar such as `zone 60`)."""
    m = _SECONDS.match(raw.strip())
    if not m:
        example = f"{what}=60" if option else f"`{what} 60`"
        raise ValueError(f"{what} takes a number of seconds, e.g. {example}, not {raw!r}.")
    return float(m["n"])


def cooldown_seconds(raw: str) -> float:
    """A rule's `cooldown=SECONDS`: 0 (every alert) to a week (ValueError saying why not more)."""
    secs = seconds(raw, "cooldown")
    if secs > MAX_COOLDOWN:
        raise ValueError(f"cooldown is at most {MAX_COOLDOWN:g} s (a week; to silence a rule longer, "
                         f"`/vision unrule` it), not {raw!r}.")
    return secs


def _then_window(raw: str) -> float:
    """then's SECONDS: 1 to a day (ValueError in one line, like near's gap)."""
    try:
        window = seconds(raw, "then", option=False)
    except ValueError:
        window = -1.0
    if not 1 <= window <= MAX_THEN:
        raise ValueError(f"then's window is seconds from 1 to {MAX_THEN:g} (a day: a longer gap is no longer one "
                         f"visit), e.g. `then cam2 person 60`, not {raw!r}.")
    return window


def _numeric(raw: str) -> bool:
    """Whether `raw` reads as a number (also '-5', 'nan', '1e309'): meant as then's window, not a class."""
    try:
        float(raw)
    except ValueError:
        return bool(_SECONDS.match(raw.strip()))
    return True


def parse_rule(args: list[str], camera: str, cooldown: float | None) -> Rule:
    """Rule from `line` / `appears [CLASS]` / `count CLASS>N` / `zone SECONDS` / `near CLASS OTHER [GAP]` /
    `then CAMERA2 [CLASS] [SECONDS]` (ValueError with the usage); a class or camera it names is a name
    (bot/objects/text.py): it is shown in replies, alerts and prompts."""
    rule = _parse(args, camera, cooldown)
    for what, value in (("a class", rule.class_name), ("a class", rule.other_class), ("a camera", rule.camera)):
        if value is not None and value != ANY:
            check_name(value, what)
    return rule


def _parse(args: list[str], camera: str, cooldown: float | None) -> Rule:
    kind, rest = (args[0].lower(), args[1:]) if args else ("", [])
    if kind == "line" and not rest:
        return Rule("line_crossed", camera, cooldown_seconds=cooldown)
    if kind == "appears" and len(rest) <= 1:
        cls = rest[0] if rest and rest[0].lower() not in ALL else None
        return Rule("class_appears", camera, class_name=cls, cooldown_seconds=cooldown)
    if kind == "count" and rest:
        spec = html.unescape("".join(rest))  # Slack sends '>' as '&gt;'
        m = _COUNT.match(spec) or (re.match(r"^(?P<cls>.+?)(?P<n>\d+)$", spec) if len(rest) == 2 else None)
        if not m or not m["cls"] or re.search(r"[<>=]", m["cls"]):  # 'person <=0' is no class 'person<='
            raise CountSyntax(f"count takes CLASS>N, e.g. `count person>3`, not {spec!r}.")
        cls = None if m["cls"].lower() in ALL else m["cls"]
        if float(m["n"]) > MAX_THRESHOLD:
            raise ValueError(f"count takes a number of objects up to {MAX_THRESHOLD:g}, not {m['n']}.")
        return Rule("count_over", camera, class_name=cls, threshold=float(m["n"]), cooldown_seconds=cooldown)
    if kind == "zone" and len(rest) == 1:
        secs = seconds(rest[0], "zone", option=False)
        return Rule("time_in_zone", camera, threshold=secs, cooldown_seconds=cooldown)
    if kind == "near" and len(rest) in (2, 3):
        return _near(rest, camera, cooldown)
    if kind == "then" and 1 <= len(rest) <= 3:
        return _then(rest, camera, cooldown)
    raise ValueError(RULE_USAGE)


def _near(rest: list[str], camera: str, cooldown: float | None) -> Rule:
    """`near CLASS OTHER [GAP]`: GAP a number of box sizes (0 = the boxes touch or overlap)."""
    if any(c.lower() in ALL for c in rest[:2]):
        raise ValueError("near takes two class names, e.g. `near person car`, not `*`.")
    raw = rest[2] if len(rest) == 3 else f"{DEFAULT_GAP:g}"
    try:
        gap = float(raw)
    except ValueError:
        gap = -1.0
    if not 0 <= gap <= 10:
        raise ValueError(f"near's gap is a number of box sizes from 0 (touching) to 10, e.g. "
                         f"`near {rest[0]} {rest[1]} 0.5`, not {raw!r}.")
    return Rule("near", camera, class_name=rest[0], other_class=rest[1], threshold=gap, cooldown_seconds=cooldown)


def _then(rest: list[str], camera: str, cooldown: float | None) -> Rule:
    """`then CAMERA2 [CLASS] [SECONDS]`: stored on CAMERA2 (where it alerts), after `camera`; CAMERA2 as typed."""
    if camera == ANY or rest[0].lower() in ALL:
        raise ValueError("`then` links two named cameras, e.g. `/vision rule cam1 then cam2 person 60`, not `*`.")
    window = DEFAULT_WINDOW
    if len(rest) > 1 and _numeric(rest[-1]):
        window, rest = _then_window(rest[-1]), rest[:-1]
    if len(rest) > 2:
        raise ValueError(RULE_USAGE)
    cls = rest[1] if len(rest) == 2 and rest[1].lower() not in ALL else None
    return Rule("then", rest[0], class_name=cls, threshold=window, cooldown_seconds=cooldown, after_camera=camera)
