"""Crash recovery: a turn in flight when the process died is finished after the restart, once, with no new message."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from handlers.answers.feedback import STOP_TEXT
from tests.fakes.anthropic_api import FakeAnthropic, Reply, text
from tests.fakes.slack_api import SlackEmulator
from tests.fakes.waits import patience
from tests.fixtures.slack import answers
from tests.handlers.listeners.test_messages import user_texts
from tests.handlers.transport.test_delivery import bot_posts, reactions

QUESTION = "how many people are in the lobby?"
THREADS = 5


def serve(env: dict[str, str]) -> subprocess.Popen[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "vision-agent")
    return subprocess.Popen([exe, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def wait_until(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + patience(timeout)
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)


def saved_questions(workspace: Path) -> int:
    """How many user messages in the session files carry the question (each turn's user message once)."""
    count = 0
    for path in (workspace / "sessions").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("type") == "user" and QUESTION in json.dumps(rec.get("content")):
                count += 1
    return count


def stop_lines_logged(workspace: Path) -> int:
    """How many turns' Stop lines the in-flight log holds (the bot writes each once Slack accepted the post)."""
    log = workspace / ".state" / "slack_inflight.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines() if log.is_file() else []
    return sum(1 for line in lines if '"op": "stop"' in line)


def answer_by_thread(body: dict) -> Reply:
    tag = re.search(r"thread (\d+):", " ".join(user_texts(body)))
    return text(f"Lobby count for thread {tag.group(1) if tag else '?'}: three.")


def test_turns_in_flight_at_kill_9_are_answered_after_restart_without_a_new_message(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.handler = lambda body: text("never delivered", delay=60)  # still thinking when the process dies
    workspace = Path(slack_env["VISION_AGENT_WORKSPACE"])
    first = serve(slack_env)
    try:
        slack_api.wait_connected(timeout=60)
        roots = [slack_api.mention(f"thread {i}: {QUESTION}")[0] for i in range(THREADS)]
        wait_until(lambda: len(anthropic_api.requests) == THREADS, 30, "the turns never reached the model")
        # Each turn outlives STOP_AFTER, so each thread gets its "Working on it… Stop" line; the kill comes once the
        # in-flight log holds them all (a process that dies leaves them behind: the restart must delete them).
        wait_until(lambda: stop_lines_logged(workspace) == THREADS, 60, "the Stop lines were never offered")
        first.kill()  # SIGKILL: no shutdown code runs
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    for ts in roots:  # each thread shows the turn's first step, still in progress, and its Stop line
        posts = bot_posts(slack_api, "C0GENERAL", ts)
        assert [p["text"] for p in posts if not p.get("streaming")] == [STOP_TEXT]
        opened = [p for p in posts if p.get("streaming")]
        assert len(opened) == 1 and [t["status"] for t in opened[0]["tasks"].values()] == ["in_progress"]
    assert saved_questions(workspace) == THREADS  # each question was in its session when the process died
    anthropic_api.handler = answer_by_thread
    second = serve(slack_env)
    try:
        slack_api.wait_connected(count=2, timeout=60)
        slack_api.wait_for("reactions.add", lambda c: c.params["name"] == "white_check_mark", count=THREADS,
                           timeout=60)
        slack_api.wait_for("chat.delete", lambda c: True, count=2 * THREADS, timeout=60)  # Stop lines, open streams
        for i, ts in enumerate(roots):
            assert [p["text"] for p in bot_posts(slack_api, "C0GENERAL", ts)] == [f"Lobby count for thread {i}: three."]
            assert reactions(slack_api, "C0GENERAL", ts) == {"white_check_mark"}
            assert len([m for m in slack_api.messages("C0GENERAL", ts) if m.get("user") == "U0HUMAN"]) == 1
        for request in anthropic_api.ok_requests:  # each question once, then the note that we restarted
            asked = user_texts(request.body)
            assert sum(QUESTION in t for t in asked) == 1 and any("restarted" in t for t in asked)
        assert saved_questions(workspace) == THREADS
    finally:
        stop(second)
    asked_before, posts_before = len(anthropic_api.requests), len(answers(slack_api, "C0GENERAL"))
    third = serve(slack_env)  # answered turns are never answered again
    try:
        slack_api.wait_connected(count=3, timeout=60)
        time.sleep(1.0)
        assert (len(anthropic_api.requests), len(answers(slack_api, "C0GENERAL"))) == (asked_before, posts_before)
    finally:
        stop(third)


def test_answer_saved_but_not_yet_posted_at_kill_9_is_posted_after_restart_without_asking_again(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("Two cameras are online."))
    first = serve(slack_env)
    try:
        slack_api.wait_connected(timeout=60)
        slack_api.rate_limit("chat.startStream", "chat.postMessage", retry_after=30)  # the answer waits out a 429…
        ts, _ = slack_api.mention("what cameras are there?")
        wait_until(lambda: any(c.error == "ratelimited" for c in slack_api.calls), 30, "no answer was tried")
        first.kill()  # …and the process dies while it waits
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    slack_api.clear_faults()
    second = serve(slack_env)
    try:
        slack_api.wait_for("reactions.add", lambda c: c.params["name"] == "white_check_mark", timeout=60)
        assert [p["text"] for p in bot_posts(slack_api, "C0GENERAL", ts)] == ["Two cameras are online."]
        assert len(anthropic_api.ok_requests) == 1  # the answer already paid for was not asked for again
        assert reactions(slack_api, "C0GENERAL", ts) == {"white_check_mark"}
    finally:
        stop(second)
