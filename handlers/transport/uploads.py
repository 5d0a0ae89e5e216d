"""Frames uploaded to Slack unshared (in no channel): an image block shows them, in an alert or a streamed answer."""

from __future__ import annotations

import logging
import time
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.media.redaction import redact

log = logging.getLogger(__name__)


async def upload_unshared(client: Any, image: bytes, camera: str, when: float) -> str | None:
    """Upload the frame without a channel (shared nowhere; an image block shows it); its file id, or None."""
    stamp = time.strftime("%H:%M:%S UTC", time.gmtime(when))
    try:
        resp = await client.files_upload_v2(file=image, filename=f"{camera}-{int(when)}.jpg",
                                            title=redact(f"{camera} at {stamp}")[:250])
    except SlackApiError as exc:
        log.warning("frame upload failed: %s; the message goes out without it", exc.response.get("error"))
        return None
    file = resp.get("file") or {}
    return file.get("id") if isinstance(file, dict) else None
