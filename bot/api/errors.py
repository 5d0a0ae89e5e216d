"""The REST API's refusals: `UserError` (one line and an HTTP status) and the command core's errors mapped to it."""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator

from bot.backends.base import BackendError
from bot.media.redaction import redact
from bot.media.resolve import MediaError
from bot.pipelines.state import PipelineNotFound
from bot.services import ServiceUnavailable

# The shared messages (bot/pipelines, bot/monitoring) name the Slack/CLI command that helps; a REST client is told the
# REST way instead. Per command: a backticked `/vision … ARG` (its argument kept) or a bare mention -> the request.
REST_WAYS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"`/vision snapshot(?: ([^\s`]+))?`|/vision snapshot\b"), "GET /api/pipelines/{}/frame"),
    (re.compile(r"`/vision unwatch(?: ([^\s`]+))?`|/vision unwatch\b"), "DELETE /api/watches/{}"),
    (re.compile(r"`/vision watches`|/vision watches\b"), "GET /api/watches"),
)
_PLACEHOLDERS = {None, "NAME", "ID", "NAME_OR_ID"}


def rest_wording(text: str) -> str:
    """A shared message as a REST client reads it: `/vision snapshot door` -> GET /api/pipelines/door/frame."""
    for pattern, way in REST_WAYS:
        text = pattern.sub(functools.partial(_request, way), text)
    return text


def _request(way: str, match: re.Match[str]) -> str:
    argument = match[1] if match.lastindex else None
    return way.format("{id}" if argument in _PLACEHOLDERS else argument)


class UserError(Exception):
    """A request we refuse; str() is the one line for the client, `status` the HTTP status."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(rest_wording(message))
        self.status = status


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """The command core's one-line errors as HTTP errors: unknown pipeline 404, bad input 400."""
    try:
        yield
    except ServiceUnavailable:
        raise
    except PipelineNotFound as exc:
        raise UserError(redact(str(exc)), 404) from None
    except (BackendError, MediaError, ValueError, LookupError) as exc:
        raise UserError(redact(str(exc))) from None
