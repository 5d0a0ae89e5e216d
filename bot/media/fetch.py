"""Fetching images over http(s) without letting a URL reach loopback, private or link-local hosts (SSRF).

Each hop (redirects included) is checked by bot.media.reach and connected to the very address that was checked.
"""

from __future__ import annotations

import base64
import http.client
import socket
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urljoin, urlsplit

from bot.media.reach import ReachError, check_reach
from bot.media.redaction import redact

MAX_REDIRECTS = 3
HTTP = ("http", "https")
PROBE_BYTES = 64
T = TypeVar("T")
Response = http.client.HTTPResponse


class FetchError(ReachError):
    """A URL that may not or could not be fetched; str() is one line (credentials redacted)."""


def _connection(parts, ip: str, timeout: float) -> http.client.HTTPConnection:
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=timeout)
    # Connect to the address we checked, while TLS (SNI, certificate) still uses the host name.
    conn._create_connection = lambda addr, *a, **k: socket.create_connection((ip, addr[1]), *a, **k)  # type: ignore[attr-defined]
    return conn


def _get(url: str, trusted: set[str], timeout: float, accept: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    ip = check_reach(url, trusted, HTTP).ip
    parts = urlsplit(url)
    conn = _connection(parts, ip, timeout)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    headers = {"User-Agent": "vision-agent/0.1", "Accept": accept}
    if parts.username is not None:
        token = base64.b64encode(f"{parts.username}:{parts.password or ''}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    conn.request("GET", path, headers=headers)
    return conn, conn.getresponse()


def _open(url: str, trusted: set[str], timeout: float, accept: str, read: Callable[[str, Response], T]) -> T:
    """read(final url, response) on the 200 answer, after up to 3 redirects, each checked and pinned like the first."""
    for _ in range(MAX_REDIRECTS + 1):
        try:
            conn, resp = _get(url, trusted, timeout, accept)
        except ReachError as exc:
            raise FetchError(str(exc)) from None
        except (OSError, http.client.HTTPException) as exc:
            raise FetchError(f"could not fetch {redact(url)}: {type(exc).__name__}: {redact(str(exc))}") from None
        try:
            if resp.status in (301, 302, 303, 307, 308) and resp.getheader("Location"):
                url = urljoin(url, resp.getheader("Location"))
                continue
            if resp.status != 200:
                raise FetchError(f"{redact(url)} answered HTTP {resp.status}; check the URL.")
            return read(url, resp)
        except (OSError, http.client.HTTPException) as exc:
            raise FetchError(f"could not fetch {redact(url)}: {type(exc).__name__}") from None
        finally:
            conn.close()
    raise FetchError(f"{redact(url)} redirected more than {MAX_REDIRECTS} times.")


def fetch_url(url: str, trusted: set[str], max_bytes: int, timeout: float) -> bytes:
    """Body of an http(s) URL, following up to 3 redirects (each re-checked), capped at max_bytes.

    `trusted` holds origins (`scheme://host:port`) that may be local: registered cameras, the inference server.
    """
    def body(url: str, resp: Response) -> bytes:
        length = resp.getheader("Content-Length")
        if length and length.isdigit() and int(length) > max_bytes:
            raise FetchError(f"{redact(url)} is {int(length) // 1024} KB, over the {max_bytes // 1024} KB limit.")
        data = resp.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise FetchError(f"{redact(url)} is over the {max_bytes // 1024} KB limit.")
        return data

    return _open(url, trusted, timeout, "image/*", body)


def probe_url(url: str, trusted: set[str], timeout: float) -> tuple[str, str, bytes]:
    """(final URL, content type, first bytes) of an http(s) video source, redirects followed and re-checked.

    The video reader (FFmpeg) follows redirects and playlists on its own, unchecked; this look first is what lets
    the caller refuse a source that bounces into the LAN, is an HLS playlist, or is only a still picture.
    """
    def head(url: str, resp: Response) -> tuple[str, str, bytes]:
        return url, (resp.getheader("Content-Type") or "").lower(), resp.read(PROBE_BYTES)

    return _open(url, trusted, timeout, "*/*", head)
