"""The one line that describes a pipeline, wherever it is shown: tools, `/vision`, the prompt, the heartbeat."""

from __future__ import annotations

from bot.backends.base import InferenceResult, PipelineHandle
from bot.media.redaction import redact
from bot.media.sources import is_live
from bot.pipelines.limits import cannot_count
from bot.pipelines.tally import Tally


def status_line(
    h: PipelineHandle, *, markdown: bool = False, latest: InferenceResult | None = None, tally: Tally | None = None
) -> str:
    """`name (id pipe_x): running[ on :9002], 12 frames, 4.0 fps, source …, what it runs[; error …][; the camera
    sends 12000×12000 frames …][; camera: …][; now: person×2][; counted in 3 / out 2][; zone: …][; restarted on
    :9002 at …][; 3.3 of 10 fps: CPU-bound; lower fps or size]`; the fps is the last minute's (bot/backends/pace.py).
    A running pipeline whose camera sends no video reads `reconnecting`, at 0 fps.

    markdown=True bolds the name and puts the id in code (the `/vision` replies); `latest` adds what the newest
    result shows, `tally` what it counted so far (`PipelineManager.tally`). The source is credential-redacted here,
    whatever the caller passes.
    """
    fps = f", {h.fps:.1f} fps" if h.fps is not None else ""
    what = f", {h.workflow_description}" if h.workflow_description else ""
    err = f"; error: {redact(h.error)}" if h.error else ""
    scaled = f"; {h.scaled}" if h.scaled else ""  # its frames are over media.max_pixels (bot/media/frame_limit.py)
    camera, status = camera_note(h)
    seen = ", ".join(f"{k}×{v}" for k, v in latest.counts().items()) if latest is not None else ""
    now = f"; now: {seen}" if seen else ""
    limit = f"; {note}" if latest is not None and (note := cannot_count(latest.values)) else ""  # limits.py
    head = f"*{h.name}* `{h.pipeline_id}`" if markdown else f"{h.name} (id {h.pipeline_id})"
    counted = f"; {tally.text()}" if tally is not None and tally.text() else ""
    where = f" on {h.server}" if h.server else ""  # several inference servers: which one runs it
    failover = f"; {h.failover}" if h.failover else ""
    short = f"; {h.short}" if h.short else ""  # under the rate asked for the last minute (bot/backends/pace.py)
    return (f"{head}: {status}{where}, {h.frames} frames{fps}, source {redact(h.video_reference)}{what}{err}"
            f"{scaled}{camera}{now}{counted}{limit}{failover}{short}")


def camera_note(h: PipelineHandle) -> tuple[str, str]:
    """('; camera: no video for 42 s (reconnecting, try 3)', 'reconnecting'): the camera's faults on now
    (bot/backends/faults/) and the status word a running pipeline without video shows."""
    if h.status != "running":
        return "", h.status
    on = [f for f in h.faults if f.ended is None]
    lost = any(f.kind == "video" for f in on)
    return ("; camera: " + "; ".join(f.text for f in on) if on else ""), ("reconnecting" if lost else h.status)


def health_problems(
    h: PipelineHandle, now: float, last_result: float, stall_seconds: float, min_fps: float
) -> dict[str, str]:
    """What is wrong with a pipeline right now (rule -> one line saying what to do), from its handle."""
    live = is_live(h.video_reference)
    if h.status == "error":
        return {
            "pipeline_error": f"pipeline {h.name} failed: {h.error or 'unknown error'}. Check the source, then restart it."
        }
    if h.status == "finished" and live:  # a file that ends is done; a stream that ends has dropped
        return {
            "source_dropped": f"the stream of {h.name} ended ({h.video_reference}). Check the camera, then restart the pipeline."
        }
    if h.status != "running":
        return {}
    since = max(last_result, h.started_at)
    if now - since > stall_seconds:
        return {"stalled": f"no frames from {h.name} for {int(now - since)}s. Check the camera connection."}
    if h.fps is not None and h.fps < min_fps and now - h.started_at > stall_seconds:
        return {"low_fps": f"{h.name} is running at {h.fps:.2f} fps (under {min_fps:g})."}
    return {}
