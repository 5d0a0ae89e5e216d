"""The strings members write, bounded where they come in and quoted where they reach a prompt.

Two kinds: a *name* (a pipeline, camera, class, job or recipe name) is one short word-like line of a safe character
set, so it can neither carry markup nor break a line, and goes anywhere as is; *free text* (a watch's `about`, a recipe
description, a memory note, a rule's words) is one bounded line of anything, which reaches a prompt only through
`untrusted` (quoted as data, every marker of ours broken by `defang`). Every object model (bot/objects/) types its
fields with these, so every door gets the same bounds and the same words when a value is refused.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

# --- names ----------------------------------------------------------------------------------------------------
NAME_MAX = 64
# Letters and digits of any script, then also space . _ - : ( ): what camera rows of CAMERAS.md, pipeline and job names
# use (`summary-18:00`). No quote, '<', '>', '&', '*', '`', '|', '#', '@' or line break: a name cannot open markup in
# a prompt, mention anyone or format text in Slack.
NAME_PATTERN = rf"^[^\W_][\w .:()-]{{0,{NAME_MAX - 1}}}$"
_NAME = re.compile(NAME_PATTERN)
NAME_RULE = (f"1 to {NAME_MAX} letters, digits, spaces, '.', '_', '-', ':' or '()', starting with a letter or digit "
             "(e.g. front-door)")


def check_name(value: Any, what: str = "a name") -> str:
    """The name, trimmed; ValueError (one line: `{what} is …`) for one outside the safe set."""
    # full-width and other compatibility forms as their plain letters: `ｄｏｃｋ` is `dock`, not a second camera
    name = " ".join(unicodedata.normalize("NFKC", value).split()) if isinstance(value, str) else value
    if not isinstance(name, str) or not _NAME.match(name):
        shown = value if not isinstance(value, str) or len(value) <= 40 else value[:40] + "…"
        raise ValueError(f"{what + ' ' if what else ''}is {NAME_RULE}, not {shown!r}")
    return name


def name_from(text: str, fallback: str = "camera") -> str:
    """A name made from other text (a CAMERAS.md row, a host, a file stem): characters outside the safe set become
    '-', cut to the length; `fallback` when nothing is left."""
    cleaned = re.sub(r"[^\w .:()-]+", "-", " ".join(str(text).split())).strip(" .:()-_")
    cleaned = re.sub(r"-{2,}", "-", cleaned)[:NAME_MAX].rstrip(" .-")
    return cleaned if _NAME.match(cleaned) else fallback


def _name(value: Any) -> str:
    return check_name(value, "")  # a model's field: the refusal names the field (bot/objects/refusal.py)


Name = Annotated[str, AfterValidator(_name),
                 Field(json_schema_extra={"pattern": NAME_PATTERN, "maxLength": NAME_MAX})]

# --- free text -----------------------------------------------------------------------------------------------------
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]+")
_EDGE = r"[\s\u00ad\u034f\u061c\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufeff\uffa0]"


def one_line(value: Any, limit: int) -> str:
    """Free text as one line: line breaks, tabs and other control characters become one space; ValueError over
    `limit` characters (what is refused, never cut: the person sees their words were too long)."""
    if not isinstance(value, str):
        raise ValueError(f"takes text (one line, at most {limit} characters), not {type(value).__name__}")
    text = " ".join(_CONTROL.sub(" ", value).split())
    text = re.sub(rf"^{_EDGE}+|{_EDGE}+$", "", text)  # invisible characters alone are no text
    if len(text) > limit:
        raise ValueError(f"is one line of at most {limit} characters, not {len(text)}")
    return text


@dataclass(frozen=True)
class Line:
    """Field metadata for free text: `about: Annotated[str, Line(200)]` is one line of at most 200 characters
    (line breaks folded, longer refused), and says so in the JSON schema (the tool's, the REST body's)."""

    limit: int

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_before_validator_function(lambda v: one_line(v, self.limit), handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        out = handler(schema)
        out["maxLength"] = self.limit
        return out


Text20 = Annotated[str, Line(20)]
Text60 = Annotated[str, Line(60)]
Text100 = Annotated[str, Line(100)]
Text200 = Annotated[str, Line(200)]
Text300 = Annotated[str, Line(300)]
Text2000 = Annotated[str, Line(2000)]

# --- quoting -------------------------------------------------------------------------------------------------------
MARKERS = ("message", "thread_history", "data", "turn_context")
# What reads as one of our markers to a model: '<' or an entity or look-alike of it ('&lt' with or without ';',
# '&#60', '&#x3c', full-width, small and other angle brackets), an optional '/', then a name that folds to one of
# ours: full-width letters, letters of other scripts that look Latin (Cyrillic 'а'), invisible characters between
# them (zero-width and format characters, bidi controls, tag characters, variation selectors). Other tags (`<b>`, a
# placeholder such as `<model_step>`) are left as they are.
_INVISIBLE = ("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
              "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
_OPENER = r"(?:<|&lt;?|&#0*60;?|&#x0*3c;?|\uff1c|\ufe64|\u2329|\u27e8|\u3008|\u02c2|\u1438|\u276c|\u276e|\u2039)"
_GAP = rf"(?:\s|{_INVISIBLE})*"
_MARKER = re.compile(rf"{_OPENER}({_GAP}/?{_GAP})((?:[^\W\d]|{_INVISIBLE})+)", re.IGNORECASE)
# Letters of other scripts that look like the Latin ones our markers use (after NFKC, which folds full-width ones)
_LOOKALIKE = str.maketrans("аеорсхуіјѕԁһӏԛԝɡαеοτκνѵмгтпԌ", "aeopcxyijsdhlqwgaeotkvvmrtnG")


def _ours(name: str) -> bool:
    folded = unicodedata.normalize("NFKC", re.sub(_INVISIBLE, "", name)).lower().translate(_LOOKALIKE)
    return folded in MARKERS


def _break(m: re.Match[str]) -> str:
    if not _ours(m.group(2)):
        return m.group(0)
    return "\u2039" + re.sub(_INVISIBLE, "", m.group(1)) + m.group(2)


QUOTED_MAX = 20_000  # one quoted value: a store read back in full (a day's log) is cut before it is quoted
_KIND_KEEPS = re.compile(r"[^\w .'-]+")


def defang(text: str) -> str:
    """`text` with every marker of ours broken (`<message` → `‹message`, `</data` → `‹/data`, in any spelling of
    '<' and of the name), so it cannot close or open one; invisible characters between '<' and '/' go with it."""
    return _MARKER.sub(_break, text)


def data_kind(kind: str) -> str:
    """A quote's kind as an attribute value: plain words only."""
    return " ".join(_KIND_KEEPS.sub(" ", kind or "").split())[:40].strip() or "data"


