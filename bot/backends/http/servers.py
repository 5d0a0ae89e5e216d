"""The inference servers the http backend places pipelines on: which answer, how loaded each is, which to use next."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from urllib.parse import urlparse

from bot.backends.base import BackendError
from bot.media.reach import is_loopback

PROBE_TIMEOUT = 5.0  # seconds a server has to list its pipelines before it counts as not answering


class ServerPool:
    """The configured servers (inference.server_urls), in order. A new pipeline goes to the server that answers with
    the fewest pipelines (what it lists, whoever started them, plus the starts under way here); ties go to the
    earlier server. One server: no probing at all, the start itself says when it does not answer."""

    def __init__(self, urls: list[str], api_key: str | None) -> None:
        self.urls = [u.rstrip("/") for u in urls]
        self._api_key = api_key
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
        """How many pipelines the server runs (its /inference_pipelines/list); None when it does not answer."""
        import requests

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            resp = requests.get(f"{url}/inference_pipelines/list", headers=headers, timeout=PROBE_TIMEOUT)
            body = resp.json() if resp.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None
        return len(body.get("pipelines") or []) if isinstance(body, dict) else None

    @contextmanager
    def placing(self, exclude: Iterable[str] = ()) -> Iterator[str]:
        """The server to start one pipeline on, reserved until the block ends (two starts at once spread too);
        BackendError when none of them answers."""
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
        try:
            yield url
        finally:
            with self._lock:
                self._placing[url] -= 1
