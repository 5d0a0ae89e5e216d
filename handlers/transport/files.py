"""Files people attach: fetched from Slack with the bot token, size- and pixel-capped, images only, saved in the workspace."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urljoin, urlsplit

import aiohttp

from bot.agent.tools import Attachment
from bot.media.sniff import CHAT_TYPES as IMAGE_TYPES
from bot.media.sniff import DEFAULT_MAX_PIXELS, ImageRejected, check_image
from handlers.transport.mrkdwn import inert

log = logging.getLogger(__name__)

_NAME_PART = re.compile(r"[^A-Za-z0-9_-]+")  # no dots, no slashes: a saved name is always one plain file name
# Where Slack keeps uploaded files (files.slack.com, files-origin.slack.com, GovSlack's slack-gov.com): the bot token
# goes there and nowhere else. A remote file's url_private can point at any host; sending it the token would hand the
# bot's identity to whoever runs that host.
SLACK_FILE_DOMAINS = ("slack.com", "slack-gov.com")
MAX_REDIRECTS = 3


def slack_hosted(url: str, api_url: str) -> bool:
    """True when `url` is on Slack's own file hosts over https, or on the host the bot's Web API is configured at
    (SLACK_API_URL: an emulator or an enterprise gateway), the only places the bot token may be sent."""
    parts, api = _split(url), urlsplit(api_url)
    # Parsers disagree on a backslash, a control character or userinfo in the authority (WHATWG reads a backslash
    # as '/', so "https://evil<backslash>@files.slack.com" is evil's for a browser-like client): Slack never writes
    # them, so none is Slack's. Nor is a URL Python cannot read (a look-alike '#' or '/' before '@').
    if parts is None or "\\" in url or not url.isprintable() or parts.username is not None:
        return False
    if parts.netloc and parts.netloc == api.netloc and parts.scheme == api.scheme:
        return True
    host = (parts.hostname or "").lower()
    return parts.scheme == "https" and any(host == d or host.endswith("." + d) for d in SLACK_FILE_DOMAINS)


def _split(url: str) -> SplitResult | None:
    try:
        return urlsplit(url)
    except ValueError:  # urlsplit refuses a netloc that NFKC-normalises into '/', '?', '#' or '@'
        return None


def _join(base: str, location: str) -> str:
    try:
        return urljoin(base, location)
    except ValueError:
        return location  # unreadable: slack_hosted refuses it


def _host(url: str, default: str) -> str:
    """The host named in a refusal line (never raises)."""
    return ((p := _split(url)) and p.hostname) or default


@dataclass(frozen=True)
class Fetched:
    """Images that arrived (as attachments for the agent) and one line per file that was refused."""

    attachments: list[Attachment]
    refusals: list[str]


class FileFetcher:
    """Downloads `url_private` files: they need `Authorization: Bearer <bot token>` (else Slack serves a sign-in page)."""

    def __init__(self, dest: Path, max_bytes: int, timeout: float = 30.0, max_pixels: int = DEFAULT_MAX_PIXELS,
                 api_url: str = "https://slack.com/api/") -> None:
        self.dest = dest
        self.api_url = api_url
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
        raw_name = str(info.get("name") or info["id"])
        name = inert(raw_name)  # repeated in our lines: the uploader's text may not page the people it names
        mimetype = (info.get("mimetype") or "").lower()
        if mimetype not in IMAGE_TYPES:
            kind = info.get("pretty_type") or info.get("filetype") or mimetype or "unknown"
            raise FileRefused(f"I can only look at images; *{name}* is a {kind} file. Attach a JPEG, PNG, GIF or WebP.")
        if int(info.get("size") or 0) > self.max_bytes:
            raise FileRefused(f"*{name}* is {_mb(int(info['size']))}, over my {_mb(self.max_bytes)} limit; "
                              "send a smaller image.")
        url = info.get("url_private_download") or info["url_private"]
        if info.get("is_external") or not slack_hosted(url, self.api_url):
            where = _host(url, "somewhere else")
            raise FileRefused(f"*{name}* is stored outside Slack ({where}), so I did not open it; "
                              "upload the image itself to Slack and mention me again.")
        data = await self._download(url, client.token, name)
        try:  # the header only: nothing is decoded before its pixel count is known to be within the limit
            media_type = check_image(data, self.max_pixels, f"*{name}*").media_type
        except ImageRejected as exc:
            raise FileRefused(str(exc)) from None
        if media_type not in IMAGE_TYPES:
            raise FileRefused(f"*{name}* is a {media_type.split('/')[1].upper()} image; attach a JPEG, PNG, GIF or WebP.")
        self.dest.mkdir(parents=True, exist_ok=True)
        # Both parts of the name come from the event: neither may carry a path ("../", "/") out of the uploads folder.
        safe_id, stem = (_NAME_PART.sub("_", part) for part in (str(info["id"])[:40], Path(raw_name).stem[:60]))
        path = self.dest / f"{safe_id}_{stem}{IMAGE_TYPES[media_type]}"
        path.write_bytes(data)
        return Attachment(path=path, media_type=media_type, file_id=info["id"], name=raw_name)

    async def _download(self, url: str, token: str, name: str) -> bytes:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        try:
            for _ in range(MAX_REDIRECTS + 1):  # redirects by hand: the token follows only to Slack's own hosts
                async with self._session.get(url, headers={"Authorization": f"Bearer {token}"},
                                             allow_redirects=False) as resp:
                    if resp.status in (301, 302, 303, 307, 308) and resp.headers.get("Location"):
                        url = _join(url, resp.headers["Location"])
                        if not slack_hosted(url, self.api_url):
                            raise FileRefused(f"Slack sent *{name}* on to {_host(url, 'another host')}, "
                                              "outside Slack, so I did not follow; upload the image itself.")
                        continue
                    return await self._body(resp, name)
            raise FileRefused(f"Slack redirected *{name}* more than {MAX_REDIRECTS} times; attach it again.")
        except aiohttp.ClientError as exc:
            log.warning("download of %s failed: %s", name, type(exc).__name__)
            raise FileRefused(f"I could not download *{name}* from Slack ({type(exc).__name__}); try again.") from None

    async def _body(self, resp: aiohttp.ClientResponse, name: str) -> bytes:
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


class FileRefused(Exception):
    """A file we will not pass to the agent; str() is the one line posted in the thread."""


def _mb(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB"
