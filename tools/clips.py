"""get_clip_frames: frames from an alert's clip, so the model can look at the seconds around the event."""

from __future__ import annotations

import asyncio

from pydantic import Field

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolArgs, ToolContext, ToolResult
from bot.media.clip_video import contact_sheet, read_frames
from bot.pipelines.clips import Clip
from bot.services import need


class ClipFramesArgs(ToolArgs):
    clip: str = Field(description="The clip id given with the alert (e.g. 'door-20261123-093000-a1b2c3')")
    start: float = Field(-5.0, ge=-600, le=600, description="From this many seconds relative to the event (negative: before it)")
    end: float = Field(3.0, ge=-600, le=600, description="To this many seconds relative to the event")
    frames: int = Field(6, ge=1, le=12, description="How many evenly spaced frames to look at")


def _sheet(clip: Clip, args: ClipFramesArgs) -> tuple[str, bytes | None]:
    """What the clip holds of the asked window, as a caption line and a contact sheet (blocking: decodes video)."""
    first, last = -clip.event_at, clip.seconds - clip.event_at  # the clip's ends, relative to the event
    lo, hi = max(min(args.start, args.end), first), min(max(args.start, args.end), last)
    cover = f"The clip covers {first:+.1f} s to {last:+.1f} s around the event."
    if hi < lo:
        return f"{cover} Nothing of {args.start:+.1f}..{args.end:+.1f} s is in it; ask within that range.", None
    n = args.frames if hi > lo else 1
    times = [lo + (hi - lo) * i / max(n - 1, 1) for i in range(n)]
    got = read_frames(clip.path, [t + clip.event_at for t in times])
    if not got:
        return "The clip could not be decoded.", None
    labelled = [(f"{t - clip.event_at:+.1f} s", im) for t, im in got]
    cut = " (less than asked: only that much was kept)" if lo > min(args.start, args.end) or hi < max(args.start, args.end) else ""
    text = (f"{cover} Frames at {', '.join(label for label, _ in labelled)} relative to the event "
            f"({clip.rule} on {clip.camera}){cut}, left to right, top to bottom.")
    return text, contact_sheet(labelled)


async def get_clip_frames(args: ClipFramesArgs, ctx: ToolContext) -> ToolResult:
    try:
        recorder = need(ctx.services.pipelines, "pipelines").clips
    except LookupError as exc:
        return ToolResult.error(str(exc))
    clip = await asyncio.to_thread(recorder.find, args.clip.strip())
    if clip is None:
        return ToolResult.error(f"No clip {args.clip[:80]!r}; use the clip id given with the alert in this thread.")
    text, sheet = await asyncio.to_thread(_sheet, clip, args)
    if sheet is None:
        return ToolResult.error(text)
    return ToolResult(text=text, image=sheet, frame=sheet, frame_caption=f"{clip.camera}: {clip.clip_id}")


def register(reg: ToolRegistry) -> None:
    reg.register(
        "get_clip_frames",
        "Look at frames from an alert's video clip (the seconds before and after the event), e.g. to tell a person "
        "from a shadow or answer 'show me the 5 seconds before'. Needs the clip id given with the alert.",
        ClipFramesArgs,
        get_clip_frames,
    )
