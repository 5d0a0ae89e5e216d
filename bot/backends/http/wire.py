"""What an inference server's pipeline API takes and answers: the start request, and errors as the SDK raises them."""

from __future__ import annotations

from typing import Any

MANAGER_DOWN = "ConnectivityError"  # inference's error_type when its pipeline API cannot reach its stream manager
# inference's error_types when its stream manager's answer broke off mid-way (it may have died while answering)
BROKEN_OFF = frozenset({"MalformedHeaderError", "TransmissionChannelClosed", "CommunicationProtocolError"})


def initialise_payload(launch: dict[str, Any]) -> dict[str, Any]:
    """The body of POST /inference_pipelines/initialise for HttpBackend._launch_args (the SDK's own start call
    cannot size the pipeline's queues; a server older than inference 1.x ignores those two fields)."""
    return {
        "video_configuration": {
            "type": "VideoConfiguration",
            "video_reference": launch["video_reference"],
            "max_fps": launch["max_fps"],
            "source_buffer_filling_strategy": launch["source_buffer_filling_strategy"],
            "source_buffer_consumption_strategy": launch["source_buffer_consumption_strategy"],
        },
        "processing_configuration": {
            "type": "WorkflowConfiguration",
            "workflow_specification": launch["workflow_specification"],
            "workflows_parameters": launch["workflows_parameters"],
        },
        "sink_configuration": {"type": "MemorySinkConfiguration", "results_buffer_size": launch["results_buffer_size"]},
        "decoding_buffer_size": launch["depth"],
        "predictions_queue_size": launch["depth"],
    }


def answer(status: int, body: Any) -> dict[str, Any]:
    """The body of a successful call; an error status raised as the SDK's HTTPCallErrorError (which
    HttpBackend.translate turns into a line a user can act on)."""
    if status < 400 and isinstance(body, dict):
        return body
    from inference_sdk.http.errors import HTTPCallErrorError

    message = str(body.get("message") or body)[:300] if isinstance(body, dict) else str(body)[:300]
    raise HTTPCallErrorError(description=message, status_code=status, api_message=message)


def manager_down(status: int, body: Any) -> bool:
    """Whether a pipeline call's answer says the server's stream manager is not running (it runs no pipelines)."""
    return status >= 500 and isinstance(body, dict) and body.get("error_type") == MANAGER_DOWN


def broken_off(status: int, body: Any) -> bool:
    """Whether a pipeline call's answer says the stream manager's reply broke off (asked again, it answers, or the
    server says it is down)."""
    return status >= 500 and isinstance(body, dict) and body.get("error_type") in BROKEN_OFF
