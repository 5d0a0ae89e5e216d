"""Block parameters that size intermediate images stay under `media.max_pixels`, checked before anything runs.

An allowed block can still be asked to allocate without bound: a resize to 12000x12000 grew memory by 826 MiB, a
slicer with tiny overlapping tiles feeds the model thousands of crops. Each sizing parameter is read from the spec
(a literal, or a workflow input's value: the run's parameters, else its default); one fed by another step's output
cannot be checked before the run, so it is refused. Where the size follows the frame (slicer tiles, crop scaling,
frames held), the frame is taken as a camera's main stream, REFERENCE_FRAME: a 4K stream may use four times as much.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from bot.backends.policy.allowlist import INNER_WORKFLOW, canonical

REFERENCE_FRAME = (1920, 1080)
MAX_FILTER_SIDE = 31  # image_blur's kernel: typical values are 3-15; a bilateral 31 takes ~5 s a 1080p frame (99: 40 s)
_FRAME_PIXELS = REFERENCE_FRAME[0] * REFERENCE_FRAME[1]
LABEL_CHARS = 12  # "person 0.87": a label's usual length, for the size of the text a font draws
MODEL_INPUT = (640, 640)  # what a detection model resizes each tile to (Roboflow's usual input size)


class _Unknown(Exception):
    """A sizing parameter whose value only the run knows (another step's output)."""


def _mp(pixels: float) -> str:
    return f"{pixels / 1e6:.0f} MP" if pixels >= 10e6 else f"{pixels / 1e6:.1f} MP"


def _number(step: dict[str, Any], field: str, default: Any, *, inputs: dict[str, Any], raw: bool = False) -> Any:
    """The step's value of `field` as a number (a workflow input's value looked up); `raw`: as written."""
    value = step.get(field, default)
    if isinstance(value, str) and value.startswith("$inputs."):
        value = inputs.get(value.removeprefix("$inputs."), default)
    if raw:
        return value
    if isinstance(value, str) and value.startswith("$"):
        raise _Unknown(field)
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            value = float(value)
        except (TypeError, ValueError):
            return default  # not a number: inference's own validation says so
    return float(value) if math.isfinite(value) else default


Sizer = Callable[[Callable[..., Any]], tuple[float, str]]


def _area(w_field: str, h_field: str, default: float, what: str) -> Sizer:
    def size(get: Callable[[str, float], float]) -> tuple[float, str]:
        w, h = get(w_field, default), get(h_field, default)
        return w * h, f"{what} of {w:.0f}x{h:.0f}"
    return size


def _resize(get: Callable[..., Any]) -> tuple[float, str]:
    """image_preprocessing: a resize to width x height; given one side, the other follows the image's shape, which
    is not known before the run (a 200x200000 image is 40 MP), so the output is unbounded: both sides are asked for."""
    task = get("task_type", "resize", raw=True)
    if isinstance(task, str) and task != "resize" and not task.startswith("$"):
        return 0.0, "no resize"  # rotate or flip: about the input's own size
    w, h = get("width", math.nan), get("height", math.nan)
    if math.isnan(w) or math.isnan(h):
        return math.inf, ("a resize with only one side given (the other follows the image's shape, so its size "
                          "cannot be checked before it runs): give both width and height")
    return w * h, f"a resize of {w:.0f}x{h:.0f}"


def _tiles(get: Callable[[str, float], float]) -> tuple[float, str]:
    """All tiles a slicer cuts from one reference frame: each is resized to the model's input (MODEL_INPUT at least)."""
    sw, sh = max(get("slice_width", 640), 1), max(get("slice_height", 640), 1)
    ow, oh = (min(max(get(f, 0.2), 0.0), 0.99) for f in ("overlap_ratio_width", "overlap_ratio_height"))
    fw, fh = REFERENCE_FRAME
    sw, sh = min(sw, fw), min(sh, fh)
    across = math.ceil((fw - sw) / max(sw - int(ow * sw), 1)) + 1
    down = math.ceil((fh - sh) / max(sh - int(oh * sh), 1)) + 1
    each = max(sw * sh, MODEL_INPUT[0] * MODEL_INPUT[1])
    return across * down * each, (f"{across * down} tiles of {sw:.0f}x{sh:.0f} from a {fw}x{fh} frame, each "
                                  f"{MODEL_INPUT[0]}x{MODEL_INPUT[1]} or more at the model")


def _crop_scale(get: Callable[[str, float], float]) -> tuple[float, str]:
    scale = get("scale_factor", 2.0)
    return scale * scale * _FRAME_PIXELS, f"crops scaled {scale:g}x (up to a whole {REFERENCE_FRAME[0]}x{REFERENCE_FRAME[1]} frame)"


def _held(field: str) -> Sizer:
    def size(get: Callable[[str, float], float]) -> tuple[float, str]:
        frames = get(field, 1)
        return frames * _FRAME_PIXELS, f"{frames:.0f} frames held in memory ({field})"
    return size


def _kernel(field: str, default: float, radius: bool = False) -> Sizer:
    """A square structuring element the block allocates (side = the value, or 2*value+1 for a radius)."""
    def size(get: Callable[[str, float], float]) -> tuple[float, str]:
        value = get(field, default)
        side = 2 * value + 1 if radius else value
        return side * side, f"a {side:.0f}x{side:.0f} kernel ({field})"
    return size


def _filter(field: str, default: float) -> Sizer:
    """A kernel every pixel of every frame is filtered with (image_blur): its pixels are few, but a bilateral filter's
    work grows with the kernel's area per pixel (a 2001-wide one ran for minutes on a 640x480 image, holding a
    thread Python cannot stop), so the side is bounded by MAX_FILTER_SIDE instead of max_pixels."""
    def size(get: Callable[[str, float], float]) -> tuple[float, str]:
        side = get(field, default)
        return (math.inf if side > MAX_FILTER_SIDE else 0.0), (f"a {side:.0f}x{side:.0f} filter kernel ({field}) over "
                                                              f"every pixel, at most {MAX_FILTER_SIDE} a side: ask "
                                                              "for a smaller size")
    return size


def _font(field: str, default: float) -> Sizer:
    """A label drawn by PIL renders each text as a mask about 1.2 x size high and 0.6 x size a character wide: a
    label of LABEL_CHARS characters (a font of 8000 grew the bot by 146 MB, bounded only by PIL's own bomb limit)."""
    def size(get: Callable[..., Any]) -> tuple[float, str]:
        pt = get(field, default)
        return 1.2 * pt * 0.6 * pt * LABEL_CHARS, f"text masks of a {pt:.0f} pt font ({field})"
    return size


def _qr(get: Callable[[str, float], float]) -> tuple[float, str]:
    side = (177 + 2 * get("border", 4)) * 10  # the largest QR version, 10 px a module (fixed by the block)
    return side * side, f"a QR code image of up to {side:.0f}x{side:.0f} (border)"


SIZERS: dict[str, Sizer] = {
    "roboflow_core/image_preprocessing@v1": _resize,
    "roboflow_core/perspective_correction@v1": _area("transformed_rect_width", "transformed_rect_height", 1000,
                                                     "a corrected image"),
    "roboflow_core/grid_visualization@v1": _area("width", "height", 2560, "a grid image"),
    "roboflow_core/icon_visualization@v1": _area("icon_width", "icon_height", 64, "an icon"),
    "roboflow_core/image_slicer@v1": _tiles,
    "roboflow_core/image_slicer@v2": _tiles,
    "roboflow_core/crop_visualization@v1": _crop_scale,
    "roboflow_core/frame_delay@v1": _held("offset"),
    "roboflow_core/morphological_transformation@v1": _kernel("kernel_size", 5),
    "roboflow_core/morphological_transformation@v2": _kernel("kernel_size", 5),
    "roboflow_core/motion_detection@v1": _kernel("morphological_kernel_size", 3),
    "roboflow_core/mask_edge_snap@v1": _kernel("boundary_band_width", 15, radius=True),
    "roboflow_core/qr_code_generator@v1": _qr,
    "roboflow_core/image_blur@v1": _filter("kernel_size", 5),
    "roboflow_core/rich_label_visualization@v1": _font("font_size", 14),
}


def _steps(spec: dict[str, Any], prefix: str = "", depth: int = 0) -> Iterator[tuple[str, dict, dict]]:
    """(name, step, the spec it belongs to) for every step, inner workflows' too."""
    for i, step in enumerate(spec.get("steps") or []):
        if not isinstance(step, dict):
            continue
        name = prefix + str(step.get("name", f"#{i + 1}"))[:80]
        yield name, step, spec
        inner = step.get("workflow_definition")
        if canonical(str(step.get("type"))) == INNER_WORKFLOW and isinstance(inner, dict) and depth < 8:
            yield from _steps(inner, f"{name}/", depth + 1)


def _input_values(spec: dict[str, Any], parameters: dict[str, Any] | None) -> dict[str, Any]:
    values = {i["name"]: i.get("default_value") for i in spec.get("inputs") or []
              if isinstance(i, dict) and isinstance(i.get("name"), str) and "default_value" in i}
    return values | {k: v for k, v in (parameters or {}).items() if isinstance(k, str)}


def check_sizes(spec: Any, max_pixels: int, parameters: dict[str, Any] | None = None) -> list[str]:
    """One line per step whose sizing parameters would make an image (or tiles, or held frames) over max_pixels."""
    if not isinstance(spec, dict):
        return []
    problems = []
    for name, step, owner in _steps(spec):
        kind = canonical(str(step.get("type")))
        sizer = SIZERS.get(kind)
        if sizer is None:
            continue
        values = _input_values(owner, parameters if owner is spec else None)
        try:
            pixels, what = sizer(partial(_number, step, inputs=values))
        except _Unknown as unknown:
            problems.append(f"step {name!r} takes its `{unknown}` from another step, so its image size cannot be "
                            f"checked before it runs: give a number or a workflow input")
            continue
        if math.isinf(pixels):  # not bounded by max_pixels: `what` names its own bound and the remedy
            problems.append(f"step {name!r} ({kind.split('/')[-1]}) asks for {what}")
        elif pixels > max_pixels:
            problems.append(f"step {name!r} ({kind.split('/')[-1]}) asks for {what}, {_mp(pixels)}; the limit is "
                            f"{_mp(max_pixels)} (media.max_pixels): ask for a smaller size")
    return problems
