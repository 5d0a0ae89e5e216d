"""Labels and sizes drawn on frames: "person 0.87 #12" kept whole inside the frame, text sized to its width.

No inference import here: bot/backends/imaging.py draws a backend's detections with the same labels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import supervision as sv

MIN_TEXT_SCALE = 0.35  # Hershey text ~8 px high: the smallest still read in a Slack preview


def drawing_sizes(width: int) -> dict[str, float | int]:
    """Label text scale / thickness / padding and box thickness for a frame `width` pixels wide.

    0.4 at 640 px (supervision's 0.5 looked heavy there), 1.2 at 1920; never under MIN_TEXT_SCALE.
    """
    scale = round(max(MIN_TEXT_SCALE, width / 1600), 2)
    return {"text_scale": scale, "text_thickness": max(1, round(scale * 1.6)),
            "text_padding": max(2, round(scale * 10)), "thickness": max(1, round(width / 400))}


def label_text(class_name: Any, confidence: Any = None, tracker_id: Any = None) -> str:
    """'person 0.87 #12': what it is, how sure, and the id alerts name it by (the parts that are known)."""
    parts = [str(class_name) if class_name is not None else "object"]
    if confidence is not None:
        parts.append(f"{float(confidence):.2f}")
    if tracker_id is not None and int(tracker_id) >= 0:
        parts.append(f"#{int(tracker_id)}")
    return " ".join(parts)


class _InsideLabels(sv.LabelAnnotator):
    """supervision's smart_position snaps a label's right/bottom edge onto the frame's width/height, but the
    background is drawn through that pixel column (row) too, one past the frame: snap inside a frame one smaller."""

    def _adjust_labels_in_frame(self, resolution_wh: tuple[int, int], labels: list[str], label_properties: Any) -> Any:
        width, height = resolution_wh
        return super()._adjust_labels_in_frame((width - 1, height - 1), labels, label_properties)


def draw_labels(scene: np.ndarray, detections: sv.Detections, texts: list[str]) -> np.ndarray:
    """One label per detection above its box, whole inside the frame, text sized to it; drawn on scene in place."""
    if len(detections) == 0:
        return scene
    sizes = drawing_sizes(int(scene.shape[1]))
    annotator = _InsideLabels(
        color=sv.ColorPalette.DEFAULT, color_lookup=sv.ColorLookup.CLASS,  # as bounding_box_visualization colours
        text_scale=float(sizes["text_scale"]), text_thickness=int(sizes["text_thickness"]),
        text_padding=int(sizes["text_padding"]), smart_position=True)
    if detections.class_id is None:  # colours follow the class: boxes from a bare detector still get one colour
        detections = sv.Detections(xyxy=detections.xyxy, confidence=detections.confidence,
                                   class_id=np.zeros(len(detections), dtype=int), tracker_id=detections.tracker_id)
    return annotator.annotate(scene=scene, detections=detections, labels=texts)
