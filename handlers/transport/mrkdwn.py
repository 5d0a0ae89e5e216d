"""Markdown (what Claude writes) to Slack mrkdwn, credential masking, escaping, and splitting to Slack's limits.

Every text the adapter posts goes through `escape` or `to_mrkdwn`, so both apply the one redactor first."""

from __future__ import annotations

import re

from bot.media.redaction import MASKS, redact

SECTION_LIMIT = 3000  # characters of mrkdwn in one section block

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
# Kept as Slack references: user and channel links, URLs. Never <!channel>/<!here>/<!everyone>: escaped like text.
_SLACK_REF = re.compile(r"<(?:[@#][^<>\s|]+|(?:https?|mailto):[^<>\s|]+)(?:\|[^<>]*)?>")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+", re.M)
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_BOLD_MARK = "\x02"


# A model's reply may name a few people (the asker, whoever a rule notifies); a model steered into listing dozens of
# <@U…> mentions would page each of them. Past MAX_MENTIONS distinct people, the rest stay readable but inert.
MAX_MENTIONS = 3
_USER_REF = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^<>]*)?>")


def limit_mentions(text: str, limit: int = MAX_MENTIONS, named: list[str] | None = None) -> str:
    """The first `limit` distinct people mentioned stay mentions; later ones get a word joiner after `<`, so Slack
    shows them as text and notifies nobody. `named` carries the people already notified by earlier pieces of the
    same answer (a stream sends it in many appends), and is updated."""
    named = [] if named is None else named

    def keep(m: re.Match[str]) -> str:
        if m.group(1) in named or len(named) < limit:
            if m.group(1) not in named:
                named.append(m.group(1))
            return m.group(0)
        return "<\u2060" + m.group(0)[1:]

    return _USER_REF.sub(keep, text)


def inert(text: str) -> str:
    """Someone else's words (a file name, a watch's `about`) made unable to notify anyone when a line of ours repeats
    them: a word joiner after each `<` that would open a mention, broadcast or group, so `escape` reads it as text."""
    return re.sub(r"<(?=[@!#])", "<\u2060", text)


def escape(text: str) -> str:
    """Text made safe to post: credentials masked (the one redactor), then &, <, > escaped as Slack requires,
    leaving Slack's own references (<@U1>, <#C1>, <http://x|y>) intact; a broadcast (<!channel>) is escaped.
    Mentions are left as they are: the adapter's own lines may name every allowed user; the model's text is
    limited to MAX_MENTIONS people where it is sent (`handlers/answers/stream_text.py:for_slack`)."""
    return _escape_outside_refs(redact(text))


def _escape_outside_refs(text: str) -> str:
    parts, last = [], 0
    for m in _SLACK_REF.finditer(text):
        parts.append(escape_plain(text[last:m.start()]))
        parts.append(m.group(0))
        last = m.end()
    parts.append(escape_plain(text[last:]))
    return "".join(parts)


