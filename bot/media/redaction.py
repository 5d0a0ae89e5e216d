"""The one credential redactor: URL userinfo, secret query values and the bot's own tokens, wherever text leaves."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable
from typing import Any

_SCHEME = r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://"  # where a word starts: a long word is scanned once
# scheme://user:password@host. People type passwords raw, with spaces, '#', '?' or '@' in them: the password runs to
# the first '@' that a host follows (a dotted name or address, or one label before a port or path), so "p@ss w#1"
# is masked whole and "...@10.0.0.5 is down, ask bob@example.com" keeps its host. A '/' or line break ends the search.
_HOST_AHEAD = (r"(?=(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)(?::\d+)?(?:[/?#\s\"'<>|),;]|$)"  # dotted/IPv6
               r"|[A-Za-z0-9-]+:\d+(?:[/?#\s\"'<>|),;]|$)|[A-Za-z0-9-]+(?:[/?]|$))")  # one label: with a port, or before a path
_CRED_IN_URL = re.compile(rf"(?P<scheme>{_SCHEME})(?P<user>[^:@/\s]*):(?P<pw>[^/\n]{{1,128}}?)@{_HOST_AHEAD}")
# Whatever the rule above leaves: user:password@ with no space in the password, any host.
_CRED_IN_URL_PLAIN = re.compile(rf"(?P<scheme>{_SCHEME})(?P<user>[^:@/\s]*):(?P<pw>[^/?#\s@]+)@")
_TOKEN_IN_URL = re.compile(rf"(?P<scheme>{_SCHEME})(?P<tok>[^:@/\s]+)@")  # rtsp://TOKEN@host
# user:password@192.168.1.10 with no scheme, as people paste it from a camera's sticker; only before an IP address,
# so e-mail addresses and mailto: links stay as they are.
_BARE_CRED = re.compile(r"(?<![\w/:@.-])(?P<user>[A-Za-z0-9._-]{1,64}):(?P<pw>[^\s/@]{1,128})@(?=\d{1,3}(?:\.\d{1,3}){3}\b)")
# key=value secrets in a query, a fragment or a path: ?pwd=, &PassWord=, &-pwd= (INSTAR), #password=, ?auth=<base64>,
# ?X-Amz-Signature=, ?user_password=, and the DVR style /user=admin_password=XXX_channel=1. Any key is read, and
# `_secret_key` decides by its name, so a vendor's own spelling (adminpass, passcode, api-key) is caught without a
# list of every vendor. A value runs to the next &, space or quote, or to the next `_name=` of that path style;
# '#' and '/' stay inside it (a raw '#' in a password, '/' in base64).
# The value is read only after a secret's name (possessively: linear, whatever the text), so a long run of
# "?k=?k=…" in a message costs one pass, not one pass per key.
_KEY = re.compile(r"(?P<pre>(?:^|[?&;/_\s,\"'({#-]))(?P<k>[A-Za-z0-9][A-Za-z0-9_-]{0,39})=")
_VALUE = re.compile(r"(?:[^&\s\"'<>_]++|_(?![A-Za-z]+=))*+")
# Key names (lower case, '-' and '_' dropped) that hold a secret: anywhere in the name, at its end, or the whole name.
_SECRET_ANYWHERE = re.compile(r"passw|passcode|passkey|passphrase|pwd|pswd|psw|loginpas|secret|signature|credential|"
                              r"apikey|authkey|accesskey|privatekey|sessionkey|authorization")
_SECRET_AT_END = ("pass", "token")
_SECRET_NAMES = frozenset({"pw", "key", "sig", "auth", "pas"})


def _secret_key(name: str) -> bool:
    """Whether a query, path or JSON key of this name holds a secret (monkey=, keyframe=, max_tokens= do not)."""
    n = name.lower().replace("-", "").replace("_", "")
    return n in _SECRET_NAMES or n.endswith(_SECRET_AT_END) or bool(_SECRET_ANYWHERE.search(n))


def _mask_key_values(text: str) -> str:
    out, pos = [], 0
    for m in _KEY.finditer(text):
        if m.start() < pos or not _secret_key(m["k"]):
            continue  # inside a value already masked, or not a secret's name (its value is scanned on)
        end = _VALUE.match(text, m.end()).end()  # type: ignore[union-attr]  # it matches the empty string at least
        if end > m.end():
            out += [text[pos:m.end()], "***"]
            pos = end
    return "".join(out) + text[pos:]


# Header and JSON forms: "x-api-key: ...", "Authorization: Basic ...", {"password": "..."}.
_CRED_IN_HEADER = re.compile(
    r"(?i)(?P<k>\b(?:x-api-key|api-key|x-auth-token|authorization|proxy-authorization)\s*:\s*)"
    r"(?P<kind>(?:basic|bearer|digest|token)\s+)?(?P<v>[^\s,;\"']+)"
)
_CRED_IN_JSON = re.compile(r"(?P<k>[\"'](?P<name>[A-Za-z0-9_-]{1,40})[\"']\s*:\s*[\"'])(?P<v>[^\"']*)(?=[\"'])")
# Slack bot/app/user tokens and Anthropic keys, whoever's they are: their shape alone says they are secrets.
_TOKEN_SHAPE = re.compile(r"\b(?P<kind>xox[abposr]|xapp|sk-ant)-[A-Za-z0-9_-]+")
# The bot's own secrets, named by their env vars: their literal values are masked even where no shape matches.
SECRET_ENV = ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "ANTHROPIC_API_KEY", "ROBOFLOW_API_KEY")
# Where redact() leaves its *** (after user:, //, key=, xoxb-): renderers keep these from becoming emphasis markup.
MASKS = re.compile(r"(?<=[:/=-])\*\*\*")
_MIN_SECRET = 8  # shorter "secrets" are test placeholders; masking them would garble ordinary words
_secrets: set[str] = set()


def add_secrets(values: Iterable[str | None]) -> None:
    """Also mask these literal values (the composition root adds the secrets Settings loaded)."""
    _secrets.update(v.strip() for v in values if v and len(v.strip()) >= _MIN_SECRET)


def _secret_values() -> list[str]:
    found = set(_secrets)
    found.update(v.strip() for n in SECRET_ENV if len((v := os.environ.get(n) or "").strip()) >= _MIN_SECRET)
    return sorted(found, key=len, reverse=True)  # longest first: a secret containing another is masked whole


def redact(text: str) -> str:
    """Mask credentials in `text`, in every form cameras and services put them: rtsp://user:***@host (a password
    with spaces, '#' or '@' included), rtsp://***@host (a bare token), user:***@10.0.0.5, ?pwd=*** / &loginpas=*** /
    ?auth=*** / ?sig=*** / ?key=*** and the like, /user=admin_password=***_channel=1, "x-api-key: ***",
    "Authorization: Basic ***", {"password": "***"}, xoxb-*** / xapp-*** / sk-ant-*** tokens, and the literal values
    of the bot's own secrets. Idempotent: masking masked text changes nothing."""
    if not text:
        return text
    for secret in _secret_values():
        text = text.replace(secret, "***")
    text = _CRED_IN_URL.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    text = _CRED_IN_URL_PLAIN.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    text = _TOKEN_IN_URL.sub(lambda m: f"{m['scheme']}***@", text)
    text = _BARE_CRED.sub(lambda m: f"{m['user']}:***@", text)
    text = _TOKEN_SHAPE.sub(lambda m: f"{m['kind']}-***", text)
    text = _CRED_IN_HEADER.sub(lambda m: f"{m['k']}{m['kind'] or ''}***", text)
    text = _CRED_IN_JSON.sub(lambda m: f"{m['k']}***" if m["v"] and _secret_key(m["name"]) else m[0], text)
    return _mask_key_values(text)


def _mask_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a broken format string is the logger's problem, not ours
        return
    masked = redact(message)
    if masked != message:
        record.msg, record.args = masked, None
    if record.exc_info and not record.exc_text:
        # An exception's text often carries the URL it failed on; format it here so the handler prints ours.
        record.exc_text = redact(logging.Formatter().formatException(record.exc_info))


class RedactingFilter(logging.Filter):
    """A handler filter that masks credentials in every record it passes (message, args and traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        _mask_record(record)
        return True


class _RedactingRecords:
    """A log record factory masking each record as it is made, whichever handler later prints it."""

    def __init__(self, base: Callable[..., logging.LogRecord]) -> None:
        self.base = base

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.base(*args, **kwargs)
        _mask_record(record)
        return record


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Mask credentials in every log record; idempotent.

    A RedactingFilter goes on every handler of `logger` (default: root): on handlers, because a logger's own filters
    never see records propagated from child loggers. The record factory covers libraries that log through their own
    handlers with propagation off (`inference` does, and it logs video source URLs).
    """
    current = logging.getLogRecordFactory()
    if not isinstance(current, _RedactingRecords):
        logging.setLogRecordFactory(_RedactingRecords(current))
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
