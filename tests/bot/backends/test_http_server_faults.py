"""Inference servers fail the way cameras do: two local servers started together each run their own stream manager
(no STREAM_MANAGER_PORT), pipelines land on both; a killed server's pipelines run again on the other and the move is
one event, one webhook and one health alert; a server whose stream manager stopped takes no pipeline and hands its
own over. The stream manager's "is it mine that listens" check runs on plain processes."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import socket
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.backends.http import stream_manager
from bot.backends.http.backend import HttpBackend
from bot.config import load_settings
from bot.monitoring.alerts import Alert
from bot.pipelines.manager import PipelineManager
from bot.pipelines.request import StartRequest
from bot.runtime import Runtime
from tests.fakes.waits import patience
from tests.fixtures.common import free_port
from tests.fixtures.hooks import HookServer, events_in
from tests.fixtures.inference import make_video, start_servers


async def _until(predicate: Any, timeout: float = 30.0, step: float = 0.2) -> None:
    deadline = time.monotonic() + patience(timeout)
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(step)


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _listed(url: str) -> set[str]:
    """The pipeline ids a server's /inference_pipelines/list shows (its stream manager's)."""
    with urllib.request.urlopen(f"{url}/inference_pipelines/list", timeout=10) as resp:
        return {str(p) for p in json.loads(resp.read()).get("pipelines") or []}


class Hook(HookServer):
    """A webhook receiver on 127.0.0.1 keeping every event it gets."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.events += events_in(json.loads(await request.read()))
        return web.Response(text="ok")


@pytest.fixture
async def hook() -> AsyncIterator[Hook]:
    rx = await Hook().start()
    yield rx
    await rx.stop()


@pytest.mark.slow
async def test_two_servers_started_together_run_their_own_pipelines_and_a_killed_one_is_said_once(
    base_env, workspace_dir: Path, tmp_path: Path, hook: Hook
) -> None:
    servers = await asyncio.to_thread(start_servers, tmp_path / "servers", 2, patience(240), False)
    alerts: list[Alert] = []

    async def alert_sink(alert: Alert, channel: str | None) -> None:  # where the cameras' alerts go
        alerts.append(alert)

    env = {**base_env, "VISION_AGENT_BACKEND": "http", "INFERENCE_SERVER_URL": ",".join(s.url for s in servers),
           "VISION_AGENT_WEBHOOK_URL": hook.url}
    rt = Runtime(load_settings(env), background=True)  # the monitor's health ticks run on its scheduler
    video = make_video(tmp_path / "long.mp4", size=(320, 240), frames=1500)  # minutes at 10 fps
    try:
        ports = [s.stream_port() for s in servers]
        assert len(set(ports)) == 2 and 7070 not in ports  # each picked its own, and said which
        assert [s.stream_manager_pid() for s in servers]  # ... and its own child listens there
        await rt.start()
        rt.router.add_sink(alert_sink)
        pids = {}
        for name in ("door", "gate"):
            handle = await rt.pipelines.start(StartRequest(video, name, model_id="builtin/faces", max_fps=10))
            pids[name] = handle.pipeline_id
        backend = rt.pipelines.backends.of(pids["door"])
        where = {name: backend.server_of(pid) for name, pid in pids.items()}
        assert sorted(where.values()) == sorted(s.url for s in servers)  # one on each
        lists = [await asyncio.to_thread(_listed, s.url) for s in servers]
        assert all(len(ids) == 1 for ids in lists) and not lists[0] & lists[1]  # two managers, not one shared
        await _until(lambda: all(rt.pipelines.resolve(pid).frames > 0 for pid in pids.values()), 120)

        victim = next(s for s in servers if s.url == where["gate"])
        orphan = victim.stream_manager_pid()
        os.kill(victim.proc.pid, signal.SIGKILL)  # the server process alone, as a crash: its manager goes with it
        killed = time.monotonic()
        await _until(lambda: backend.server_of(pids["gate"]) not in (None, victim.url), 60)
        moved_in = time.monotonic() - killed
        frames = rt.pipelines.resolve(pids["gate"]).frames
        await _until(lambda: rt.pipelines.resolve(pids["gate"]).frames > frames, 90)  # it runs on the other
        await _until(lambda: any(a.rule == "server_failover" for a in alerts), 60, 0.5)  # the next health tick
        print(f"moved {moved_in:.1f} s after the kill, said {time.monotonic() - killed:.1f} s after it")
        for _ in range(2):  # later checks say nothing more
            await rt.monitor.check_health()
        await _until(lambda: any(e.get("rule") == "server_failover" for e in hook.events), 30)
        await _until(lambda: not _alive(orphan), 30)  # no stream manager (and its pipelines) left running
        assert rt.webhooks is not None and await rt.webhooks.drain(patience(30))
    finally:
        await rt.close()
        for s in servers:
            s.stop()
    said = [a for a in alerts if a.rule == "server_failover"]
    assert [(a.camera, a.pipeline_id) for a in said] == [("gate", pids["gate"])]
    assert f"(:{victim.port} stopped answering)" in said[0].text and said[0].text.startswith("pipeline gate restarted on")
    logged = [e for e in rt.events.query(limit=1000) if e.get("rule") == "server_failover"]
    assert [(e["camera"], e["event_type"]) for e in logged] == [("gate", "health")]
    hooked = [e for e in hook.events if e.get("rule") == "server_failover"]
    assert [e["id"] for e in hooked] == [logged[0]["id"]] and hooked[0]["text"] == said[0].text


