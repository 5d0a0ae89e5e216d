"""Fetching images over http(s) without letting a URL reach loopback, private or link-local hosts (SSRF)."""

from __future__ import annotations

import http.client
import ipaddress
import socket
from urllib.parse import urljoin, urlsplit

from bot.redaction import redact

MAX_REDIRECTS = 3


class FetchError(Exception):
    """A URL that may not or could not be fetched; str() is one line (credentials redacted)."""


def _blocked(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_reserved
        or ip.is_multicast or ip.is_unspecified
    )


def check_url(url: str, trusted_hosts: set[str]) -> tuple[str, int, str]:
    """(host, port, pinned ip) for a URL whose every address is public, or whose host (or host:port) is trusted.

    Resolving once and connecting to that exact address defeats DNS rebinding between check and fetch.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"{redact(url)} is not an http(s) URL.")
    host = parts.hostname.lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise FetchError(f"cannot resolve host {host!r} in {redact(url)}; check the URL.") from None
    addrs = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    trusted = host in trusted_hosts or f"{host}:{port}" in trusted_hosts
    if not trusted and any(_blocked(a) for a in addrs):
        raise FetchError(
            f"refusing {redact(url)}: {host} is a local/private address. Only registered cameras (CAMERAS.md) and "
            "the inference server may be fetched on the local network; add the camera to CAMERAS.md, or attach the image."
        )
    return host, port, str(addrs[0])


def _connection(parts, ip: str, timeout: float) -> http.client.HTTPConnection:
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=timeout)
    # Connect to the address we checked, while TLS (SNI, certificate) still uses the host name.
    conn._create_connection = lambda addr, *a, **k: socket.create_connection((ip, addr[1]), *a, **k)  # type: ignore[attr-defined]
    return conn


def _get(url: str, trusted_hosts: set[str], timeout: float) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    _, _, ip = check_url(url, trusted_hosts)
    parts = urlsplit(url)
    conn = _connection(parts, ip, timeout)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    headers = {"User-Agent": "vision-agent/0.1", "Accept": "image/*"}
    if parts.username is not None:
        import base64

        token = base64.b64encode(f"{parts.username}:{parts.password or ''}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    conn.request("GET", path, headers=headers)
    return conn, conn.getresponse()


def fetch_url(url: str, trusted_hosts: set[str], max_bytes: int, timeout: float) -> bytes:
    """Body of an http(s) URL, following up to 3 redirects (each re-checked), capped at max_bytes."""
    for _ in range(MAX_REDIRECTS + 1):
        try:
            conn, resp = _get(url, trusted_hosts, timeout)
        except (OSError, http.client.HTTPException) as exc:
            raise FetchError(f"could not fetch {redact(url)}: {type(exc).__name__}: {redact(str(exc))}") from None
        try:
            if resp.status in (301, 302, 303, 307, 308) and resp.getheader("Location"):
                url = urljoin(url, resp.getheader("Location"))
                continue
            if resp.status != 200:
                raise FetchError(f"{redact(url)} answered HTTP {resp.status}; check the URL.")
            length = resp.getheader("Content-Length")
            if length and length.isdigit() and int(length) > max_bytes:
                raise FetchError(f"{redact(url)} is {int(length) // 1024} KB, over the {max_bytes // 1024} KB limit.")
            data = resp.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise FetchError(f"{redact(url)} is over the {max_bytes // 1024} KB limit.")
            return data
        except (OSError, http.client.HTTPException) as exc:
            raise FetchError(f"could not fetch {redact(url)}: {type(exc).__name__}") from None
        finally:
            conn.close()
    raise FetchError(f"{redact(url)} redirected more than {MAX_REDIRECTS} times.")
