"""The markdown of an answer as Slack gets it: broadcasts defused, where a full message may end (streamed or
posted), and what of the final answer a stream has not shown yet."""

from __future__ import annotations

import re

from bot.media.redaction import redact
from handlers.transport.mrkdwn import limit_mentions, split_text

MAX_MARKDOWN = 12_000  # docs.slack.dev: a markdown block's text, and one appendStream's markdown_text, <= 12,000
# `<!channel>`, `<!here>`, `<!everyone>`, `<!subteam^…>` and the bare words notify a whole channel or team. The
# model's text is untrusted (anyone can ask it to write them): a word joiner after `<` / `@` keeps them readable
# and stops Slack from reading them as a broadcast.
_BROADCAST = re.compile(r"<(?=!)|@(?=(?:channel|here|everyone)\b)", re.I)


def for_slack(text: str, named: list[str] | None = None) -> str:
    """Model text made safe to send as markdown: credentials masked (the one redactor), broadcasts defused, and no
    more than MAX_MENTIONS people notified; `named` holds who earlier pieces of the same answer notified."""
    return limit_mentions(_BROADCAST.sub(lambda m: m.group(0) + "\u2060", redact(text)), named=named)


def markdown_pieces(text: str, limit: int = MAX_MARKDOWN) -> list[str]:
    """`text` in pieces of at most `limit` characters on paragraph, line or word boundaries; a code block cut in
    two is closed at the end of one piece and opened again, on its own line, at the start of the next."""
    return split_text(text, limit, fence_break="\n") or [text]


def clean_head(text: str, room: int) -> str:
    """The longest start of `text` within `room` that ends on a paragraph, line or word boundary."""
    window = text[:room]
    for sep in ("\n\n", "\n", " "):
        cut = window.rfind(sep)
        if cut > room // 2:
            return window[:cut]
    return window  # one unbroken run of text: cut it where the room ends


def unshown(final: str, shown: str) -> str:
    """What of the final answer `final` is not in `shown` yet, the text streamed for it so far.

    The final text is the model's text blocks joined by newlines and stripped, so whitespace may differ from the
    pieces that streamed: they are compared ignoring it. A note put in front of the answer (e.g. that the message
    was cut) is appended at the end. If the streamed text is not the start of the answer (a retried call said
    something else), the whole answer follows it: it must appear once, complete.
    """
    if not shown.strip():
        return final
    first = shown.split()[0]
    starts = [0] + ([i] if (i := final.find(first)) > 0 else [])
    for start in starts:
        end = _match_end(final, start, shown)
        if end is not None:
            head = final[:start].strip()
            return _after(shown, final[end:]) + (f"\n\n{head}" if head else "")
    return "\n\n" + final


def _after(shown: str, rest: str) -> str:
    """`rest` without the whitespace `shown` already ends with (a held-back word leaves its space shown)."""
    sent = shown[len(shown.rstrip()):]
    if not sent:
        return rest
    return rest[len(sent):] if rest.startswith(sent) else rest.lstrip()


def _match_end(final: str, start: int, shown: str) -> int | None:
    i = start
    for ch in shown:
        if ch.isspace():
            continue
        while i < len(final) and final[i].isspace():
            i += 1
        if i >= len(final) or final[i] != ch:
            return None
        i += 1
    return i
