"""schemathesis walks /openapi.json against the running REST API: no generated request gets a server error (5xx),
and every error is the JSON error line."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from bot.api.server import ApiServer
from bot.backends.provider import BackendProvider
from bot.config import load_settings
from bot.runtime import Runtime
from tests.bot.api.test_api import AUTH, CAMERAS, TOKEN
from tests.tools.fake_backend import FakeBackend

EXAMPLES = 15  # per operation: ~20 operations, a few seconds in all


@pytest.fixture
def api_url(base_env, workspace_dir: Path) -> Iterator[str]:
    """The API on its own thread and loop: schemathesis calls it synchronously (requests)."""
    (workspace_dir / "CAMERAS.md").write_text(CAMERAS)
    (workspace_dir / "clip.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42")
    loop = asyncio.new_event_loop()
    ready: list[object] = []

    async def up() -> tuple[Runtime, ApiServer]:
        rt = Runtime(load_settings(dict(base_env, VISION_AGENT_API_TOKEN=TOKEN)))  # with its scheduler: /api/jobs
        rt.backend = BackendProvider.of(FakeBackend())
        await rt.start()
        server = ApiServer(rt, "127.0.0.1", 0)
        await server.start()
        return rt, server

    def run() -> None:
        asyncio.set_event_loop(loop)
        ready.append(loop.run_until_complete(up()))
        loop.run_forever()

    thread = threading.Thread(target=run, name="api-under-test", daemon=True)
    thread.start()
    while not ready:
        assert thread.is_alive()
        threading.Event().wait(0.02)
    rt, server = ready[0]  # type: ignore[misc]
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        async def down() -> None:
            await server.stop()
            await rt.close()

        asyncio.run_coroutine_threadsafe(down(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def walk(op: schemathesis.APIOperation, api_url: str, seen: dict[str, set[int]]) -> None:
    """EXAMPLES generated requests for one operation, each checked: no 5xx, errors in the JSON error shape."""

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=op.as_strategy())
    def check(case: schemathesis.Case) -> None:
        response = case.call(base_url=api_url, headers=AUTH, timeout=10)
        seen.setdefault(op.label, set()).add(response.status_code)
        assert response.status_code < 500, (op.label, case.body, case.query, response.text)
        if response.status_code >= 400:
            assert response.json()["status"] == "error"

    check()


def test_generated_requests_never_get_a_server_error(api_url: str) -> None:
    schema = schemathesis.openapi.from_url(f"{api_url}/openapi.json")
    seen: dict[str, set[int]] = {}
    for op_result in schema.get_all_operations():
        walk(op_result.ok(), api_url, seen)
    assert len(seen) >= 15
    assert any(200 <= s < 300 for codes in seen.values() for s in codes)  # not only refusals
