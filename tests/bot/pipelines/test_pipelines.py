"""PipelineManager: naming, resolution, persistence, restore, listeners — over an in-memory backend."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from bot.backends.base import BackendError
from bot.pipelines.manager import PipelineManager, PipelineNotFound
from bot.pipelines.request import StartRequest
from bot.pipelines.restore import restore_all
from tests.tools.fake_backend import FakeBackend, FakeServer, FakeServerBackend, result

SECRET_URL = "rtsp://admin:hunter2@10.0.0.5:554/stream1"


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "ws" / "active_state.json"


@pytest.fixture
def manager(backend, state, settings) -> PipelineManager:
    return PipelineManager(lambda: backend, state, settings)


def _saved(state: Path) -> list[dict]:
    return json.loads(state.read_text())["pipelines"]


async def test_start_names_ids_and_wraps_a_model_into_a_detection_workflow(manager, backend, state):
    h = await manager.start(StartRequest("rtsp://10.0.0.5/s1", "dock", model_id="builtin/faces", max_fps=5))
    assert h.name == "dock" and h.status == "running"
    assert h.pipeline_id.startswith("pipe_") and len(h.pipeline_id) == 11
    call = backend.calls[-1][1]
    assert call["workflow_spec"]["steps"][0]["type"] == "vision_agent/haar_face_detector@v1"
    assert call["max_fps"] == 5
    assert [p["name"] for p in _saved(state)] == ["dock"]


async def test_names_are_unique_among_live_pipelines(manager):
    await manager.start(StartRequest("0", "door", model_id="builtin/people"))
    with pytest.raises(BackendError, match="already running"):
        await manager.start(StartRequest("1", "Door", model_id="builtin/people"))
    await manager.stop("door")
    again = await manager.start(StartRequest("1", "door", model_id="builtin/people"))
    assert manager.resolve("door").pipeline_id == again.pipeline_id  # the live one wins over the stopped one


async def test_resolve_by_id_name_and_case_and_unknown_lists_known(manager):
    h = await manager.start(StartRequest("0", "Front Door", model_id="builtin/people"))
    assert manager.resolve(h.pipeline_id) == manager.resolve("Front Door") == manager.resolve("front door")
    with pytest.raises(PipelineNotFound) as err:
        manager.resolve("garage")
    assert "garage" in str(err.value) and f"Front Door ({h.pipeline_id}, running)" in str(err.value)
    assert not str(err.value).startswith("'")  # readable, not KeyError's repr


async def test_invalid_inline_spec_is_refused_before_deploy(manager, backend):
    with pytest.raises(BackendError, match="no steps"):
        await manager.start(StartRequest("0", "x", workflow_spec={"version": "1.0", "inputs": [], "steps": [], "outputs": []}))
    custom = {"version": "1.0", "inputs": [], "steps": [{"type": "a"}], "outputs": [],
              "dynamic_blocks_definitions": [{"manifest": {"type": "Evil"}}]}
    with pytest.raises(BackendError, match="custom Python"):
        await manager.start(StartRequest("0", "x", workflow_spec=custom))
    assert not [c for c in backend.calls if c[0] == "start_pipeline"]
    assert manager.snapshot() == []


async def test_pause_resume_stop_update_status_and_state_file(manager, state):
    h = await manager.start(StartRequest("0", "door", model_id="builtin/people"))
    assert (await manager.pause("door")).status == "paused"
    assert _saved(state)[0]["paused"] is True
    assert (await manager.resume(h.pipeline_id)).status == "running"
    assert _saved(state)[0]["paused"] is False
    assert (await manager.stop("door")).status == "stopped"
    assert _saved(state) == []  # stopped by the user: not restarted after a restart
    assert [x.status for x in await manager.list()] == ["stopped"]
    with pytest.raises(BackendError, match="stopped"):
        await manager.resume("door")


async def test_results_latest_and_listeners_see_every_result(manager, backend):
    seen = []
    manager.add_result_listener(lambda h, r: seen.append((h.name, r.frame_id, h.frames)))
    manager.add_result_listener(lambda h, r: 1 / 0)  # a broken listener must not stop the others
    h = await manager.start(StartRequest("0", "door", model_id="builtin/people"))
    for i in range(3):
        backend.emit(h.pipeline_id, result({"person": i}, frame_id=i))
    assert seen == [("door", 0, 1), ("door", 1, 2), ("door", 2, 3)]
    assert [r.frame_id for r in await manager.results("door", 2)] == [0, 1]
    assert manager.latest("door").frame_id == 2
    assert manager.snapshot()[0].frames == 3


async def test_credentials_never_reach_handles_state_listing_or_logs(manager, state, caplog):
    with caplog.at_level(logging.DEBUG):
        h = await manager.start(StartRequest(SECRET_URL, "cam", model_id="builtin/people"))
    assert "hunter2" not in h.video_reference and "admin:***@" in h.video_reference
    assert all("hunter2" not in x.video_reference for x in await manager.list())
    assert "hunter2" not in caplog.text
    assert _saved(state)[0]["video_reference"] == SECRET_URL  # needed to reconnect after a restart...
    assert state.stat().st_mode & 0o077 == 0  # ...so the file is owner-only


async def test_state_is_written_atomically_and_restored_after_restart(backend, state, settings, tmp_path):
    video = tmp_path / "clip.mp4"
    video.write_bytes(b"\x00")
    first = PipelineManager(lambda: backend, state, settings)
    a = await first.start(StartRequest(str(video), "clip", model_id="builtin/faces"))
    b = await first.start(StartRequest("0", "webcam", model_id="builtin/people"))
    await first.pause("webcam")
    await first.close()
    assert backend.closed and len(_saved(state)) == 2  # shutdown is not a user stop
    assert not list(state.parent.glob("*.tmp"))

    video.unlink()  # the file source is gone by the next start-up
    fresh = FakeBackend()
    second = PipelineManager(lambda: fresh, state, settings)
    restored = {h.name: h for h in await restore_all(second)}
    assert restored["webcam"].status == "paused" and restored["webcam"].pipeline_id == b.pipeline_id
    assert restored["clip"].status == "error" and "no such file" in restored["clip"].error
    assert restored["clip"].pipeline_id == a.pipeline_id
    assert {h.name for h in await second.list()} == {"clip", "webcam"}  # the failed one is kept, visible
    started = [c[1]["pipeline_id"] for c in fresh.calls if c[0] == "start_pipeline"]
    stopped = [c[1]["pipeline_id"] for c in fresh.calls if c[0] == "stopped"]
    assert a.pipeline_id in started and a.pipeline_id in stopped  # nothing half-started is left behind


async def test_corrupt_state_file_restores_nothing(backend, state, settings):
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text("{not json")
    assert await restore_all(PipelineManager(lambda: backend, state, settings)) == []


async def test_stop_all_and_backend_created_lazily(state, settings):
    made = []

    def factory():
        made.append(FakeBackend())
        return made[-1]

    mgr = PipelineManager(factory, state, settings)
    assert made == [] and mgr.snapshot() == []
    await mgr.start(StartRequest("0", "a", model_id="builtin/people"))
    await mgr.start(StartRequest("1", "b", model_id="builtin/people"))
    assert len(made) == 1
    assert {h.status for h in await mgr.stop_all()} == {"stopped"}
    assert _saved(state) == []


async def test_a_source_that_fails_at_once_is_listed_as_error_but_not_persisted(manager, state, tmp_path):
    broken = tmp_path / "clip.broken"
    broken.write_bytes(b"\x00")
    h = await manager.start(StartRequest(str(broken), "bad", model_id="builtin/faces"))
    assert h.status == "error" and "cannot read frames" in h.error
    assert [x.name for x in await manager.list()] == ["bad"]
    assert _saved(state) == []  # reported now; not retried at every restart
    again = await manager.start(StartRequest("0", "bad", model_id="builtin/faces"))  # the name is free again
    assert again.status == "running" and (await manager.status("bad")).pipeline_id == again.pipeline_id


async def test_after_a_crash_a_pipeline_the_server_still_runs_is_adopted_not_started_twice(state, settings):
    server = FakeServer()
    first = FakeServerBackend(server)
    crashed = PipelineManager(lambda: first, state, settings)
    door = await crashed.start(StartRequest("rtsp://10.0.0.5/door", "door", model_id="builtin/faces"))
    yard = await crashed.start(StartRequest("rtsp://10.0.0.5/yard", "yard", model_id="builtin/people"))
    await crashed.pause("yard")
    assert [p["server_id"] for p in _saved(state)] == ["srv-1", "srv-2"]
    # the process dies here: no close(), both pipelines keep running on the server

    second = FakeServerBackend(server)
    restarted = PipelineManager(lambda: second, state, settings)
    seen = []
    restarted.add_result_listener(lambda h, r: seen.append((h.name, r.frame_id)))
    restored = {h.name: h for h in await restore_all(restarted)}
    assert (restored["door"].pipeline_id, restored["door"].status) == (door.pipeline_id, "running")
    assert (restored["yard"].pipeline_id, restored["yard"].status) == (yard.pipeline_id, "paused")
    assert not [c for c in second.calls if c[0] == "start_pipeline"] and server.started == 2
    adopted = {c[1]["server_id"]: c[1] for c in second.calls if c[0] == "adopt_pipeline"}
    assert adopted["srv-1"]["workflow_spec"]["steps"][0]["type"] == "vision_agent/haar_face_detector@v1"
    second.emit(door.pipeline_id, result({"face": 1}, frame_id=7))
    assert seen == [("door", 7)]  # results of the adopted pipeline reach the listeners
    assert [p["server_id"] for p in _saved(state)] == ["srv-1", "srv-2"]


async def test_a_pipeline_the_server_lost_is_started_fresh_with_its_new_server_id(state, settings):
    server = FakeServer()
    first = FakeServerBackend(server)
    graceful = PipelineManager(lambda: first, state, settings)
    door = await graceful.start(StartRequest("rtsp://10.0.0.5/door", "door", model_id="builtin/faces"))
    await graceful.close()  # ends it on the server; it stays in active_state.json
    assert server.running == set() and _saved(state)[0]["server_id"] == "srv-1"

    second = FakeServerBackend(server)
    restored = await restore_all(PipelineManager(lambda: second, state, settings))
    assert [(h.pipeline_id, h.status) for h in restored] == [(door.pipeline_id, "running")]
    assert [c[0] for c in second.calls] == ["adopt_pipeline", "start_pipeline"]
    assert _saved(state)[0]["server_id"] == "srv-2" and server.running == {"srv-2"}


async def test_manager_close_then_backend_close_again_is_harmless(manager, backend):
    await manager.start(StartRequest("0", "door", model_id="builtin/people"))
    await manager.close()
    await backend.close()  # Runtime.close closes the backend the manager already closed
    await manager.close()
    assert backend.closed and [c[0] for c in backend.calls].count("stopped") == 1
