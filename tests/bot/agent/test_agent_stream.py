"""The agent yields the answer's text as it is generated (TEXT_DELTA), and the step labels people see."""

from __future__ import annotations

from bot.agent.steps import label, outcome
from bot.events import EventType
from tests.bot.agent.test_agent import collect, make_agent, ws  # noqa: F401 - the workspace fixture
from tests.fakes.anthropic_api import text, tool_use
from tests.fixtures.llm_clients import close_llm_clients  # noqa: F401 - closes the clients


async def test_text_deltas_add_up_to_the_answer_and_come_before_it(anthropic_api, llm_settings, ws):  # noqa: F811 - the imported fixture
    answer = "Two cameras are online: the dock and the gate. " * 4
    anthropic_api.enqueue(tool_use(("think", {"thought": "plan"})), text(answer))
    events = await collect(make_agent(llm_settings, ws).process_message("cli:s", "what cameras?"))
    deltas = [e for e in events if e.type is EventType.TEXT_DELTA]
    assert len(deltas) > 1 and "".join(d.data["text"] for d in deltas) == answer
    final = events[-1]
    assert final.type is EventType.RESPONSE and final.data["text"] == answer.strip()
    assert events.index(deltas[-1]) < len(events) - 1  # streamed before the turn's final event


def test_labels_are_human_and_never_leak_a_camera_url() -> None:
    assert label("start_pipeline", {"pipeline_name": "cam3", "video_reference": "cam3"}) == "Starting a pipeline on cam3"
    assert label("start_pipeline", {"pipeline_name": "door", "line": "middle"}) == "Counting crossings on door"
    assert label("run_inference", {"image": "x.jpg"}) == "Looking at the image"
    secret = label("start_pipeline", {"video_reference": "rtsp://admin:hunter2@10.0.0.5/stream", "pipeline_name": ""})
    assert "hunter2" not in secret and "rtsp" not in secret
    assert label("some_new_tool", {}) == "Working on it"
    assert outcome("Pipeline 'door' started (id p1)\nmore", False) == "Pipeline 'door' started (id p1)"
    assert outcome("", True) == "failed"