def escape_plain(s: str) -> str:
    """&, <, > escaped as Slack requires in any text it parses (no references kept)."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _protect(text: str, pattern: re.Pattern[str], store: list[str]) -> str:
    def keep(m: re.Match[str]) -> str:
        store.append(m.group(0))
        return f"\x00{len(store) - 1}\x00"

    return pattern.sub(keep, text)


def _restore(text: str, store: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: store[int(m.group(1))], text)


def _tables_to_code(text: str) -> str:
    """Slack has no tables: show a markdown table as a monospace block so columns stay aligned."""
    out, block = [], []
    for line in text.split("\n") + [""]:
        if line.strip().startswith("|") and line.strip().endswith("|"):
            block.append(line.strip())
            continue
        if len(block) >= 2 and any(_TABLE_RULE.match(b) for b in block):
            out.append("```\n" + "\n".join(b for b in block if not _TABLE_RULE.match(b)) + "\n```")
        else:
            out.extend(block)
        block = []
        out.append(line)
    return "\n".join(out[:-1])


def _inline(text: str) -> str:
    """Convert one stretch of non-code markdown."""
    text = _IMAGE.sub(lambda m: f"<{m.group(2)}|{m.group(1) or m.group(2)}>", text)
    text = _LINK.sub(lambda m: f"<{m.group(2)}|{m.group(1)}>", text)
    text = _escape_outside_refs(text)  # to_mrkdwn redacted already; again would undo the protected masks
    text = _HEADING.sub(lambda m: f"{_BOLD_MARK}{m.group(1).strip('*_ ')}{_BOLD_MARK}", text)
    text = _BOLD.sub(lambda m: f"{_BOLD_MARK}{m.group(2)}{_BOLD_MARK}", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    text = _ITALIC.sub(r"_\1_", text)
    text = _STRIKE.sub(r"~\1~", text)
    text = re.sub(r"^&gt;(?= |$)", ">", text, flags=re.M)  # blockquotes survive escaping
    return text.replace(_BOLD_MARK, "*")


def to_mrkdwn(markdown: str) -> str:
    """Markdown to Slack mrkdwn: headings and **bold** → *bold*, links → <url|text>, code kept verbatim."""
    if not markdown:
        return ""
    markdown = redact(markdown)  # model text is untrusted: a URL it repeats must not carry its password to Slack
    code: list[str] = []
    text = _tables_to_code(markdown.replace("\r\n", "\n"))
    text = _protect(text, _FENCE, code)
    text = _protect(text, _INLINE_CODE, code)
    text = _protect(text, MASKS, code)  # the redactor's *** (rtsp://u:***@h) is not bold/italic markup
    code = [_code(c) for c in code]
    return _restore(_inline(text), code).strip()


def _code(block: str) -> str:
    if block.startswith("```"):
        body = block[3:-3] if block.endswith("```") and len(block) >= 6 else block[3:]
        first, nl, rest = body.partition("\n")
        if nl and re.fullmatch(r"[\w+#.-]*", first.strip()):  # drop the language tag: Slack shows it as code
            body = rest
        return "```\n" + escape_plain(body.strip("\n")) + "\n```"
    return escape_plain(block)


def split_text(text: str, limit: int = SECTION_LIMIT, fence_break: str = "") -> list[str]:
    """Split on paragraph, then line, then word boundaries into pieces <= limit; code fences stay balanced.

    `fence_break` goes between a fence added to close or reopen a cut code block and the code: markdown ("\n")
    needs a fence on its own line, mrkdwn does not.
    """
    limit -= 6 + 2 * len(fence_break)  # room to close and reopen a code fence cut in two
    pieces: list[str] = []
    current = ""
    for para in _units(text, limit):
        joined = f"{current}\n\n{para}" if current else para
        if len(joined) <= limit:
            current = joined
            continue
        if current:
            pieces.append(current)
        current = para
    if current:
        pieces.append(current)
    return _balance_fences(pieces, fence_break)


def _units(text: str, limit: int) -> list[str]:
    units: list[str] = []
    for para in re.split(r"\n{2,}", text.strip()):
        if len(para) <= limit:
            units.append(para)
            continue
        line_buf = ""
        for line in para.split("\n"):
            for chunk in _hard_wrap(line, limit):
                candidate = f"{line_buf}\n{chunk}" if line_buf else chunk
                if len(candidate) > limit and line_buf:
                    units.append(line_buf)
                    candidate = chunk
                line_buf = candidate
        if line_buf:
            units.append(line_buf)
    return units


def _hard_wrap(line: str, limit: int) -> list[str]:
    out = []
    while len(line) > limit:
        cut = line.rfind(" ", 0, limit)
        cut = cut if cut > limit // 2 else limit
        out.append(line[:cut])
        line = line[cut:].lstrip(" ")
    return out + [line]


def _balance_fences(pieces: list[str], fence_break: str = "") -> list[str]:
    """A piece that ends inside ``` gets it closed, and the next one reopens it."""
    out, carry = [], False
    for piece in pieces:
        if carry:
            piece = "```" + fence_break + piece
        carry = piece.count("```") % 2 == 1
        if carry:
            piece += fence_break + "```"
        out.append(piece)
    return out


def fallback_text(sections: list[str], limit: int = 300) -> str:
    """The plain `text` Slack shows in notifications for a block message."""
    head = sections[0] if sections else ""
    return head if len(head) <= limit else head[: limit - 1].rstrip() + "…"
