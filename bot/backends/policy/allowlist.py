"""Which workflow block types a spec may use: every block inference 1.8 loads, classified allowed or refused.

A spec comes from the model or a chat user, so it is untrusted. Allowed blocks compute on the frames and values
inside the workflow (models, trackers, analytics, transforms, visualizations, formatters). Refused blocks reach
outside it: secrets and environment, files on the host, outbound messages and uploads, third-party AI APIs
(they send frames and bill keys), shared caches. tests/bot/backends/test_block_allowlist.py fails when an
inference upgrade loads a block that is in neither list, so every new block gets classified by a person.
"""

from __future__ import annotations

from bot.backends.counting import FRAME_SCALE_BLOCK, LABELS_BLOCK, LINE_COUNTER_BLOCK, LINE_OVERLAY_BLOCK, TRACKER_BLOCK
from bot.backends.orientation import ORIENT_BLOCK
from bot.backends.workflows import BUILTIN_MODELS


def _v(name: str, *versions: int) -> tuple[str, ...]:
    """`roboflow_core/<name>@vN` for each listed version (explicit: a new version is not allowed by accident)."""
    return tuple(f"roboflow_core/{name}@v{n}" for n in versions)


MODELS = (
    *_v("roboflow_object_detection_model", 1, 2, 3),
    *_v("roboflow_instance_segmentation_model", 1, 2, 3, 4),
    *_v("roboflow_keypoint_detection_model", 1, 2, 3),
    *_v("roboflow_classification_model", 1, 2, 3),
    *_v("roboflow_multi_label_classification_model", 1, 2, 3),
    *_v("roboflow_semantic_segmentation_model", 1, 2),
    *_v("roboflow_action_recognition_model", 1), *_v("anomaly_detection_model", 1), *_v("embedding_model", 1),
    *_v("yolo_world_model", 1), *_v("clip", 1), *_v("clip_comparison", 1, 2), *_v("perception_encoder", 1),
    *_v("ocr_model", 1), *_v("easy_ocr", 1), *_v("pp_ocr", 1), *_v("glm_ocr", 1),
    *_v("barcode_detector", 1), *_v("qr_code_detector", 1),
    *_v("florence_2", 1, 2), *_v("qwen25vl", 1), *_v("qwen3vl", 1), *_v("qwen3_5vl", 1, 2), *_v("smolvlm2", 1),
    *_v("moondream2", 1), *_v("cosmos3_edge", 1), *_v("depth_estimation", 1), *_v("gaze", 1),
    *_v("segment_anything", 1), *_v("segment_anything_2_video", 1),
    *_v("sam3", 1, 2, 3), *_v("sam3_interactive", 1), *_v("sam3_video", 1),
    *BUILTIN_MODELS.values(),  # our offline OpenCV detectors (bot/backends/builtin/)
)
TRACKING_AND_ANALYTICS = (
    *_v("byte_tracker", 1, 2, 3), *_v("trackers_botsort", 1), *_v("trackers_bytetrack", 1),
    *_v("trackers_ocsort", 1), *_v("trackers_sort", 1), *_v("stabilize_detections", 1), *_v("track_class_lock", 1),
    *_v("line_counter", 1, 2), *_v("time_in_zone", 1, 2, 3), *_v("path_deviation_analytics", 1, 2),
    *_v("velocity", 1), *_v("overlap", 1), *_v("data_aggregator", 1), *_v("detection_event_log", 1),
    *_v("identify_changes", 1), *_v("identify_outliers", 1), *_v("cosine_similarity", 1),
    # Ours (bot/backends/builtin/line_counter.py): counts tracked boxes crossing a line, in memory only; each line
    # forgets ids after its window and keeps at most a fixed number, so a spec cannot make it grow without bound.
    LINE_COUNTER_BLOCK,
    # Ours (bot/backends/builtin/tracker.py): per-video tracks in memory, forgotten after their window and capped.
    TRACKER_BLOCK,
)
TRANSFORMS = (
    *_v("absolute_static_crop", 1), *_v("relative_statoic_crop", 1), *_v("dynamic_crop", 1),  # sic: "statoic"
    *_v("bounding_rect", 1), *_v("camera-calibration", 1), *_v("detection_offset", 1),
    *_v("detections_combine", 1), *_v("detections_filter", 1), *_v("detections_merge", 1),
    *_v("detections_transformation", 1), *_v("per_class_confidence_filter", 1), *_v("dynamic_zone", 1),
    *_v("geotag_detection", 1), *_v("image_slicer", 1, 2), *_v("perspective_correction", 1),
    *_v("qr_code_generator", 1), *_v("stitch_images", 1), *_v("stitch_ocr_detections", 1, 2),
    *_v("buffer", 1), *_v("detections_classes_replacement", 1), *_v("detections_consensus", 1),
    *_v("detections_difference", 1), *_v("detections_list_rollup", 1), *_v("detections_stitch", 1),
    *_v("dimension_collapse", 1), *_v("frame_delay", 1), *_v("image_stack", 1), *_v("overlap_analysis", 1),
    ORIENT_BLOCK,  # ours (bot/backends/builtin/orient.py): a quarter turn and/or a mirror of the frame, nothing kept
)
CLASSICAL_CV = (
    *_v("auto_rotate_on_edges", 1), *_v("background_subtraction", 1), *_v("camera_focus", 1, 2),
    *_v("contours_detection", 1), *_v("contrast_enhancement", 1), *_v("contrast_equalization", 1),
    *_v("convert_grayscale", 1), *_v("detections_nearest_neighbor", 1), *_v("distance_measurement", 1),
    *_v("dominant_color", 1), *_v("image_blur", 1), *_v("image_preprocessing", 1), *_v("mask_area_measurement", 1),
    *_v("mask_edge_snap", 1), *_v("morphological_transformation", 1, 2), *_v("motion_detection", 1),
    *_v("pixel_color_count", 1), *_v("sift", 1), *_v("sift_comparison", 1, 2), *_v("size_measurement", 1),
    *_v("template_matching", 1), *_v("threshold", 1),
)
VISUALIZATIONS = (
    *_v("anomaly_heatmap_visualization", 1), *_v("background_color_visualization", 1),
    *_v("blur_visualization", 1), *_v("bounding_box_visualization", 1), *_v("circle_visualization", 1),
    *_v("classification_label_visualization", 1), *_v("color_visualization", 1), *_v("corner_visualization", 1),
    *_v("crop_visualization", 1), *_v("dot_visualization", 1), *_v("ellipse_visualization", 1),
    *_v("grid_visualization", 1), *_v("halo_visualization", 1, 2), *_v("heatmap_visualization", 1),
    *_v("icon_visualization", 1), *_v("keypoint_visualization", 1), *_v("label_visualization", 1, 2),
    *_v("line_counter_visualization", 1), *_v("mask_visualization", 1), *_v("model_comparison_visualization", 1),
    *_v("pixelate_visualization", 1), *_v("polygon_visualization", 1, 2), *_v("polygon_zone_visualization", 1),
    *_v("reference_path_visualization", 1), *_v("rich_label_visualization", 1), *_v("text_display", 1),
    *_v("trace_visualization", 1), *_v("triangle_visualization", 1),
    LINE_OVERLAY_BLOCK,  # ours (bot/backends/builtin/line_overlay.py): draws on a copy of the frame, nothing kept
    FRAME_SCALE_BLOCK,  # ours (bot/backends/builtin/frame_scale.py): four numbers from the frame's width
    LABELS_BLOCK,  # ours (bot/backends/builtin/labels.py): draws on a copy of the frame, nothing kept
)
FORMATTERS_AND_FLOW = (
    *_v("expression", 1), *_v("property_definition", 1), *_v("first_non_empty_or_default", 1),
    *_v("json_parser", 1), *_v("csv_formatter", 1), *_v("string_template", 1), *_v("current_time", 1),
    *_v("vlm_as_classifier", 1, 2), *_v("vlm_as_detector", 1, 2),
    *_v("continue_if", 1), *_v("switch_case", 1), *_v("delta_filter", 1), *_v("rate_limiter", 1),
)
# Allowed only as an embedded, inline child (its steps are checked like the parent's): see policy/check.py.
INNER_WORKFLOW = "roboflow_core/inner_workflow@v1"

