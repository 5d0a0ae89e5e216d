"""Files people attach: fetched from Slack with the bot token, size- and pixel-capped, images only, saved in the workspace."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bot.agent.tools import Attachment
from bot.media.sniff import CHAT_TYPES as IMAGE_TYPES
from bot.media.sniff import DEFAULT_MAX_PIXELS, ImageRejected, check_image

log = logging.getLogger(__name__)

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Fetched:
    """Images that arrived (as attachments for the agent) and one line per file that was refused."""

    attachments: list[Attachment]
    refusals: list[str]


class FileFetcher:
    """Downloads `url_private` files: they need `Authorization: Bearer <bot token>` (else Slack serves a sign-in page)."""

    def __init__(self, dest: Path, max_bytes: int, timeout: float = 30.0, max_pixels: int = DEFAULT_MAX_PIXELS) -> None:
        self.dest = dest
        self.max_bytes = max_bytes
        self.max_pixels = max_pixels
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def fetch_all(self, files: list[dict[str, Any]], client: Any) -> Fetched:
        atts, refusals = [], []
        for info in files:
            try:
                atts.append(await self._fetch(info, client))
            except FileRefused as exc:
                refusals.append(str(exc))
        return Fetched(atts, refusals)

    async def _fetch(self, info: dict[str, Any], client: Any) -> Attachment:
        if info.get("file_access") == "check_file_info" or not info.get("url_private"):
            info = (await client.files_info(file=info["id"]))["file"]  # Slack Connect / lazy file objects
        name = info.get("name") or info["id"]
        mimetype = (info.get("mimetype") or "").lower()
        if mimetype not in IMAGE_TYPES:
            kind = info.get("pretty_type") or info.get("filetype") or mimetype or "unknown"
            raise FileRefused(f"I can only look at images; *{name}* is a {kind} file. Attach a JPEG, PNG, GIF or WebP.")
        if int(info.get("size") or 0) > self.max_bytes:
            raise FileRefused(f"*{name}* is {_mb(int(info['size']))}, over my {_mb(self.max_bytes)} limit; "
                              "send a smaller image.")
        data = await self._download(info.get("url_private_download") or info["url_private"], client.token, name)
        try:  # the header only: nothing is decoded before its pixel count is known to be within the limit
            media_type = check_image(data, self.max_pixels, f"*{name}*").media_type
        except ImageRejected as exc:
            raise FileRefused(str(exc)) from None
        if media_type not in IMAGE_TYPES:
            raise FileRefused(f"*{name}* is a {media_type.split('/')[1].upper()} image; attach a JPEG, PNG, GIF or WebP.")
        self.dest.mkdir(parents=True, exist_ok=True)
        path = self.dest / f"{info['id']}_{_SAFE.sub('_', Path(name).stem)[:60]}{IMAGE_TYPES[media_type]}"
        path.write_bytes(data)
        return Attachment(path=path, media_type=media_type, file_id=info["id"], name=name)

    async def _download(self, url: str, token: str, name: str) -> bytes:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        try:
            async with self._session.get(url, headers={"Authorization": f"Bearer {token}"}) as resp:
                if resp.status != 200:
                    raise FileRefused(f"Slack refused to send *{name}* (HTTP {resp.status}); attach it again.")
                if resp.content_type.startswith("text/html"):
                    raise FileRefused(f"Slack sent a sign-in page instead of *{name}*: the app needs the "
                                      "`files:read` scope (reinstall it from manifest.yml).")
                data = bytearray()
                async for chunk in resp.content.iter_chunked(64 * 1024):
                    data += chunk
                    if len(data) > self.max_bytes:
                        raise FileRefused(f"*{name}* is over my {_mb(self.max_bytes)} limit; send a smaller image.")
                return bytes(data)
        except aiohttp.ClientError as exc:
            log.warning("download of %s failed: %s", name, type(exc).__name__)
            raise FileRefused(f"I could not download *{name}* from Slack ({type(exc).__name__}); try again.") from None


class FileRefused(Exception):
    """A file we will not pass to the agent; str() is the one line posted in the thread."""


def _mb(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB"
