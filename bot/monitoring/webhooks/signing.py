"""How a webhook POST is signed, and how a receiver checks it: HMAC-SHA256 over `TIMESTAMP.BODY`, in headers."""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "X-Vision-Agent-Signature"
TIMESTAMP_HEADER = "X-Vision-Agent-Timestamp"
DELIVERY_HEADER = "X-Vision-Agent-Delivery"
USER_AGENT = "vision-agent/0.1"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """`sha256=` + hex HMAC-SHA256 over `TIMESTAMP.BODY`: the timestamp is signed too, so an old body cannot be
    replayed with a fresh one (receivers refuse timestamps older than a few minutes)."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str, max_age: float = 300.0,
           now: float | None = None) -> bool:
    """True if `signature` is ours for this body and the timestamp is recent (what a receiver does)."""
    try:
        age = abs((time.time() if now is None else now) - float(timestamp))
    except ValueError:
        return False
    return age <= max_age and hmac.compare_digest(sign(secret, timestamp, body), signature)


def signed_headers(secret: str | None, body: bytes, delivery: str) -> dict[str, str]:
    """The headers of one POST attempt; with a secret, the bearer token and a signature stamped now."""
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, DELIVERY_HEADER: delivery}
    if secret:
        stamp = str(int(time.time()))  # signed per attempt: a retry is as fresh as the first post
        headers["Authorization"] = f"Bearer {secret}"
        headers[TIMESTAMP_HEADER] = stamp
        headers[SIGNATURE_HEADER] = sign(secret, stamp, body)
    return headers
