"""Several inference servers: pipelines spread by load; a server killed -9 loses none (they restart on the others,
counts carried on, status says where); a server that comes back takes new pipelines again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path

import pytest

from bot.backends.http.backend import HttpBackend
from bot.backends.http.pipeline import HostedPipeline
from bot.commands.pipelines import bullet
from bot.config import load_settings
from bot.pipelines.manager import PipelineManager
from bot.pipelines.request import StartRequest
from bot.pipelines.restore import restore_all
from bot.pipelines.status import status_line
from tests.fakes.waits import patience
from tests.fixtures.inference import LocalServer, make_video, start_servers


async def _until(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + patience(timeout)
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.2)


def _saved(state: Path) -> dict[str, dict]:
    return {p["name"]: p for p in json.loads(state.read_text())["pipelines"]}


@pytest.mark.slow
async def test_pipelines_spread_survive_a_killed_server_and_use_it_again_when_back(base_env, workspace_dir, tmp_path):
    servers = await asyncio.to_thread(start_servers, tmp_path / "servers", 3, patience(180))
    urls = [s.url for s in servers]
    settings = load_settings({**base_env, "VISION_AGENT_BACKEND": "http", "INFERENCE_SERVER_URL": ",".join(urls)})
    backend = HttpBackend(settings)
    state = workspace_dir / "active_state.json"
    mgr = PipelineManager(lambda: backend, state, settings)
    mgrs = [mgr]
    video = make_video(tmp_path / "long.mp4", size=(320, 240), frames=1500)  # minutes at 10 fps: outlives the test
    revived: LocalServer | None = None
    try:
        pids = {}
        for name in ("a", "b", "c"):
            handle = await mgr.start(StartRequest(video, name, model_id="builtin/faces", max_fps=10))
            pids[name] = handle.pipeline_id
        where = {name: backend.server_of(pid) for name, pid in pids.items()}
        assert sorted(where.values()) == sorted(urls)  # one each: placed by load
        await _until(lambda: all(mgr.resolve(pid).frames > 0 for pid in pids.values()), 90)
        lines = [status_line(h) for h in await mgr.list()]
        assert {line.split(": running on ")[1].split(",")[0] for line in lines} == {f":{s.port}" for s in servers}

        victim = next(s for s in servers if s.url == where["b"])
        victim.kill()
        killed_at = time.monotonic()
        await _until(lambda: backend.server_of(pids["b"]) not in (None, victim.url), 30)
        moved_in = time.monotonic() - killed_at
        frames = mgr.resolve(pids["b"]).frames
        await _until(lambda: mgr.resolve(pids["b"]).frames > frames, 60)  # results flow from its new server
        handles = {h.name: h for h in await mgr.list()}
        assert {n: h.status for n, h in handles.items()} == {"a": "running", "b": "running", "c": "running"}
        new_home = backend.server_of(pids["b"])
        assert new_home in urls and new_home != victim.url
        line = bullet(handles["b"], mgr)  # as `/vision list` and `/vision status` show it
        port = new_home.rsplit(":", 1)[1]
        assert f"running on :{port}," in line and f"restarted on :{port} at " in line, line
        assert f"(:{victim.port} stopped answering)" in line, line
        await _until(lambda: _saved(state)["b"]["server"] == new_home)  # saved where it runs now
        saved = _saved(state)
        assert saved["b"]["server_id"] == backend.server_id(pids["b"])
        assert {saved[n]["server"] for n in ("a", "c")} == {where["a"], where["c"]}  # the others stayed put
        print(f"moved {moved_in:.1f} s after the kill")

        # the bot restarting now adopts each pipeline on the server the state file names: no second copy anywhere
        loads = [backend.servers.load(u) for u in urls]
        again = HttpBackend(settings)
        mgrs.append(PipelineManager(lambda: again, state, settings))
        restored = await restore_all(mgrs[-1])
        assert sorted((h.name, h.status) for h in restored) == [("a", "running"), ("b", "running"), ("c", "running")]
        assert {n: again.server_of(pid) for n, pid in pids.items()} == {**where, "b": new_home}
        assert again.server_id(pids["b"]) == backend.server_id(pids["b"])
        assert [backend.servers.load(u) for u in urls] == loads

        revived = await asyncio.to_thread(lambda: LocalServer(victim.run_dir, victim.port).wait_ready(patience(120)))
        handle = await mgr.start(StartRequest(video, "d", model_id="builtin/faces", max_fps=10))
        assert backend.server_of(handle.pipeline_id) == revived.url  # the least loaded again
    finally:
        for each in mgrs:
            await each.close()
        for server in [*servers, *([revived] if revived else [])]:
            await asyncio.to_thread(server.stop)


@contextlib.asynccontextmanager
async def _one_pipeline(base_env, workspace_dir, tmp_path, servers: int, **overrides):
    """`servers` local inference servers and one faces pipeline on a long clip, delivering; all ended afterwards.
    Yields (servers, backend, manager, pipeline id)."""
    started = await asyncio.to_thread(start_servers, tmp_path / "servers", servers, patience(180))
    settings = load_settings({**base_env, "VISION_AGENT_BACKEND": "http",
                              "INFERENCE_SERVER_URL": ",".join(s.url for s in started)}, **overrides)
    backend = HttpBackend(settings)
    mgr = PipelineManager(lambda: backend, workspace_dir / "active_state.json", settings)
    video = make_video(tmp_path / "long.mp4", size=(320, 240), frames=1500)
    try:
        pid = (await mgr.start(StartRequest(video, "hall", model_id="builtin/faces", max_fps=10))).pipeline_id
        await _until(lambda: mgr.resolve(pid).frames > 0, 90)
        yield started, backend, mgr, pid
    finally:
        await mgr.close()
        for server in started:  # stop() wakes a frozen one first
            await asyncio.to_thread(server.stop)


@pytest.mark.slow
async def test_a_server_that_takes_connections_but_never_answers_loses_its_pipeline_to_another(
    base_env, workspace_dir, tmp_path
):
    async with _one_pipeline(base_env, workspace_dir, tmp_path, 2) as (servers, backend, mgr, pid):
        hung = next(s for s in servers if s.url == backend.server_of(pid))
        hung.freeze()  # hung, not dead: connecting works, the consume call never gets an answer
        await _until(lambda: backend.server_of(pid) not in (None, hung.url), 60)
        frames = mgr.resolve(pid).frames
        await _until(lambda: mgr.resolve(pid).frames > frames, 60)
        [handle] = await mgr.list()
        assert handle.status == "running"
        assert f"(:{hung.port} stopped answering)" in bullet(handle, mgr)


@pytest.mark.slow
async def test_stopping_a_pipeline_on_a_server_that_hung_returns(base_env, workspace_dir, tmp_path):
    """The SDK's terminate call has no timeout: asked of a hung server, it held the stop (and the bot's close) for
    good. Ours is bounded by the request timeout."""
    overrides = {"inference": {"request_timeout": 5}}
    async with _one_pipeline(base_env, workspace_dir, tmp_path, 1, **overrides) as ([server], _, mgr, pid):
        server.freeze()
        # Hung: pytest's timeout (pyproject) is what fails this if the stop never returns.
        handle = await asyncio.wait_for(mgr.stop(pid), patience(120))
        assert handle.status not in ("running", "starting")


def test_counts_carry_on_after_a_restart_elsewhere(base_env):
    """The line counter on the new server starts at 0: what was counted before is added, and the status says so."""
    settings = load_settings({**base_env, "INFERENCE_SERVER_URL": "http://127.0.0.1:9/,http://127.0.0.1:10"})
    backend = HttpBackend(settings)
    seen = []
    pipe = HostedPipeline(backend, "pipe_1", "door", "rtsp://cam/1", "faces", lambda h, r: seen.append((h, r)))
    pipe.place("http://127.0.0.1:9", {})
    pipe._record({"outputs": [{"line_counter_count_in": 3, "line_counter_count_out": 1}], "frames_metadata": [{}]})
    pipe.moved_to("http://127.0.0.1:10", "srv-2", "http://127.0.0.1:9")
    pipe._record({"outputs": [{"line_counter_count_in": 1, "line_counter_count_out": 0}], "frames_metadata": [{}]})
    assert seen[-1][1].values == {"line_counter_count_in": 4, "line_counter_count_out": 1}
    handle = pipe.handle()
    assert handle.server == ":10" and handle.frames == 2
    assert handle.failover is not None and handle.failover.startswith("restarted on :10 at ")
    assert handle.failover.endswith("(:9 stopped answering), counts carry on")


@pytest.mark.slow
async def test_counts_carried_after_a_move_are_saved_and_carry_on_when_the_bot_restarts(
    base_env, workspace_dir, tmp_path, inference_server
):
    settings = load_settings({**base_env, "VISION_AGENT_BACKEND": "http",
                              "INFERENCE_SERVER_URL": f"{inference_server},http://127.0.0.1:9"})
    backend = HttpBackend(settings)
    state = workspace_dir / "active_state.json"
    mgr = PipelineManager(lambda: backend, state, settings)
    video = make_video(tmp_path / "long.mp4", size=(320, 240), frames=1500)
    again: PipelineManager | None = None
    try:
        pid = (await mgr.start(StartRequest(video, "door", model_id="builtin/faces", max_fps=10))).pipeline_id
        # as failover.move leaves it (test_counts_carry_on_after_a_restart_elsewhere): 3 in / 1 out counted on a
        # server that went away; the next result saves that with it
        backend._pipelines[pid].carry_on({"line_counter_count_in": 3, "line_counter_count_out": 1})
        await _until(lambda: (_saved(state)["door"].get("carried") or {}).get("line_counter_count_in") == 3)

        fresh = HttpBackend(settings)  # the bot restarting: the server kept the pipeline running
        again = PipelineManager(lambda: fresh, state, settings)
        [restored] = await restore_all(again)
        assert restored.pipeline_id == pid and fresh.carried(pid) == {"line_counter_count_in": 3.0,
                                                                      "line_counter_count_out": 1.0}
        seen = []
        adopted = fresh._pipelines[pid]
        adopted._on_result = lambda h, r: seen.append(r.values)
        adopted._record({"outputs": [{"line_counter_count_in": 2, "line_counter_count_out": 0}], "frames_metadata": [{}]})
        assert {"line_counter_count_in": 5, "line_counter_count_out": 1}.items() <= seen[-1].items()
    finally:
        for each in (mgr, again):
            if each is not None:
                await each.close()


def test_one_server_is_not_named_in_status(base_env):
    backend = HttpBackend(load_settings({**base_env, "INFERENCE_SERVER_URL": "http://127.0.0.1:9"}))
    pipe = HostedPipeline(backend, "pipe_1", "door", "rtsp://cam/1", "faces", None)
    pipe.place("http://127.0.0.1:9", {})
    assert pipe.handle().server is None and " on " not in status_line(pipe.handle())
