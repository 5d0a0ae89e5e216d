"""A hosted pipeline whose inference server stops answering starts again on another one, its counts carried on."""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from bot.backends.counting import count_side

log = logging.getLogger(__name__)
GIVE_UP = 120.0  # seconds without any server to run it on, after which the pipeline ends as `error`
RETRY = 2.0  # seconds between tries while no other server takes it
UNREACHABLE = frozenset({"HTTPServerConnectionError", "ConnectionError", "ConnectTimeout", "ServerSilent",
                         "StreamManagerDown"})
CONSUME_TIMEOUT = 10.0  # seconds a server has to hand over results (it has them at once); longer: it is not answering


class ServerSilent(Exception):
    """A server took the connection but did not answer in time (hung, stopped, or its network half gone)."""


class StreamManagerDown(Exception):
    """A server answers, but its stream manager (the process that runs its pipelines) does not: it runs none."""



class Movable(Protocol):
    """What `move` needs of a HostedPipeline."""

    backend: Any  # the HttpBackend: .servers (ServerPool), .launch_on(url, launch)
    name: str
    url: str
    launch: dict | None

    def stopping(self) -> bool: ...

    def pause_for(self, seconds: float) -> None: ...

    def moved_to(self, url: str, server_id: str, old: str, why: str = "stopped answering") -> None: ...


def unreachable(exc: BaseException) -> bool:
    """Whether a failed call means the server did not answer at all (not: it answered with an error)."""
    return bool({c.__name__ for c in type(exc).__mro__} & UNREACHABLE)


def counts_of(values: dict[str, Any]) -> dict[str, float]:
    """The line counter totals among a result's values, by output name (what a restarted counter adds onto)."""
    return {k: float(v) for k, v in values.items() if count_side(k) and isinstance(v, int | float)}


def carried(values: dict[str, Any], base: dict[str, float]) -> dict[str, Any]:
    """`values` with the totals counted before the restart added: the counts carry on instead of starting at 0."""
    if not base:
        return values
    out = dict(values)
    for key, before in base.items():
        if isinstance(out.get(key), int | float):
            out[key] = type(out[key])(out[key] + before)
    return out


def move(pipe: Movable, exc: BaseException) -> bool:
    """Start `pipe` on another server after its own stopped answering; True once it can be polled again (there, or
    on its own server if that answers after all), False to let it end (one server, or no other took it in time)."""
    pool = pipe.backend.servers
    if not pool.several or not unreachable(exc) or pipe.launch is None:
        return False
    old, deadline = pipe.url, time.monotonic() + GIVE_UP
    while not pipe.stopping() and time.monotonic() < deadline:
        if pool.load(old) is not None:  # a blip: it answers again
            return True
        try:
            with pool.placing(exclude=[old]) as url:
                server_id = pipe.backend.launch_on(url, pipe.launch)
        except Exception as err:  # noqa: BLE001 - no other server yet: try again
            log.warning("pipeline %s: %s lost, no other server took it yet (%s)", pipe.name, pool.label(old), err)
            pipe.pause_for(RETRY)
            continue
        down = isinstance(exc, StreamManagerDown) or pool.manager_down(old)  # its HTTP side may still answer
        why = "its stream manager stopped" if down else "stopped answering"
        pipe.moved_to(url, server_id, old, why)
        log.warning("pipeline %s restarted on %s (%s %s)", pipe.name, pool.label(url), pool.label(old), why)
        return True
    return False
