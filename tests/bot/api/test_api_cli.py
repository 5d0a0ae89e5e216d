"""`vision-agent api`: the REST API as its own process (no Slack), and the settings that keep it closed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from bot.config import SettingsError, load_settings
from tests.fixtures.common import free_port

TOKEN = "api-token-0123456789abcdef"
EXE = os.path.join(os.path.dirname(sys.executable), "vision-agent")


def test_without_a_token_it_exits_2_with_one_line(base_env: dict[str, str]) -> None:
    env = {**base_env, "PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    done = subprocess.run([EXE, "api", "--port", str(free_port())], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "vision-agent api: the REST API is off: set VISION_AGENT_API_TOKEN (a long random string) and restart."]


def test_the_process_serves_the_api_and_stops_on_sigterm(base_env: dict[str, str]) -> None:
    port = free_port()
    env = {**base_env, "PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"),
           "VISION_AGENT_API_TOKEN": TOKEN}
    proc = subprocess.Popen([EXE, "api", "--port", str(port)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/api/health",
                                     headers={"Authorization": f"Bearer {TOKEN}"})
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(req, timeout=2) as resp:
                    assert resp.status == 200
                    break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.2)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2)
        assert refused.value.code == 401
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_public_api_host_needs_the_token(base_env: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match="needs VISION_AGENT_API_TOKEN"):
        load_settings(base_env, api={"host": "0.0.0.0"})
    assert load_settings({**base_env, "VISION_AGENT_API_TOKEN": TOKEN}, api={"host": "0.0.0.0"}).api.host == "0.0.0.0"