ALLOWED: frozenset[str] = frozenset(
    (*MODELS, *TRACKING_AND_ANALYTICS, *TRANSFORMS, *CLASSICAL_CV, *VISUALIZATIONS, *FORMATTERS_AND_FLOW,
     INNER_WORKFLOW)
)

_SECRETS = "reads the server's environment variables (API keys, Slack tokens)"
_FILES = "writes files on the host"
_OUTBOUND = "sends workflow data out of this bot"
_ROBOFLOW = "uploads images or results to the Roboflow platform with the operator's API key"
_THIRD_PARTY = "sends frames and prompts to a third-party AI API (with a key from the spec or the operator's)"
_CACHE = "reads or writes a cache shared with other workflows"

# Refused on purpose: block type -> why, quoted in the refusal so the operator can judge enabling it.
REFUSED: dict[str, str] = {
    **dict.fromkeys(_v("environment_secrets_store", 1), _SECRETS),
    **dict.fromkeys(_v("local_file_sink", 1), _FILES),
    **dict.fromkeys(_v("vision_event_bundle", 1), _FILES + " (event bundles)"),
    **dict.fromkeys(_v("webhook_sink", 1), _OUTBOUND + " (HTTP requests to any URL)"),
    **dict.fromkeys(_v("email_notification", 1, 2), _OUTBOUND + " (e-mail)"),
    **dict.fromkeys(_v("twilio_sms_notification", 1, 2), _OUTBOUND + " (SMS through Twilio)"),
    **dict.fromkeys(_v("slack_notification", 1), _OUTBOUND + " (Slack messages with a token from the spec)"),
    **dict.fromkeys(_v("s3_sink", 1), _OUTBOUND + " (uploads to S3)"),
    **dict.fromkeys(_v("onvif_sink", 1), _OUTBOUND + " (moves ONVIF PTZ cameras)"),
    **dict.fromkeys(
        (*_v("roboflow_dataset_upload", 1, 2), *_v("roboflow_custom_metadata", 1),
         *_v("model_monitoring_inference_aggregator", 1), *_v("roboflow_vision_events", 1),
         *_v("asset_library_attributes", 1), *_v("visual_search", 1), *_v("visual_search_classifier", 1)),
        _ROBOFLOW,
    ),
    **dict.fromkeys(
        (*_v("anthropic_claude", 1, 2, 3, 4, 5), *_v("open_ai", 1, 2, 3, 4, 5, 6, 7), *_v("google_gemini", 1, 2, 3, 4, 5, 6),
         *_v("google_gemma", 1, 2, 3, 4), *_v("google_vision_ocr", 1), *_v("openrouter", 1, 2, 3),
         *_v("kimi_openrouter", 1, 2, 3), *_v("llama_3_2_vision", 1), *_v("llama_vision", 2), *_v("meta_vlm", 1, 2, 3),
         *_v("mistral_vlm", 1), *_v("qwen_vlm", 1, 2, 3, 4), *_v("qwen3_5_openrouter", 1), *_v("qwen3_6_openrouter", 1),
         *_v("spacexai", 1, 2, 3), *_v("zai_vlm", 1, 2), *_v("lmm", 1), *_v("lmm_for_classification", 1),
         *_v("cog_vlm", 1), *_v("seg-preview", 1), *_v("stability_ai_image_gen", 1), *_v("stability_ai_inpainting", 1),
         *_v("stability_ai_outpainting", 1)),
        _THIRD_PARTY,
    ),
    **dict.fromkeys(_v("openai_compatible", 1), _THIRD_PARTY + " at any URL"),
    **dict.fromkeys(_v("cache_get", 1) + _v("cache_set", 1), _CACHE),
}

