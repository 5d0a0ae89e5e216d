"""The one line that describes a pipeline, wherever it is shown: tools, `/vision`, the prompt, the heartbeat."""

from __future__ import annotations

from bot.backends.base import InferenceResult, PipelineHandle
from bot.media.redaction import redact


def status_line(h: PipelineHandle, *, markdown: bool = False, latest: InferenceResult | None = None) -> str:
    """`name (id pipe_x): running, 12 frames, 4.0 fps, source …, what it runs[; error …][; now: person×2]`.

    markdown=True bolds the name and puts the id in code (the `/vision` replies); `latest` adds what the newest
    result shows. The source is credential-redacted here, whatever the caller passes.
    """
    fps = f", {h.fps:.1f} fps" if h.fps else ""
    what = f", {h.workflow_description}" if h.workflow_description else ""
    err = f"; error: {redact(h.error)}" if h.error else ""
    seen = ", ".join(f"{k}×{v}" for k, v in latest.counts().items()) if latest is not None else ""
    now = f"; now: {seen}" if seen else ""
    head = f"*{h.name}* `{h.pipeline_id}`" if markdown else f"{h.name} (id {h.pipeline_id})"
    return f"{head}: {h.status}, {h.frames} frames{fps}, source {redact(h.video_reference)}{what}{err}{now}"
