"""Thumbs up/down under a final answer and a Stop button on a running turn: the blocks, and what a click does.

Feedback is recorded in the answer's own session (a `feedback` line in its JSONL, next to the turn it judges), so
whoever reads a transcript sees which answers people liked. Stop cancels the running turn of that thread; the
agent loop closes every tool_use it had started with a result, so the session stays valid for the next message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from slack_sdk.errors import SlackApiError

from handlers.transport.mrkdwn import escape

log = logging.getLogger(__name__)

FEEDBACK_ACTION = "answer_feedback"
STOP_TURN_ACTION = "stop_turn"
GOOD, BAD = "good", "bad"
STOP_TEXT = "Working on it… press Stop to cancel this answer."
STOP_AFTER = 3.0  # seconds a turn runs before it is offered a Stop button


def feedback_blocks() -> list[dict[str, Any]]:
    """The context_actions block with 👍/👎 (docs.slack.dev feedback_buttons element) for a final answer."""
    return [{
        "type": "context_actions",
        "elements": [{
            "type": "feedback_buttons",
            "action_id": FEEDBACK_ACTION,
            "positive_button": {"text": {"type": "plain_text", "text": "👍"}, "value": GOOD,
                                "accessibility_label": "This answer helped"},
            "negative_button": {"text": {"type": "plain_text", "text": "👎"}, "value": BAD,
                                "accessibility_label": "This answer did not help"},
        }],
    }]


def stop_blocks(turn_key: str) -> list[dict[str, Any]]:
    """One line with a Stop button; its value names the turn (checked against the running turns, never trusted)."""
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": escape(STOP_TEXT)}},
        {"type": "actions", "elements": [{"type": "button", "action_id": STOP_TURN_ACTION, "style": "danger",
                                          "text": {"type": "plain_text", "text": "Stop"}, "value": turn_key}]},
    ]


class RunningTurns:
    """The agent task of each running turn by turn key, so a Stop click can cancel exactly that one."""

    def __init__(self) -> None:
        self._tasks: dict[str, tuple[asyncio.Task[Any], str]] = {}
        self.stopped: dict[str, str] = {}  # turn key -> who pressed Stop (read once by the turn)

    def add(self, key: str, task: asyncio.Task[Any], owner: str) -> None:
        self._tasks[key] = (task, owner)
        task.add_done_callback(lambda _t: self._tasks.pop(key, None))

    def owner(self, key: str) -> str | None:
        entry = self._tasks.get(key)
        return entry[1] if entry else None

    def stop(self, key: str, by: str) -> bool:
        """Cancel the turn; False when it is not running (already finished, or never ours)."""
        entry = self._tasks.get(key)
        if entry is None or entry[0].done():
            return False
        self.stopped[key] = by
        entry[0].cancel()
        return True

    def stopped_by(self, key: str) -> str | None:
        """Who stopped this turn (once: the entry is taken), None when nobody did."""
        return self.stopped.pop(key, None)

    def __len__(self) -> int:
        return len(self._tasks)


async def delete_quietly(client: Any, channel: str, ts: str | None) -> None:
    """Remove our own control message (the Stop line) once the turn is over; best effort."""
    if not ts:
        return
    try:
        await client.chat_delete(channel=channel, ts=ts)
    except SlackApiError as exc:
        log.info("stop line %s in %s not deleted: %s", ts, channel, exc.response.get("error"))
    except Exception as exc:  # the turn's answer matters; a leftover control line does not
        log.info("stop line %s in %s not deleted: %s", ts, channel, type(exc).__name__)


async def run_stoppable(client: Any, running: RunningTurns, where: tuple[str, str | None], key: str, owner: str,
                        work: Any, offered: Callable[[str], None] | None = None) -> str | None:
    """Run the turn's coroutine as a task Stop can cancel; returns who stopped it, None when it ran to its end.

    A Stop line is offered only once the turn has run STOP_AFTER seconds (quick answers never flicker one), and
    deleted when the turn ends; `offered` is told its ts (so a restart after a crash can delete it). A cancel of
    the caller (shutdown) still propagates: the turn stays open on disk.
    """
    task = asyncio.ensure_future(work)
    running.add(key, task, owner)
    offer = asyncio.ensure_future(_offer_stop(client, where, key, task, offered))
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        by = running.stopped_by(key)
        if by is None or (current is not None and current.cancelling()):
            raise
        return by
    finally:
        await offer
    return None


async def _offer_stop(client: Any, where: tuple[str, str | None], key: str, task: asyncio.Task[Any],
                      offered: Callable[[str], None] | None) -> None:
    channel, thread_ts = where
    done, _ = await asyncio.wait({task}, timeout=STOP_AFTER)
    if done:
        return
    try:
        resp = await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=STOP_TEXT,
                                             blocks=stop_blocks(key))
    except Exception as exc:  # no Stop line (rate limit, channel gone): the turn runs on regardless
        log.info("stop line not posted in %s: %s", channel, type(exc).__name__)
        return
    if offered is not None and resp.get("ts"):
        offered(str(resp["ts"]))
    await asyncio.wait({task})
    await delete_quietly(client, channel, resp.get("ts"))