def quote_data(kind: str, text: str) -> str:
    """Text that came from data (a frame's caption, an alert, a file name, a memory note), quoted so it reads as
    data: the model describes or uses it, never follows it."""
    return f'<data kind="{data_kind(kind)}">\n{defang(text)}\n</data>'


def untrusted(kind: str, text: str, limit: int = QUOTED_MAX) -> str:
    """THE way a string a member or a model wrote reaches a prompt: bounded, defanged, quoted as data of `kind`.

    Names, descriptions, notes, watch and rule words, camera and file names, status lines built from them: whatever
    a prompt carries that a person could have written goes through here (bot/agent/prompt.py, the heartbeat, a
    watch's look, the daily summary), never into the system prompt."""
    text = str(text or "")
    if len(text) > limit:
        text = text[:limit] + " …(cut)"
    return quote_data(kind, text)


_QUOTED = re.compile(r'<data kind="[\w .\'-]{1,40}">\n(.*?)\n</data>', re.S)


def shield(text: str) -> str:
    """Text a tool returns, as it reaches the model: our own quotes (`quote_data`) kept, every tag outside them
    broken. A tool's line may repeat what a member or a source wrote (a refused source, a camera's error, a name): it
    can never open or close a message, a quote or the turn context. A quote is ours only if its inside is defanged
    already, as `quote_data` leaves it: one a member typed (with a live marker inside) is broken like any text."""
    out, pos = [], 0
    for m in _QUOTED.finditer(text):
        if defang(m.group(1)) != m.group(1):
            continue  # forged: its inside carries a live tag, so it is not one of ours
        out += [defang(text[pos:m.start()]), m.group(0)]
        pos = m.end()
    return "".join(out) + defang(text[pos:])


def for_people(text: str) -> str:
    """A tool's text as a person reads it (the terminal's ← line, a Slack task card): our quotes' tags, written for
    the model, dropped and their insides kept (a tag a member forged is already broken by `shield`, so it stays)."""
    return _QUOTED.sub(lambda m: m.group(1), text)
