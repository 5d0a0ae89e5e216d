"""The composition root: pieces built in order, typed services wired, the backend lazy."""

from __future__ import annotations

import pytest

from bot.backends.provider import BackendProvider
from bot.config import Settings, load_settings
from bot.runtime import Runtime
from bot.services import Services, ServiceUnavailable, need


async def test_start_wires_services_without_building_the_backend(settings: Settings) -> None:
    async with Runtime(settings, background=False) as rt:
        assert isinstance(rt.services, Services)
        assert rt.services.workspace is rt.workspace and rt.workspace.exists()
        assert rt.services.pipelines is rt.pipelines and rt.services.router is rt.router
        assert rt.services.memory is rt.memory and rt.services.monitor is rt.monitor
        assert rt.services.backend is rt.backend and not rt.backend.built  # no `inference` import yet
        assert rt.pipelines.provider is rt.backend  # one lazy backend, shared by the manager and the tools
        assert rt.agent is not None and rt.tools.get("remember") is not None
        assert not rt.llm_ready  # no API key in this environment
        assert rt.router.default_channel is None
        assert rt.scheduler is None  # background=False: no heartbeat for a one-shot command


async def test_llm_ready_with_a_key(base_env: dict[str, str]) -> None:
    s = load_settings({**base_env, "ANTHROPIC_API_KEY": "sk-ant-test", "VISION_AGENT_ALERT_CHANNEL": "#ops"})
    async with Runtime(s, background=False) as rt:
        assert rt.llm_ready
        assert rt.router.channel_for("cam1") == "#ops"


def test_backend_provider_builds_once_on_first_use() -> None:
    calls = []

    class _Backend:
        name = "fake"

    provider = BackendProvider(lambda: calls.append(1) or _Backend())
    assert not provider.built and calls == []
    first = provider.get()
    assert provider.get() is first and calls == [1] and provider.built


def test_need_names_the_missing_service() -> None:
    with pytest.raises(ServiceUnavailable, match="pipelines is not available in this process"):
        need(Services().pipelines, "pipelines")


async def test_close_is_idempotent_and_closes_a_built_backend(settings: Settings) -> None:
    closed = []

    class _Backend:
        name = "fake"

        async def close(self) -> None:
            closed.append(1)

    rt = await Runtime(settings, background=False).start()
    rt.backend = BackendProvider(_Backend)
    assert rt.backend.get().name == "fake"  # first use builds it
    await rt.close()
    await rt.close()
    assert closed == [1]
