"""A file the user attached to the conversation (CLI --image or a Slack file), saved on disk."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Attachment:
    """An image the user attached (CLI --image or a Slack file), saved on disk."""

    path: Path
    media_type: str = "image/jpeg"
    file_id: str | None = None  # Slack file id, if it came from Slack
    name: str = ""
