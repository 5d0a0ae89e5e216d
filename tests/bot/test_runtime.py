"""The composition root: pieces built in order, services wired, the backend lazy, missing parts tolerated."""

from __future__ import annotations

import pytest

from bot.config import Settings, load_settings
from bot.runtime import Lazy, Runtime


async def test_start_wires_services_without_building_the_backend(settings: Settings) -> None:
    async with Runtime(settings, background=False) as rt:
        assert set(rt.services) == {"backend", "pipelines", "memory", "workspace", "router", "monitor"}
        assert rt.services["workspace"] is rt.workspace and rt.workspace.exists()
        assert rt.services["pipelines"] is rt.pipelines and rt.services["router"] is rt.router
        assert isinstance(rt.services["backend"], Lazy) and not rt.backend.lazy_built  # no `inference` import yet
        assert rt.agent is not None and rt.tools.get("remember") is not None
        assert not rt.llm_ready  # no API key in this environment
        assert rt.router.default_channel is None
        assert rt.scheduler is None  # background=False: no heartbeat for a one-shot command


async def test_llm_ready_with_a_key(base_env: dict[str, str]) -> None:
    s = load_settings({**base_env, "ANTHROPIC_API_KEY": "sk-ant-test", "VISION_AGENT_ALERT_CHANNEL": "#ops"})
    async with Runtime(s, background=False) as rt:
        assert rt.llm_ready
        assert rt.router.channel_for("cam1") == "#ops"


async def test_missing_module_of_ours_is_tolerated_but_third_party_is_not(settings: Settings) -> None:
    rt = Runtime(settings)

    def ours() -> None:
        raise ModuleNotFoundError("No module named 'bot.not_written_yet'", name="bot.not_written_yet")

    def theirs() -> None:
        raise ModuleNotFoundError("No module named 'torchvision'", name="torchvision")

    assert rt._optional("thing", ours) is None
    assert "thing is not available" in rt.missing["thing"]
    with pytest.raises(ModuleNotFoundError):
        rt._optional("other", theirs)


def test_lazy_builds_once_on_first_use() -> None:
    calls = []
    lazy = Lazy(lambda: calls.append(1) or "abc")
    assert not lazy.lazy_built and calls == []
    assert lazy.upper() == "ABC" and lazy.count("b") == 1 and calls == [1]
    assert lazy.lazy_built and lazy.lazy_object() == "abc"


async def test_close_is_idempotent_and_closes_a_built_backend(settings: Settings) -> None:
    closed = []

    class _Backend:
        name = "fake"

        async def close(self) -> None:
            closed.append(1)

    rt = await Runtime(settings, background=False).start()
    rt.backend = Lazy(_Backend)
    assert rt.backend.name == "fake"  # first use builds it
    await rt.close()
    await rt.close()
    assert closed == [1]
