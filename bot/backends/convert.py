"""Raw backend outputs (in-process sv.Detections / images, or the server's JSON) → InferenceResult."""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bot.backends.base import Detection, InferenceResult, LazyJpeg
from bot.backends.imaging import decode_image, draw_detections, encode_jpeg
from bot.media.sniff import TooManyPixels

TIME_IN_ZONE = "time_in_zone"  # the key inference's time_in_zone block adds to detections' data (and JSON)
log = logging.getLogger(__name__)
MAX_VALUE_CHARS = 2000  # JSON-able workflow values bigger than this are dropped (they would flood the prompt)


def detections_from_sv(det: Any) -> tuple[Detection, ...]:
    """supervision Detections → Detection tuple."""
    n = len(det)
    names = det.data.get("class_name") if det.data else None
    dwell = det.data.get(TIME_IN_ZONE) if det.data else None  # per-object seconds from a time_in_zone step
    out = []
    for i in range(n):
        conf = float(det.confidence[i]) if det.confidence is not None else 1.0
        tid = int(det.tracker_id[i]) if det.tracker_id is not None else None
        name = str(names[i]) if names is not None else str(int(det.class_id[i]) if det.class_id is not None else "object")
        x1, y1, x2, y2 = (round(float(v), 1) for v in det.xyxy[i])
        out.append(Detection(class_name=name, confidence=round(conf, 4), xyxy=(x1, y1, x2, y2), tracker_id=tid,
                             time_in_zone=_seconds(dwell[i]) if dwell is not None else None))
    return tuple(out)


def _seconds(value: Any) -> float | None:
    """A time_in_zone entry (a float, numpy scalar or 1-element array) as rounded seconds; None if unreadable."""
    try:
        return round(float(getattr(value, "item", lambda: value)()), 2)
    except (TypeError, ValueError):
        return None


def detections_from_json(payload: dict[str, Any]) -> tuple[Detection, ...]:
    """The server's serialized detections ({"predictions": [{x, y, width, height, class, confidence}...]})."""
    out = []
    for p in payload.get("predictions") or []:
        x, y, w, h = (float(p.get(k, 0.0)) for k in ("x", "y", "width", "height"))
        tid = p.get("tracker_id")
        out.append(
            Detection(
                class_name=str(p.get("class", p.get("class_name", "object"))),
                confidence=round(float(p.get("confidence", 1.0)), 4),
                xyxy=(round(x - w / 2, 1), round(y - h / 2, 1), round(x + w / 2, 1), round(y + h / 2, 1)),
                tracker_id=int(tid) if tid is not None else None,
                time_in_zone=_seconds(p[TIME_IN_ZONE]) if p.get(TIME_IN_ZONE) is not None else None,
            )
        )
    return tuple(out)


def _is_json_detections(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("predictions"), list) and "image" in value


