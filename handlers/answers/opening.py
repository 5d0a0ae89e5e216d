"""A turn's first step, shown the moment the turn starts: what the bot does before the model has said anything.

The model's first token comes hundreds of ms (a long prompt: seconds) after the event; the streamed message can
open before that with what is already known: an image attached -> "Looking at the image" (it is downloaded and
checked now), a thread joined late -> "Reading the thread so far" (its earlier messages are fetched now), a
question -> "Checking what is running now" (the pipelines' state goes into the prompt now). These are real steps, each
turned complete (or failed) with what it found, never filler. They open the streamed message (chat.startStream)
while the 👀 reaction is on its way, before the prompt is built (bench/slack_latency.py measures both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.media.sniff import CHAT_TYPES as IMAGE_TYPES
from handlers.transport.owed import Owed

IMAGE, THREAD, PIPELINES = "first-image", "first-thread", "first-pipelines"


@dataclass(frozen=True)
class Step:
    """One task card: `id` (stable, so its completion updates the same card) and its title."""

    id: str
    title: str


def first_steps(text: str, files: list[dict[str, Any]], joined: bool) -> list[Step]:
    """What this turn does before the model answers, in the order it does it (empty: nothing worth a card, e.g.
    a bare mention, which gets the hint instead).

    text: the question without the bot's mention; files: Slack file objects of the message; joined: the bot was
    mentioned in a thread it had not been part of (the earlier messages are read first)."""
    steps = []
    if files:
        images = sum(1 for f in files if str(f.get("mimetype") or "").lower() in IMAGE_TYPES)
        # A file Slack sends as a lazy object (no mimetype yet) is looked at too: call it an image only if it is.
        what = ("the image" if images == 1 else f"the {images} images") if images == len(files) else \
            ("the attached file" if len(files) == 1 else f"the {len(files)} attached files")
        steps.append(Step(IMAGE, f"Looking at {what}"))
    if joined:
        steps.append(Step(THREAD, "Reading the thread so far"))
    if text.strip() and not files:
        steps.append(Step(PIPELINES, "Checking what is running now"))
    return steps


class Openings(Owed):
    """First steps before 👀: how many turns taken into an idle thread have not yet sent their first step (or found
    they have none). A 👀 waits until none is due, or WAIT at most: in a burst of threads every first step goes out
    before the first reaction, so the reactions' Web API calls are not spent ahead of the last threads' steps (a
    step in the thread says more than a reaction; bench/slack_latency.py measures both)."""

    WAIT = 0.5  # seconds a 👀 waits at most for first steps still due
    expect, settle = Owed.owe, Owed.paid

    @property
    def due(self) -> int:
        return self.count


def images_outcome(received: list[str], refused: int) -> tuple[str, bool]:
    """(the line under the image step, whether it failed): the files that arrived, by the names they were shared
    under, and how many were refused (each refusal is posted in the thread as its own line)."""
    if not received:
        return ("refused: see the note below" if refused else "no file arrived"), True
    return ", ".join(received) + (f" ({refused} refused)" if refused else ""), False


def thread_outcome(earlier: int) -> str:
    return "no earlier messages" if not earlier else ("1 earlier message" if earlier == 1 else
                                                      f"{earlier} earlier messages")


def pipelines_outcome(statuses: list[tuple[str, str]]) -> str:
    """'no pipeline running', or '2 pipelines running: door, yard' from (name, status) of each pipeline."""
    live = [name for name, status in statuses if status in ("running", "starting")]
    if not live:
        return "no pipeline running"
    names = ", ".join(live[:4]) + (", …" if len(live) > 4 else "")
    return f"{len(live)} pipeline{'s' if len(live) > 1 else ''} running: {names}"
