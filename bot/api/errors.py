"""The REST API's refusals: `UserError` (one line and an HTTP status) and the command core's errors mapped to it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from bot.backends.base import BackendError
from bot.media.redaction import redact
from bot.media.resolve import MediaError
from bot.pipelines.state import PipelineNotFound
from bot.services import ServiceUnavailable


class UserError(Exception):
    """A request we refuse; str() is the one line for the client, `status` the HTTP status."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
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
