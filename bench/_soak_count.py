"""The soak's tallies, from what Slack (the emulator) stored and what the bot itself recorded on disk.

Never from what the bench meant to do: questions asked are the tagged human messages Slack holds; answers and
frames produced are the bot's session files (`sessions/*.jsonl`); alerts emitted are the bot's event log
(`.state/events.jsonl`, entries not held); delivered is what the emulator stored in the channels.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._soak_model import TAG, question
from tests.fakes.slack_api import SlackEmulator

ANSWER = re.compile(r"Answer (t\d+q\d+):")
BUDGET = re.compile(r"LLM budget|budget for conversations")  # the budget's refusal lines (bot/llm/budget.py)


@dataclass
class Tally:
    asked: int = 0
    answers_made: int = 0  # final answers in the bot's session files
    answers_posted: int = 0  # distinct answers Slack stored
    answer_dups: int = 0
    frames_made: int = 0  # tool results with an image in the bot's session files
    frames_posted: int = 0
    frame_dups: int = 0  # per thread, more frames posted than made
    frames_misplaced: int = 0  # a frame between two answers where its question asked for none (or an extra one)
    misplaced_where: list[str] = field(default_factory=list)  # the threads' sequences where a frame was misplaced
    out_of_order: int = 0  # answers posted after the answer of a later question of the same thread
    eyes_left: int = 0
    no_final_reaction: int = 0
    budget_notices: int = 0  # "your share of today's LLM budget is used": a refusal the soak's budget should prevent
    other_posts: list[str] = field(default_factory=list)  # bot posts in threads that are neither answer nor frame
    alerts_sent: int = 0  # event log: dispatched to the sinks
    alerts_held: Counter[str] = field(default_factory=Counter)
    alerts_posted: int = 0
    alert_dups: int = 0
    alerts_out_of_order: int = 0
    alerts_unmatched: int = 0  # posted alerts whose id is not in the event log
    events_trimmed: bool = False


def _is_bot(slack: SlackEmulator, msg: dict[str, Any]) -> bool:
    return msg.get("user") == slack.bot_user_id and msg.get("bot_id") == slack.bot_id


def _sessions(root: Path) -> dict[str, list[dict[str, Any]]]:
    """Session records by thread root ts (Slack sessions only)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in (root / "sessions").glob("*.jsonl"):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        key = next((r.get("key", "") for r in records if r.get("type") == "session"), "")
        if key.startswith("slack:"):
            out[key.rsplit(":", 1)[-1]] = records
    return out


def _made(records: list[dict[str, Any]]) -> tuple[set[str], int]:
    """(answer tags, frames) one thread's session holds."""
    tags: set[str] = set()
    frames = 0
    for rec in records:
        content = rec.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if rec.get("role") == "assistant" and block.get("type") == "text":
                tags.update(ANSWER.findall(block.get("text", "")))
            if block.get("type") == "tool_result" and not block.get("is_error"):
                inner = block.get("content")
                frames += isinstance(inner, list) and any(b.get("type") == "image" for b in inner)
    return tags, frames


def _thread(slack: SlackEmulator, t: Tally, channel: str, root: dict[str, Any], records: list[dict[str, Any]]) -> None:
    posts = [m for m in slack.messages(channel, root["ts"]) if _is_bot(slack, m)]
    made_tags, made_frames = _made(records)
    t.answers_made += len(made_tags)
    t.frames_made += made_frames
    seq: list[str] = []  # "frame" or an answer tag, in the order Slack stored them
    for post in posts:
        items = _items(post)
        seq += items
        if not items and BUDGET.search(post.get("text", "")):
            t.budget_notices += 1
        elif not items:
            t.other_posts.append(post.get("text", "")[:120])
    tags = [s for s in seq if s != "frame"]
    counts = Counter(tags)
    t.answers_posted += len(counts)
    t.answer_dups += sum(n - 1 for n in counts.values())
    frames = seq.count("frame")
    t.frames_posted += frames
    t.frame_dups += max(0, frames - made_frames)
    index = [int(tag.split("q")[1]) for tag in tags]
    t.out_of_order += sum(1 for i, k in enumerate(index) if k < max(index[:i], default=-1))
    bad = _misplaced(seq)
    t.frames_misplaced += bad
    if bad:
        t.misplaced_where.append(f"thread {root['ts']}: " + " ".join(seq))


def _images(blocks: Any) -> int:
    return sum(1 for b in blocks or [] if isinstance(b, dict) and b.get("type") == "image" and b.get("slack_file"))


