"""Replay a recipe's steps through the tool registry, no model involved, checking each step's outcome."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolContext
from bot.backends.base import InferenceResult, PipelineHandle
from bot.backends.counting import line_totals
from bot.pipelines.manager import PipelineManager
from bot.recipes.model import REPLAYABLE, substitute
from bot.services import need

FIRST_RESULT_TIMEOUT = 20.0  # seconds a started pipeline may take to deliver its first result (model load included)


@dataclass(frozen=True)
class Outcome:
    """How the replay went: the step that failed (0-based, None when all passed) and one line per step."""

    lines: list[str]
    failed_step: int | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.failed_step is None


class StepFailed(Exception):
    """A step's check failed; str() is the line the user reads."""


async def replay(recipe: dict[str, Any], values: dict[str, Any], registry: ToolRegistry, ctx: ToolContext,
                 timeout: float = FIRST_RESULT_TIMEOUT) -> Outcome:
    """Run every step with `values` filled in; stop at the first one whose call or check fails."""
    lines: list[str] = []
    for index, step in enumerate(recipe["steps"]):
        tool_input = substitute(step["input"], values)
        try:
            lines.append(await _run_step(step["tool"], tool_input, registry, ctx, timeout))
        except StepFailed as exc:
            return Outcome([*lines, f"Step {index + 1} ({step['tool']}) failed: {exc}"], index, str(exc))
    return Outcome(lines)


async def _run_step(tool: str, tool_input: dict[str, Any], registry: ToolRegistry, ctx: ToolContext,
                    timeout: float) -> str:
    if tool not in REPLAYABLE:  # a recipe file edited by hand must not become a way to call any tool
        raise StepFailed(f"{tool} is not a step a recipe replays ({', '.join(REPLAYABLE)})")
    mgr = need(ctx.services.pipelines, "pipelines")
    before = {h.pipeline_id for h in mgr.snapshot()}
    result = await registry.execute(tool, tool_input, ctx)
    if result.is_error:
        raise StepFailed(result.text)
    started = [h for h in mgr.snapshot() if h.pipeline_id not in before]
    if not started:
        raise StepFailed("no pipeline was started")
    return await _check_pipeline(mgr, started[0], bool(tool_input.get("line")), timeout)


async def _check_pipeline(mgr: PipelineManager, handle: PipelineHandle, has_line: bool, timeout: float) -> str:
    """Running (or a file already done), a first result within `timeout`, and its counts readable."""
    latest = await _first_result(mgr, handle.pipeline_id, timeout)
    handle = await mgr.status(handle.pipeline_id)
    if handle.status == "error":
        raise StepFailed(f"{handle.name} stopped with an error: {handle.error or 'unknown'}")
    if latest is None:
        raise StepFailed(f"{handle.name} is {handle.status} but gave no result within {timeout:g} s; "
                         "check the source with `/vision snapshot " + handle.name + "`")
    return f"*{handle.name}* `{handle.pipeline_id}` {handle.status}: {_counts(latest, has_line)}"


async def _first_result(mgr: PipelineManager, pid: str, timeout: float) -> InferenceResult | None:
    deadline = time.monotonic() + timeout
    while True:
        latest = mgr.latest(pid)
        handle = mgr.resolve(pid)
        if latest is not None or handle.status == "error" or time.monotonic() > deadline:
            return latest
        await asyncio.sleep(0.2)
        await mgr.status(pid)  # refreshes the status from the backend (a file that ended, a source that failed)


def _counts(result: InferenceResult, has_line: bool) -> str:
    counts = result.counts()
    text = ", ".join(f"{n} {name}" for name, n in sorted(counts.items())) or "nothing detected yet"
    if has_line:
        totals = line_totals(result.values)
        if not totals:
            raise StepFailed("the line counter reported no counts; the recipe's line may not fit this source")
        text += f"; line in {int(totals.get('count_in', 0))} / out {int(totals.get('count_out', 0))}"
    return text
