"""The one loopback test settings need (a server may listen without a token only there); bot.media.reach re-exports it."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and 'localhost': where a server may listen without a token (any other name may
    resolve anywhere)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