def _is_json_image(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "base64" and isinstance(value.get("value"), str)


def _json_default(obj: Any) -> Any:
    """Non-JSON values inside workflow outputs: numbers/arrays as lists, detections as counts, images dropped."""
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return obj.tolist()
    if hasattr(obj, "xyxy") and hasattr(obj, "data"):  # sv.Detections nested in a list/dict
        return {"count": len(obj)}
    if hasattr(obj, "numpy_image"):
        return "<image>"
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    return str(obj)[:100]


def _plain_value(value: Any) -> Any:
    """A JSON-safe, small copy of value (plain types only), or None to drop it."""
    try:
        text = json.dumps(value, default=_json_default)
    except (TypeError, ValueError):
        return None
    return json.loads(text) if len(text) <= MAX_VALUE_CHARS else None


def _read_in_process(value: Any) -> tuple[str, Any]:
    import supervision as sv

    if isinstance(value, sv.Detections):
        return "detections", lambda: detections_from_sv(value)
    if hasattr(value, "numpy_image") and hasattr(value, "parent_metadata"):
        return "image", lambda: value.numpy_image
    return "value", None


def _read_serialized(value: Any) -> tuple[str, Any]:
    if _is_json_detections(value):
        return "detections", lambda: detections_from_json(value)
    if _is_json_image(value):
        return "image", lambda: _server_image(value["value"])
    return "value", None


def _server_image(b64: str) -> Any:
    """A base64 image the server returned; one over PIL's bomb limit is no frame rather than a failed result."""
    try:
        return decode_image(base64.b64decode(b64))
    except TooManyPixels:
        log.warning("the inference server returned an image too large to decode; the result has no frame")
        return None


def from_workflow_output(output: dict[str, Any], source_image: Any = None, frame_id: int | None = None,
                         timestamp: float | None = None, max_dimension: int | None = None,
                         draw: Callable[[], Any] | None = None) -> InferenceResult:
    """One in-process workflow output dict (sv.Detections, WorkflowImageData, plain values) → InferenceResult.
    draw: the workflow's drawing steps taken out of it (bot/backends/deferred.py), run if the frame is read."""
    return _convert(output, _read_in_process, source_image, frame_id, timestamp, max_dimension, draw)


def from_serialized_output(output: dict[str, Any], source_image: Any = None, frame_id: int | None = None,
                           timestamp: float | None = None, max_dimension: int | None = None,
                           seen: Callable[[Any], None] | None = None) -> InferenceResult:
    """One workflow output as the inference server serializes it (dict detections, base64 images) → InferenceResult.
    `seen` is handed the frame's decoded pixels, if it has a frame (a hosted pipeline's camera check reads them)."""
    return _convert(output, _read_serialized, source_image, frame_id, timestamp, max_dimension, seen=seen)


def _convert(
    output: dict[str, Any], read: Callable[[Any], tuple[str, Any]], source_image: Any, frame_id: int | None,
    timestamp: float | None, max_dimension: int | None, draw: Callable[[], Any] | None = None,
    seen: Callable[[Any], None] | None = None,
) -> InferenceResult:
    """`read` says what each output value is (detections, image, value) and how to load it.

    The frame is the output named "annotated", else the first image; other images are never decoded.
    """
    detections: dict[str, tuple[Detection, ...]] = {}
    frame_img = None
    values: dict[str, Any] = {}
    for name, value in output.items():
        kind, load = read(value)
        if kind == "detections":
            detections[name] = load()
        elif kind == "image":
            if frame_img is None or name == "annotated":
                frame_img = load()
        else:
            plain = _plain_value(value)
            if plain is not None:
                values[name] = plain
    if seen is not None and (frame_img is not None or source_image is not None):
        seen(frame_img if frame_img is not None else source_image)
    return _assemble(detections, values, frame_img, source_image, frame_id, timestamp, max_dimension, draw)


def _with_dwell(main: tuple[Detection, ...], other: tuple[Detection, ...]) -> tuple[Detection, ...]:
    """Seconds in zone from another detection output (a time_in_zone step) onto the main detections, by tracker id.

    A workflow whose zone output is separate from `predictions` would otherwise lose them to a bare count.
    """
    dwell = {d.tracker_id: d.time_in_zone for d in other if d.tracker_id is not None and d.time_in_zone is not None}
    if not dwell:
        return main
    return tuple(
        replace(d, time_in_zone=dwell[d.tracker_id]) if d.time_in_zone is None and d.tracker_id in dwell else d
        for d in main
    )


def _lazy_frame(frame_img: Any, source_image: Any, main: tuple[Detection, ...], max_dimension: int | None,
                draw: Callable[[], Any] | None = None) -> LazyJpeg | None:
    """The workflow's own annotated image (drawn now by `draw` when its drawing steps were deferred), else the source
    with `main` drawn on it: drawn and encoded when read."""
    if draw is not None:
        return LazyJpeg(lambda: encode_jpeg(draw(), max_dimension))
    if frame_img is not None:
        return LazyJpeg(lambda: encode_jpeg(frame_img, max_dimension))
    if source_image is not None:
        return LazyJpeg(lambda: encode_jpeg(draw_detections(source_image, main), max_dimension))
    return None


def from_model_response(response: dict[str, Any], source_image: Any = None, max_dimension: int | None = None) -> InferenceResult:
    """A plain model inference response (`/infer/object_detection`) → InferenceResult with a drawn frame."""
    dets = detections_from_json(response)
    return _assemble({"predictions": dets}, {}, None, source_image, None, None, max_dimension)


def _assemble(
    detections: dict[str, tuple[Detection, ...]],
    values: dict[str, Any],
    frame_img: Any,
    source_image: Any,
    frame_id: int | None,
    timestamp: float | None,
    max_dimension: int | None,
    draw: Callable[[], Any] | None = None,
) -> InferenceResult:
    # "predictions" is the main detection output; other detection outputs (e.g. line crossings) become counts.
    main_key = "predictions" if "predictions" in detections else next(iter(detections), None)
    main = detections.get(main_key, ()) if main_key else ()
    for name, dets in detections.items():
        if name != main_key:
            values[name] = {"count": len(dets), "tracker_ids": [d.tracker_id for d in dets if d.tracker_id is not None]}
            main = _with_dwell(main, dets)
    ref = frame_img if frame_img is not None else source_image
    size = (int(ref.shape[1]), int(ref.shape[0])) if ref is not None else None
    return InferenceResult(
        detections=main,
        values=values,
        frame=_lazy_frame(frame_img, source_image, main, max_dimension, draw),
        frame_id=frame_id,
        timestamp=timestamp if timestamp is not None else time.time(),
        image_size=size,
    )
