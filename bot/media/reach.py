"""Which network addresses a URL may reach: public ones, or the exact origin of a registered camera or the server.

An origin is `scheme://host:port`. Registering `rtsp://cam:554/live` in CAMERAS.md opens rtsp to cam:554 and
nothing else on that host; the inference server opens its own scheme, host and port. Everything else must resolve
to public addresses only, and it is resolved once: callers connect to the address that was checked (DNS
rebinding between check and connect gets nowhere).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from bot.config.net import is_loopback  # noqa: F401  (re-exported: servers and backends import it from here)
from bot.media.redaction import redact

DEFAULT_PORTS = {"http": 80, "https": 443, "rtsp": 554, "rtsps": 322, "rtmp": 1935, "rtmps": 443,
                 "srt": 0, "udp": 0}
# TLS needs the host name (SNI, certificate), so these keep it; the others are handed the checked IP.
_NAME_BOUND = ("https", "rtsps", "rtmps")


class ReachError(Exception):
    """A URL that may not be opened from here; str() is one line (credentials redacted) saying what to do."""


@dataclass(frozen=True)
class Reach:
    """A checked URL: `pinned` is the URL to open (the checked IP in place of the name where the scheme allows)."""

    url: str
    host: str
    port: int
    ip: str
    trusted: bool

    @property
    def pinned(self) -> str:
        if self.trusted or urlsplit(self.url).scheme.lower() in _NAME_BOUND:
            return self.url
        return with_host(self.url, self.ip)


_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _blocked(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Anything but a global unicast address: loopback, private, link-local, CGNAT, reserved, multicast…"""
    if isinstance(ip, ipaddress.IPv6Address):  # an IPv4 address wrapped in IPv6 is judged as the IPv4 one
        inner = ip.ipv4_mapped or ip.sixtofour
        if inner is None and ip in _NAT64:
            inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if inner is not None:
            return _blocked(inner)
    return not ip.is_global or ip.is_multicast


def origin(url: str) -> str | None:
    """`scheme://host:port` of a URL (default port filled in, lower case), or None without a host."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not parts.hostname or not scheme:
        return None
    return f"{scheme}://{parts.hostname.lower()}:{port if port is not None else DEFAULT_PORTS.get(scheme, 0)}"


def with_host(url: str, ip: str) -> str:
    """The URL with its host replaced by `ip` (user info and port kept)."""
    parts = urlsplit(url)
    userinfo, _, _ = parts.netloc.rpartition("@")
    host = f"[{ip}]" if ":" in ip else ip
    netloc = (f"{userinfo}@" if userinfo else "") + host + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _resolve(host: str, port: int, url: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        infos = socket.getaddrinfo(host, port or None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise ReachError(f"cannot resolve host {host!r} in {redact(url)}; check the URL.") from None
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


def check_reach(url: str, trusted: set[str], schemes: tuple[str, ...]) -> Reach:
    """The checked URL: its origin is trusted, or every address its host resolves to is public.

    Raises:
        ReachError: a scheme not in `schemes`, no host, an unresolvable host, or a local/private address.
    """
    try:
        parts = urlsplit(url)
        port_given = parts.port
    except ValueError:
        raise ReachError(f"{redact(url)} is not a valid URL; check the port and the address.") from None
    scheme = parts.scheme.lower()
    if scheme not in schemes:
        raise ReachError(f"{redact(url)} is not a {'/'.join(schemes)} URL.")
    if not parts.hostname:
        raise ReachError(f"{redact(url)} has no host; give the address of the camera or server.")
    host = parts.hostname.lower()
    port = port_given if port_given is not None else DEFAULT_PORTS.get(scheme, 0)
    if origin(url) in trusted:
        return Reach(url, host, port, host, trusted=True)
    addrs = _resolve(host, port, url)
    if not addrs or any(_blocked(a) for a in addrs):
        where = f"{scheme}://{host}" + (f":{port_given}" if port_given is not None else "")
        raise ReachError(
            f"refusing {redact(url)}: {host} is a local/private address. Only registered cameras (CAMERAS.md, "
            f"exactly their scheme, host and port) and the inference server may be reached on the local network; "
            f"add {where} to CAMERAS.md, or attach the image."
        )
    return Reach(url, host, port, str(addrs[0]), trusted=False)
