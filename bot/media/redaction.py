"""The one credential redactor: URL userinfo, secret query values and the bot's own tokens, wherever text leaves."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable
from typing import Any

# The password part is greedy up to the last @ of the authority, so a raw @ inside a password stays masked.
_CRED_IN_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:@/\s]*):(?P<pw>[^/?#\s]+)@")
_TOKEN_IN_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<tok>[^:@/\s]+)@")  # rtsp://TOKEN@host
_CRED_IN_QUERY = re.compile(
    r"(?i)(?P<k>\b(?:password|passwd|pwd|api_key|apikey|token|access_token|secret))=(?P<v>[^&\s\"']+)"
)
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
    """Mask credentials in `text`: rtsp://user:***@host, rtsp://***@host (a bare token), http://u:***@h,
    ?password=***, xoxb-*** / xapp-*** / sk-ant-*** tokens, and the literal values of the bot's own secrets."""
    if not text:
        return text
    for secret in _secret_values():
        text = text.replace(secret, "***")
    text = _CRED_IN_URL.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    text = _TOKEN_IN_URL.sub(lambda m: f"{m['scheme']}***@", text)
    text = _TOKEN_SHAPE.sub(lambda m: f"{m['kind']}-***", text)
    return _CRED_IN_QUERY.sub(lambda m: f"{m['k']}=***", text)


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