@pytest.mark.slow
async def test_a_server_whose_stream_manager_stopped_takes_no_pipeline_and_hands_its_own_over(
    base_env, workspace_dir: Path, tmp_path: Path
) -> None:
    servers = await asyncio.to_thread(start_servers, tmp_path / "servers", 2, patience(240), False)
    settings = load_settings({**base_env, "VISION_AGENT_BACKEND": "http",
                              "INFERENCE_SERVER_URL": ",".join(s.url for s in servers)})
    backend = HttpBackend(settings)
    mgr = PipelineManager(lambda: backend, workspace_dir / "active_state.json", settings)
    video = make_video(tmp_path / "long.mp4", size=(320, 240), frames=1500)
    try:
        a = await mgr.start(StartRequest(video, "a", model_id="builtin/faces", max_fps=10))
        b = await mgr.start(StartRequest(video, "b", model_id="builtin/faces", max_fps=10))
        sick = next(s for s in servers if s.url == backend.server_of(a.pipeline_id))
        well = next(s for s in servers if s is not sick)
        assert backend.server_of(b.pipeline_id) == well.url
        await _until(lambda: mgr.resolve(a.pipeline_id).frames > 0, 120)

        manager = sick.stream_manager_pid()
        import psutil

        orphans = [p.pid for p in psutil.Process(manager).children(recursive=True)]  # its pipeline processes
        assert orphans
        os.kill(manager, signal.SIGKILL)  # its HTTP side still answers
        await _until(lambda: backend.server_of(a.pipeline_id) == well.url, 60)
        frames = mgr.resolve(a.pipeline_id).frames
        await _until(lambda: mgr.resolve(a.pipeline_id).frames > frames, 90)
        moved = {h.name: h for h in await mgr.list()}["a"]
        assert f"(:{sick.port} its stream manager stopped)" in (moved.failover or ""), moved.failover
        await _until(lambda: not any(_alive(pid) for pid in orphans), 30)  # the server ended what it left running
        assert await asyncio.to_thread(backend.servers.load, sick.url) is None  # not placed on ...
        c = await mgr.start(StartRequest(video, "c", model_id="builtin/faces", max_fps=10))
        assert backend.server_of(c.pipeline_id) == well.url  # ... though it has the fewest pipelines
        with urllib.request.urlopen(f"{sick.url}/info", timeout=10) as resp:
            assert resp.status == 200  # the HTTP server itself is up: only its pipelines are gone
        await _until(lambda: "exited with code" in sick.output(), 30)  # and it said so, in one line
        assert "restart `vision-agent inference-server`" in sick.output()
    finally:
        await mgr.close()
        for s in servers:
            s.stop()


