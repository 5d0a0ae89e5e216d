"""Credential masking for anything that shows a URL: tool results, replies, handles, log records."""

from __future__ import annotations

import logging
import re

# The password part is greedy up to the last @ of the authority, so a raw @ inside a password stays masked.
_CRED_IN_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:@/\s]*):(?P<pw>[^/?#\s]+)@")
_TOKEN_IN_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<tok>[^:@/\s]+)@")  # rtsp://TOKEN@host
_CRED_IN_QUERY = re.compile(
    r"(?i)(?P<k>\b(?:password|passwd|pwd|api_key|apikey|token|access_token|secret))=(?P<v>[^&\s\"']+)"
)


def redact(text: str) -> str:
    """Mask credentials in any URLs inside `text`: rtsp://user:***@host, rtsp://***@host (a bare token),
    http://u:***@h, ?password=***."""
    if not text:
        return text
    text = _CRED_IN_URL.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    text = _TOKEN_IN_URL.sub(lambda m: f"{m['scheme']}***@", text)
    return _CRED_IN_QUERY.sub(lambda m: f"{m['k']}=***", text)


class RedactingFilter(logging.Filter):
    """A handler filter that masks URL credentials in every record it passes (message and args)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string is the logger's problem, not ours
            return True
        masked = redact(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True
