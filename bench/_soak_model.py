"""The soak's scripted Claude (on the Messages API emulator) and the questions its 20 chat threads ask.

Every question carries a tag `[tNqM]` (thread N, question M). The model answers `Answer tNqM: ...`, so the
counts can match each answer Slack stored to the question it answers. A question with a photo makes the model
call `run_inference` on it; one asking to see a camera makes it call `get_pipeline_results(include_frame=true)`;
both give a frame the bot posts into the thread. Everything else is a plain answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tests.fakes.anthropic_api import Reply, text, tool_use

TAG = re.compile(r"\[(t\d+q\d+)\]")
FILE_ID = re.compile(r"\bF\d{8}\b")
CAMERA = re.compile(r"\bshow me (street\d)\b")
MODEL_DELAY = 0.3  # seconds the emulated model takes per call


@dataclass(frozen=True)
class Question:
    thread: int
    index: int
    kind: str  # "photo" (attachment -> run_inference), "camera" (pipeline frame) or "plain"

    @property
    def tag(self) -> str:
        return f"t{self.thread}q{self.index}"

    @property
    def wants_frame(self) -> bool:
        return self.kind != "plain"

    def text(self, cameras: int) -> str:
        what = {"photo": "how many people are in this photo?",
                "camera": f"show me street{self.thread % cameras + 1} now",
                "plain": "anything unusual on the cameras lately?"}[self.kind]
        return f"[{self.tag}] {what}"


def question(thread: int, index: int) -> Question:
    """A fixed mix: every third question has a photo, every third asks for a camera's frame."""
    return Question(thread, index, ("photo", "camera", "plain")[(thread + index) % 3])


def _user_texts(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


def _is_tool_result(message: dict[str, Any]) -> bool:
    content = message["content"]
    return message["role"] == "user" and isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _current_tag(messages: list[dict[str, Any]]) -> str:
    """The tag of the question this turn answers: the newest user message that is not a tool result."""
    for message in reversed(messages):
        if message["role"] == "user" and not _is_tool_result(message):
            found = TAG.findall(_user_texts(message))
            return found[-1] if found else "?"
    return "?"


def reply(body: dict[str, Any]) -> Reply:
    """The model's next step for one Messages API request (called on the emulator's thread)."""
    messages = body.get("messages") or []
    if not messages:
        return text("Nothing to answer.", delay=MODEL_DELAY)
    last = messages[-1]
    tag = _current_tag(messages)
    if _is_tool_result(last):
        failed = any(b.get("is_error") for b in last["content"] if isinstance(b, dict))
        return text(f"Answer {tag}: {'the tool failed' if failed else 'checked, nothing unusual'}.", delay=MODEL_DELAY)
    asked = _user_texts(last)
    photo = FILE_ID.search(asked)  # the note listing attached files (never inside the image's base64)
    camera = CAMERA.search(asked)
    if photo and "photo" in asked:
        return tool_use(("run_inference", {"image": photo.group(0), "model_id": "builtin/people"}), delay=MODEL_DELAY)
    if camera:
        return tool_use(("get_pipeline_results", {"pipeline_id": camera.group(1), "include_frame": True}),
                        delay=MODEL_DELAY)
    return text(f"Answer {tag}: all quiet.", delay=MODEL_DELAY)
