"""Shared test set-up: no proxies, offline model hubs, fixtures from tests/fixtures/*."""

from __future__ import annotations

import os

for _var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
    os.environ.pop(_var, None)
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

pytest_plugins = [
    "tests.fixtures.common",
    "tests.fixtures.llm",
    "tests.fixtures.inference",
    "tests.fixtures.slack",
]


def pytest_sessionfinish(session, exitstatus):
    """Leaked non-daemon threads (a pipeline a failed test never stopped) would make the interpreter hang at exit
    and CI run into its time limit; name them, count the leak as a failure, and exit without waiting."""
    import sys
    import threading

    leaked = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive() and not t.daemon]
    if not leaked:
        return
    names = ", ".join(sorted(t.name for t in leaked))
    sys.stderr.write(f"\nleaked non-daemon threads at the end of the session: {names}\n")
    sys.stderr.flush()
    if exitstatus == 0:
        session.exitstatus = 1
    session.config.add_cleanup(lambda: os._exit(int(session.exitstatus)))