# The check that the manager listening on the port is this server's own child -------------------------------------

def _listen(port: int, hold: float) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        time.sleep(hold)


def _taken_then_listen_elsewhere(port: int, other: int, hold: float) -> None:
    """A manager that finds its port taken and (wrongly) listens somewhere else."""
    _listen(other, hold)


def _process(target: Any, *args: Any) -> Any:
    proc = multiprocessing.get_context("fork").Process(target=target, args=args)
    proc.start()
    return proc


def test_only_the_managers_own_listening_counts() -> None:
    """Another process on the port (the second server's manager finding the first's on 7070) is not ready: the
    child that cannot bind it exits, or listens elsewhere; only the child's own listening socket on it counts."""
    port, other = free_port(), free_port()
    taker = _process(_listen, port, 60)  # another server's manager
    children = [taker]
    try:
        assert stream_manager.listening(taker, port, patience(30)) == ""  # its own: ready
        dead = _process(_listen, port, 60)
        children.append(dead)
        assert "exited with code 1" in stream_manager.listening(dead, port, patience(30))
        elsewhere = _process(_taken_then_listen_elsewhere, port, other, 60)
        children.append(elsewhere)  # the port answers (the taker's), but not by this child: not ready
        assert stream_manager.listening(elsewhere, port, 2) == "it did not listen within 2 s"
    finally:
        for child in children:
            child.terminate()
            child.join()


def test_a_stream_manager_port_that_is_no_port_is_one_line(monkeypatch) -> None:
    monkeypatch.setenv("STREAM_MANAGER_PORT", "seventy")
    with pytest.raises(stream_manager.StreamManagerError, match="STREAM_MANAGER_PORT='seventy' is not a port"):
        stream_manager.configured_port()
    monkeypatch.setenv("STREAM_MANAGER_PORT", "7071")
    assert stream_manager.configured_port() == 7071
    monkeypatch.delenv("STREAM_MANAGER_PORT")
    assert stream_manager.configured_port() is None


# A stream manager that dies while it answers ----------------------------------------------------------------------

class _Server:
    """A server whose pipeline API answers consume with a reply cut short (500, `broken`) and its list with `listed`."""

    def __init__(self, broken: str, listed: tuple[int, dict]) -> None:
        import http.server
        import threading

        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path.startswith("/inference_pipelines/list"):
                    status, body = outer.listed
                else:
                    status, body = 500, {"message": "Could not receive full message.", "error_type": broken}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                pass

        self.listed = listed
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("broken", ["MalformedHeaderError", "TransmissionChannelClosed", "CommunicationProtocolError"])
def test_a_reply_cut_short_by_a_manager_that_died_moves_the_pipeline_and_one_that_still_runs_is_asked_again(
    base_env, broken: str
) -> None:
    """Killed while it answers a consume call, the stream manager leaves a reply cut short (not ConnectivityError):
    the pipeline ended as `error` on that server instead of moving (CI, 2026-11-28). The server is asked whether its
    manager runs: no, it moves like a dead server's; yes, the next poll asks again."""
    from bot.backends.http.failover import StreamManagerDown, unreachable

    down = _Server(broken, (500, {"message": "Could not establish communication", "error_type": "ConnectivityError"}))
    up = _Server(broken, (200, {"pipelines": ["p1"]}))
    try:
        backend = HttpBackend(load_settings({**base_env, "INFERENCE_SERVER_URL": f"{down.url},{up.url}"}))
        with pytest.raises(StreamManagerDown) as caught:
            backend.consume(down.url, "p1")
        assert unreachable(caught.value)  # what failover.move takes as "start it on another server"
        assert backend.consume(up.url, "p1") == {}  # no results this time, no error: the poller asks again
    finally:
        down.close()
        up.close()