# Legacy short names manifests accept (`type: Literal["roboflow_core/x@v1", "X"]`) -> the canonical type.
ALIASES: dict[str, str] = {
    "AbsoluteStaticCrop": "roboflow_core/absolute_static_crop@v1",
    "BackgroundColorVisualization": "roboflow_core/background_color_visualization@v1",
    "BarcodeDetector": "roboflow_core/barcode_detector@v1",
    "BarcodeDetection": "roboflow_core/barcode_detector@v1",
    "BlurVisualization": "roboflow_core/blur_visualization@v1",
    "BoundingBoxVisualization": "roboflow_core/bounding_box_visualization@v1",
    "Buffer": "roboflow_core/buffer@v1",
    "CircleVisualization": "roboflow_core/circle_visualization@v1",
    "ClipComparison": "roboflow_core/clip_comparison@v1",
    "CogVLM": "roboflow_core/cog_vlm@v1",
    "ColorVisualization": "roboflow_core/color_visualization@v1",
    "ContinueIf": "roboflow_core/continue_if@v1",
    "CornerVisualization": "roboflow_core/corner_visualization@v1",
    "CropVisualization": "roboflow_core/crop_visualization@v1",
    "DetectionOffset": "roboflow_core/detection_offset@v1",
    "DetectionsClassesReplacement": "roboflow_core/detections_classes_replacement@v1",
    "DetectionsConsensus": "roboflow_core/detections_consensus@v1",
    "DetectionsDifference": "roboflow_core/detections_difference@v1",
    "DetectionsFilter": "roboflow_core/detections_filter@v1",
    "DetectionsListRollUp": "roboflow_core/detections_list_rollup@v1",
    "DetectionsTransformation": "roboflow_core/detections_transformation@v1",
    "DimensionCollapse": "roboflow_core/dimension_collapse@v1",
    "DotVisualization": "roboflow_core/dot_visualization@v1",
    "DynamicCrop": "roboflow_core/dynamic_crop@v1",
    "Crop": "roboflow_core/dynamic_crop@v1",
    "DynamicZone": "roboflow_core/dynamic_zone@v1",
    "EasyOCR": "roboflow_core/easy_ocr@v1",
    "EllipseVisualization": "roboflow_core/ellipse_visualization@v1",
    "Expression": "roboflow_core/expression@v1",
    "FirstNonEmptyOrDefault": "roboflow_core/first_non_empty_or_default@v1",
    "FrameDelay": "roboflow_core/frame_delay@v1",
    "roboflow_core/time_travel@v1": "roboflow_core/frame_delay@v1",
    "TimeTravel": "roboflow_core/frame_delay@v1",
    "HaloVisualization": "roboflow_core/halo_visualization@v1",
    "HeatmapVisualization": "roboflow_core/heatmap_visualization@v1",
    "IconVisualization": "roboflow_core/icon_visualization@v1",
    "KeypointVisualization": "roboflow_core/keypoint_visualization@v1",
    "LabelVisualization": "roboflow_core/label_visualization@v1",
    "LMM": "roboflow_core/lmm@v1",
    "LMMForClassification": "roboflow_core/lmm_for_classification@v1",
    "MaskVisualization": "roboflow_core/mask_visualization@v1",
    "OCRModel": "roboflow_core/ocr_model@v1",
    "OpenAI": "roboflow_core/open_ai@v1",
    "OverlapAnalysis": "roboflow_core/overlap_analysis@v1",
    "PerspectiveCorrection": "roboflow_core/perspective_correction@v1",
    "PixelateVisualization": "roboflow_core/pixelate_visualization@v1",
    "PolygonVisualization": "roboflow_core/polygon_visualization@v1",
    "PropertyDefinition": "roboflow_core/property_definition@v1",
    "PropertyExtraction": "roboflow_core/property_definition@v1",
    "QRCodeDetector": "roboflow_core/qr_code_detector@v1",
    "QRCodeDetection": "roboflow_core/qr_code_detector@v1",
    "QRCodeGenerator": "roboflow_core/qr_code_generator@v1",
    "RelativeStaticCrop": "roboflow_core/relative_statoic_crop@v1",
    "RoboflowClassificationModel": "roboflow_core/roboflow_classification_model@v1",
    "ClassificationModel": "roboflow_core/roboflow_classification_model@v1",
    "RoboflowCustomMetadata": "roboflow_core/roboflow_custom_metadata@v1",
    "RoboflowDatasetUpload": "roboflow_core/roboflow_dataset_upload@v1",
    "RoboflowInstanceSegmentationModel": "roboflow_core/roboflow_instance_segmentation_model@v1",
    "InstanceSegmentationModel": "roboflow_core/roboflow_instance_segmentation_model@v1",
    "RoboflowKeypointDetectionModel": "roboflow_core/roboflow_keypoint_detection_model@v1",
    "KeypointsDetectionModel": "roboflow_core/roboflow_keypoint_detection_model@v1",
    "RoboflowMultiLabelClassificationModel": "roboflow_core/roboflow_multi_label_classification_model@v1",
    "MultiLabelClassificationModel": "roboflow_core/roboflow_multi_label_classification_model@v1",
    "RoboflowObjectDetectionModel": "roboflow_core/roboflow_object_detection_model@v1",
    "ObjectDetectionModel": "roboflow_core/roboflow_object_detection_model@v1",
    "SwitchCase": "roboflow_core/switch_case@v1",
    "TriangleVisualization": "roboflow_core/triangle_visualization@v1",
    "YoloWorldModel": "roboflow_core/yolo_world_model@v1",
    "YoloWorld": "roboflow_core/yolo_world_model@v1",
}

# Refused blocks inference itself also gates by a process flag: the flag follows the operator's opt-in.
NEEDS_ENV_ACCESS = frozenset(_v("environment_secrets_store", 1))
NEEDS_LOCAL_STORAGE = frozenset(_v("local_file_sink", 1) + _v("vision_event_bundle", 1))


def canonical(block_type: str) -> str:
    """The canonical `namespace/name@vN` for a step type (legacy short names resolved)."""
    return ALIASES.get(block_type, block_type)
