"""`vision-agent serve`: token checks, SLACK_API_URL for both clients, reconnects without lost events, /healthz."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import aiohttp
import pytest

from bot.config import load_settings
from handlers.app import serve
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.waits import patience
from tests.fixtures.common import free_port
from tests.fixtures.slack import RunningBot, await_answers, start_bot, stop_bot


@pytest.mark.parametrize(("env", "names"), [
    ({}, "SLACK_BOT_TOKEN"),
    ({"SLACK_BOT_TOKEN": "xoxp-user-token", "SLACK_APP_TOKEN": "xapp-1"}, "xoxb-"),
    ({"SLACK_BOT_TOKEN": "xoxb-1"}, "SLACK_APP_TOKEN"),
    ({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-2"}, "xapp-"),
])
def test_missing_or_malformed_tokens_exit_2_with_one_line(
    base_env: dict[str, str], capsys: pytest.CaptureFixture[str], env: dict[str, str], names: str
) -> None:
    assert serve(load_settings({**base_env, **env})) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and names in err
    assert "xoxp-user-token" not in err and "xoxb-2" not in err  # never echo a secret


def test_rejected_token_exits_2(slack_env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert serve(load_settings({**slack_env, "SLACK_BOT_TOKEN": "xoxb-revoked"})) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "invalid_auth" in err


def test_unreachable_slack_api_exits_1_with_one_line(base_env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    env = {**base_env, "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1",
           "SLACK_API_URL": f"http://127.0.0.1:{free_port()}/api/"}
    assert serve(load_settings(env)) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot reach Slack" in err


def test_rejected_app_token_exits_2_instead_of_retrying_forever(
    slack_env: dict[str, str], slack_api: SlackEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert serve(load_settings({**slack_env, "SLACK_APP_TOKEN": "xapp-revoked"})) == 2
    assert "invalid_auth" in capsys.readouterr().err
    assert slack_api.connections_opened == 0


async def test_disconnect_message_reconnects_and_keeps_answering(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("still here"))
    slack_api.disconnect()
    await slack_api.await_connected(count=2)
    ts, _ = slack_api.mention("are you there?")
    assert await await_answers(slack_api, "C0GENERAL", ts) == ["still here"]
    opens = slack_api.calls_to("apps.connections.open")
    assert len(opens) == 3 and all(c.token == slack_api.app_token for c in opens)  # check + 2 connections


async def test_event_sent_while_the_socket_is_down_is_answered_after_reconnect(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("got it"))
    slack_api.drop()
    ts, envelopes = slack_api.mention("did you get this?")
    await slack_api.await_connected(count=2, timeout=20)
    assert await await_answers(slack_api, "C0GENERAL", ts, timeout=20) == ["got it"]
    assert all(e.acked_at is not None for e in envelopes)
    assert len(anthropic_api.ok_requests) == 1


async def test_healthz_reports_socket_and_pipelines(
    slack_env: dict[str, str], slack_api: SlackEmulator
) -> None:
    port = free_port()
    running = await start_bot(slack_env, slack_api, slack={"health_port": port})
    try:
        deadline = time.monotonic() + patience(1)
        while time.monotonic() < deadline:  # the first ping/pong with Slack follows the connection within moments
            async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/healthz") as resp:
                assert resp.status == 200
                body = await resp.json()
            if body["last_heartbeat"]:
                break
            await asyncio.sleep(0.02)
        assert body["socket"] is True and body["pipelines"] == 0 and body["last_heartbeat"]
        assert body["heartbeat_source"] == "socket"  # no heartbeat has run yet
        running.runtime.scheduler.heartbeat.last_run = 1_700_000_000.0  # as a finished heartbeat records it
        async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/healthz") as resp:
            body = await resp.json()
        assert body["heartbeat_source"] == "scheduler" and body["last_heartbeat"] == "2023-11-14T22:13:20+00:00"
        await running.bot.socket.close()  # socket gone (and not coming back): unhealthy
        async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/healthz") as resp:
            assert resp.status == 503 and (await resp.json())["socket"] is False
    finally:
        await stop_bot(running)


def test_vision_agent_serve_process_answers_a_mention_and_stops_on_sigterm(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("Hello from the real process."))
    exe = os.path.join(os.path.dirname(sys.executable), "vision-agent")
    proc = subprocess.Popen([exe, "serve"], env=slack_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        slack_api.wait_connected(timeout=60)
        ts, _ = slack_api.mention("hello?")
        assert asyncio.run(await_answers(slack_api, "C0GENERAL", ts, timeout=30)) == ["Hello from the real process."]
        assert slack_api.calls_to("auth.test")[0].token == slack_api.bot_token
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, proc.stderr.read()[-2000:]
    assert "xoxb-test-token" not in proc.stderr.read()
