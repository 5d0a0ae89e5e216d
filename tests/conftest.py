"""Shared test set-up: no proxies, offline model hubs, fixtures from tests/fixtures/*."""

from __future__ import annotations

import os

import pytest

for _var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
    os.environ.pop(_var, None)
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

# inference (and roboflow_workflows under it) freeze their engine settings at first import, process-wide. Every
# product entry point sets the safe ones first (bot/backends/environment.py); so does every test process, whatever
# test happens to import inference first in it (pytest-xdist workers each run their own share of the files).
from bot.backends.environment import ensure_inference_env  # noqa: E402

ensure_inference_env(None)

pytest_plugins = [
    "tests.fixtures.common",
    "tests.fixtures.llm",
    "tests.fixtures.inference",
    "tests.fixtures.media",
    "tests.fixtures.slack",
    "tests.fixtures.attacks",
]


@pytest.fixture(autouse=True)
def _cli_quiet_libraries_stay_in_their_test():
    """The CLI's `_setup_logging(0)` sets QUIET_LIBRARIES in os.environ for its process. A test that runs `main()`
    in-process must not hand them on to a later test's subprocesses (an FFmpeg or inference log line it expects)."""
    from bot.cli.main import QUIET_LIBRARIES

    before = {name: os.environ.get(name) for name in QUIET_LIBRARIES}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


_seen_threads: set[int] = set()


def _live_non_daemon() -> list:
    import threading

    return [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive() and not t.daemon]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Name the test that left a non-daemon thread running (after its fixtures are torn down and a short grace),
    so a leak at the end of a CI run points at its test instead of only at a thread name."""
    import sys
    import time

    yield
    deadline = time.monotonic() + 2.0
    fresh = [t for t in _live_non_daemon() if t.ident not in _seen_threads]
    for t in fresh:
        t.join(max(0.0, deadline - time.monotonic()))
    still = [t for t in fresh if t.is_alive()]
    _seen_threads.update(t.ident for t in still if t.ident is not None)
    if still:
        sys.stderr.write(f"\n{item.nodeid} left threads running: {', '.join(sorted(t.name for t in still))}\n")


def pytest_sessionfinish(session, exitstatus):
    """The controller of a pytest-xdist run ends the inference server its workers shared (tests/fixtures/inference.py),
    once every worker is done with it (a worker's session ends before the others').
    Leaked non-daemon threads (a pipeline a failed test never stopped) would make the interpreter hang at exit
    and CI run into its time limit. A thread still finishing its last frame gets a grace period; what is alive after
    it is named, counted as a failure, and the run exits without waiting."""
    import sys
    import time

    from tests.fixtures.inference import stop_shared_server

    if not hasattr(session.config, "workerinput"):
        stop_shared_server(session.config._tmp_path_factory.getbasetemp())

    deadline = time.monotonic() + 20.0
    for t in _live_non_daemon():
        t.join(max(0.0, deadline - time.monotonic()))
    leaked = _live_non_daemon()
    if not leaked:
        return
    names = ", ".join(sorted(t.name for t in leaked))
    sys.stderr.write(f"\nleaked non-daemon threads at the end of the session: {names}\n")
    sys.stderr.flush()
    if exitstatus == 0:
        session.exitstatus = 1
    session.config.add_cleanup(lambda: os._exit(int(session.exitstatus)))
