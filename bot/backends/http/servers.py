"""The inference servers the http backend places pipelines on: which answer, how loaded each is, which to use next."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any
from urllib.parse import urlparse

from bot.backends.base import BackendError
from bot.backends.http.wire import manager_down
from bot.media.reach import is_loopback

PROBE_TIMEOUT = 5.0  # seconds a server has to list its pipelines before it counts as not answering


class ServerPool:
    """The configured servers (inference.server_urls), in order. A new pipeline goes to the server that answers with
    the fewest pipelines (what it lists, whoever started them, plus the starts under way here); ties go to the
    earlier server. One server: no probing at all, the start itself says when it does not answer."""

    def __init__(self, urls: list[str], request: Callable[..., tuple[int, Any]],
                 held: Callable[[str], int] | None = None) -> None:
        """request: HttpBackend._request; held: pipelines on a server that its list does not show (WebRTC sessions)."""
        self.urls = [u.rstrip("/") for u in urls]
        self._request = request
        self._held = held
        self._placing: dict[str, int] = {}  # starts picked but not finished yet, per server
        self._lock = threading.Lock()

    @property
    def several(self) -> bool:
        return len(self.urls) > 1

    @staticmethod
    def label(url: str) -> str:
        """How status lines name a server: ':9002' on this machine, 'gpu-box:9001' elsewhere."""
        parts = urlparse(url)
        port = f":{parts.port}" if parts.port else ""
        return port if port and is_loopback(parts.hostname or "") else (parts.netloc or url)

    def load(self, url: str) -> int | None:
        """How many pipelines the server runs (its /inference_pipelines/list, plus those `held` counts); None when
        it does not answer, or answers that its stream manager does not (no pipeline is placed there)."""
        import requests

        try:
            status, body = self._request("GET", "/inference_pipelines/list", url=url, timeout=PROBE_TIMEOUT)
        except requests.RequestException:
            return None
        if status != 200 or not isinstance(body, dict):
            return None
        return len(body.get("pipelines") or []) + (self._held(url) if self._held else 0)

    def manager_down(self, url: str) -> bool:
        """Whether the server answers but says its stream manager does not (it runs no pipelines)."""
        import requests

        try:
            status, body = self._request("GET", "/inference_pipelines/list", url=url, timeout=PROBE_TIMEOUT)
        except requests.RequestException:
            return False
        return manager_down(status, body)

    def reserve(self, exclude: Iterable[str] = ()) -> str:
        """The server to start one pipeline on, counted as starting there until release(); BackendError when none
        of them answers (blocking: it probes each server)."""
        candidates = [u for u in self.urls if u not in set(exclude)]
        if len(self.urls) == 1:
            url = self.urls[0]
        else:
            loads = {u: n for u in candidates if (n := self.load(u)) is not None}
            if not loads:
                names = ", ".join(self.label(u) for u in candidates) or "none left"
                raise BackendError(f"no inference server answers ({names}): start one with `vision-agent "
                                   "inference-server` or fix INFERENCE_SERVER_URL")
            with self._lock:
                url = min(loads, key=lambda u: (loads[u] + self._placing.get(u, 0), self.urls.index(u)))
        with self._lock:
            self._placing[url] = self._placing.get(url, 0) + 1
        return url

    def release(self, url: str) -> None:
        with self._lock:
            self._placing[url] -= 1

    @contextmanager
    def placing(self, exclude: Iterable[str] = ()) -> Iterator[str]:
        """reserve() for the block (two starts at once spread too)."""
        url = self.reserve(exclude)
        try:
            yield url
        finally:
            self.release(url)

    @asynccontextmanager
    async def placed(self) -> AsyncIterator[str]:
        """placing(), probing in a thread: the event loop runs on while each server gets PROBE_TIMEOUT to answer."""
        url = await asyncio.to_thread(self.reserve)
        try:
            yield url
        finally:
            self.release(url)