def _items(post: dict[str, Any]) -> list[str]:
    """What one bot post shows, in order: "frame" per file or image, and the answer tag where its text has it.

    A streamed message (chat.startStream) holds its chunks: frames as image blocks between the text pieces.
    """
    if post.get("files"):
        return ["frame"] * len(post["files"])
    if not post.get("chunks"):
        found = ANSWER.findall(post.get("text", ""))
        return ["frame"] * _images(post.get("blocks")) + found[:1]
    items: list[str] = []
    text = ""
    for chunk in post["chunks"]:
        if chunk.get("type") == "blocks":
            items += ["frame"] * _images(chunk.get("blocks"))
        elif chunk.get("type") == "markdown_text" and not ANSWER.search(text):
            text += chunk.get("text", "")
            items += ANSWER.findall(text)[:1]
    return items


def _misplaced(seq: list[str]) -> int:
    """Frames before an answer whose question asked for none, or more than one before one answer."""
    bad, pending = 0, 0
    for item in seq:
        if item == "frame":
            pending += 1
            continue
        thread, index = (int(x) for x in item[1:].split("q"))
        bad += abs(pending - int(question(thread, index).wants_frame)) if pending else 0
        pending = 0
    return bad + pending  # frames after the last answer belong to no answer yet


def chat(slack: SlackEmulator, root: Path, t: Tally, channel: str = "C0GENERAL") -> None:
    """Questions, answers, frames, order and reactions of every tagged thread in `channel`."""
    sessions = _sessions(root)
    humans = [m for m in slack.messages(channel) if not _is_bot(slack, m) and TAG.search(m.get("text", ""))]
    t.asked = len(humans)
    for msg in humans:
        mine = {n for n, users in msg.get("reactions_by", {}).items() if slack.bot_user_id in users}
        t.eyes_left += "eyes" in mine
        t.no_final_reaction += not mine & {"white_check_mark", "warning"}
    for msg in humans:
        if not msg.get("thread_ts") or msg["thread_ts"] == msg["ts"]:
            _thread(slack, t, channel, msg, sessions.get(msg["ts"], []))


def _alert_id(msg: dict[str, Any]) -> str | None:
    for block in msg.get("blocks") or []:
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            try:
                return json.loads(element.get("value", "")).get("alert")
            except (ValueError, AttributeError):
                continue
    return None


def alerts(slack: SlackEmulator, root: Path, t: Tally, channel: str) -> None:
    """Alerts the event log says were sent vs alert messages Slack stored (matched by the alert id on the buttons)."""
    path = root / ".state" / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    t.events_trimmed = bool(events) and int(events[0].get("id", "1")) != 1
    sent = [e for e in events if not e.get("held")]
    t.alerts_held.update(e["held"] for e in events if e.get("held"))
    t.alerts_sent = len(sent)
    order = {e.get("alert_id"): n for n, e in enumerate(sent)}  # the order the router dispatched them
    roots = [m for m in slack.messages(channel) if _is_bot(slack, m) and (m.get("thread_ts") in (None, m["ts"]))]
    ids = [i for i in map(_alert_id, roots) if i]
    counts = Counter(ids)
    t.alerts_posted = len(counts)
    t.alert_dups = sum(n - 1 for n in counts.values())
    t.alerts_unmatched = sum(1 for i in counts if i not in order)
    seen = [order[i] for i in ids if i in order]
    t.alerts_out_of_order = sum(1 for i, x in enumerate(seen) if x < max(seen[:i], default=-1))


def _texts(content: Any) -> str:
    """The text of a message's content (a string or blocks), without its images: a question with a photo has the
    image block first, so its tag is not in the first few thousand characters of the record."""
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text") \
        if isinstance(content, list) else ""


def spend(root: Path) -> tuple[float, float]:
    """(today's model spend, the most any one Slack person spent) from the bot's .state/usage.json."""
    path = root / ".state" / "usage.json"
    try:
        days = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0.0, 0.0
    day = max(days.values(), key=lambda d: d.get("cost", 0.0), default={}) if isinstance(days, dict) else {}
    by = day.get("by") or {}
    return float(day.get("cost", 0.0)), max((float(v) for k, v in by.items() if k.startswith("user:")), default=0.0)


def sessions_held(root: Path) -> tuple[int, int, float]:
    """(chat sessions, alert-seeded sessions, MB of session files): the bot keeps every session it loaded in memory."""
    chat = seeded = 0
    size = 0
    for path in (root / "sessions").glob("*.jsonl"):
        size += path.stat().st_size
        first_user: dict[str, Any] = next((json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines()
                                           if '"role": "user"' in ln), {})
        if TAG.search(_texts(first_user.get("content", ""))):
            chat += 1
        else:
            seeded += 1
    return chat, seeded, size / 1e6
