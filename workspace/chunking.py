"""Memory files into searchable chunks (bullets / paragraphs, long ones as overlapping windows) and tokens."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property

_TOKEN = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*")
_DATED = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# A note's audience rides at the start of its bullet, after its time: "- 12:00:00 [for dm:U123] text". Untagged
# notes (camera observations, notes from before audiences existed) are the site's: everyone may read them.
_AUDIENCE = re.compile(r"^(\S+ )?\[for ([a-z]+(?::[\w.-]+)?)(?: by ([A-Za-z0-9_-]{1,40}))?\] ")
SITE = "site"
OPERATOR = "operator"  # the operator's notes (CLI, REST, MCP): only the operator reads them
_STOP = frozenset(
    "a an and are as at be by for from has have i in is it me my of on or that the this to was were will with".split()
)


def may_see(viewer: str, audience: str) -> bool:
    """Whether an asker at `viewer` (an audience string) may read a note written for `audience`.

    The operator reads everything; the site's notes and public channels' notes are everyone's; a DM's notes only
    come back in that person's DM, a private channel's only in that channel, the operator's only to the operator.
    A channel is one place whatever it was called when each was written (a slash command does not say whether its
    channel is public, so it counts as private: fail closed), so `private:C1` is read in C1 also as `public:C1`.
    """
    if viewer == OPERATOR or audience == SITE or audience.startswith("public:") or audience == viewer:
        return True
    return audience.startswith("private:") and viewer.startswith(("private:", "public:")) and \
        audience.partition(":")[2] == viewer.partition(":")[2]


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens without stop words; a trailing plural 's' is dropped so 'trucks' meets 'truck'."""
    out = []
    for tok in _TOKEN.findall(text.lower()):
        if tok in _STOP:
            continue
        if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
            tok = tok[:-1]
        out.append(tok)
    return out


def file_date(name: str) -> str | None:
    """The day of a daily log file name (YYYY-MM-DD.md), None for undated notes such as KNOWLEDGE.md."""
    m = _DATED.match(name)
    return m.group(1) if m else None


@dataclass(frozen=True)
class Chunk:
    """One searchable piece of a memory file: a bullet, a paragraph, or a window of a long one."""

    text: str
    source: str
    date: str | None
    section: str | None
    audience: str = SITE  # who may read it (workspace.memory.may_see); every window of a long note keeps it

    @cached_property
    def context_text(self) -> str:
        # the section (camera name, 'Preferences') is part of what the note means, so it is indexed with it
        return f"{self.section}: {self.text}" if self.section else self.text

    @cached_property  # computed once: the index checks every chunk's key on refresh
    def key(self) -> str:
        return hashlib.sha1(self.context_text.encode("utf-8")).hexdigest()


def chunk_markdown(text: str, source: str, max_words: int = 80, overlap: int = 20) -> list[Chunk]:
    """Split a markdown note file into bullets/paragraphs; ones over max_words become overlapping windows."""
    date = file_date(source)
    units: list[tuple[str | None, str]] = []
    section: str | None = None
    cur: list[str] = []

    def flush() -> None:
        if cur:
            units.append((section, " ".join(cur)))
            cur.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            flush()
        elif stripped.startswith("#"):
            flush()
            if stripped.startswith("## "):
                section = stripped[3:].strip()
        elif _BULLET.match(line):
            flush()
            cur.append(_BULLET.sub("", line, count=1).strip())
        else:
            cur.append(stripped)  # continuation of a bullet or a paragraph line
    flush()
    return [Chunk(window, source, date, sec, audience)
            for sec, unit in units for audience, body in [split_audience(unit)]
            for window in _windows(body, max_words, overlap)]


def split_audience(line: str) -> tuple[str, str]:
    """(audience, the line without its tag): a bullet's first tag is the one the store wrote."""
    m = _AUDIENCE.match(line)
    if m is None:
        return SITE, line
    return m.group(2), (m.group(1) or "") + line[m.end():]


def author_of(line: str) -> str | None:
    """Who wrote a note (`[for AUDIENCE by U123]`: a Slack user), None for the site's and the operator's."""
    m = _AUDIENCE.match(line)
    return m.group(3) if m is not None else None


def _windows(unit: str, max_words: int, overlap: int) -> list[str]:
    words = unit.split()
    if len(words) <= max_words:
        return [unit]
    step = max(1, max_words - overlap)
    return [" ".join(words[s : s + max_words]) for s in range(0, len(words) - overlap, step)]
