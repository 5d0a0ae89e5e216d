"""WebRtcBackend: pipelines over WebRTC to an inference server; single images, blocks and validation as the http backend."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from bot.backends.base import BackendError, PipelineHandle, ResultListener, WorkflowRef
from bot.backends.http.backend import HttpBackend
from bot.backends.http.servers import ServerPool
from bot.backends.webrtc.pipeline import WebRtcPipeline
from bot.backends.workflows import describe_spec
from bot.media.redaction import redact
from bot.media.sources import file_fps, is_live

ENDPOINT = "/initialise_webrtc_worker"


def webrtc_source(reference: str, max_fps: float | None) -> Any:
    """The SDK source for a reference: the server pulls RTSP / MJPEG itself; a webcam or a file is sent from here."""
    from inference_sdk.webrtc.sources import MJPEGSource, RTSPSource, VideoFileSource, WebcamSource

    ref = str(reference).strip()
    low = ref.lower()
    if ref.isdigit():
        return WebcamSource(int(ref))
    if low.startswith(("rtsp://", "rtsps://")):
        return RTSPSource(ref)
    if low.startswith(("http://", "https://")):
        return MJPEGSource(ref)
    if is_live(ref):
        raise BackendError(f"the webrtc backend cannot open {redact(ref)}: give an rtsp:// or http(s) MJPEG URL, "
                           "a webcam index or a video file")
    path = Path(ref.removeprefix("file://")).expanduser()
    if not path.is_file():
        raise BackendError(f"video file not found: {redact(ref)}: check the path")
    # A file is uploaded to the server; with max_fps it plays at its own frame rate, as a camera would
    return VideoFileSource(str(path), realtime_processing=max_fps is not None)


class WebRtcBackend(HttpBackend):
    """InferenceBackend whose pipelines stream over WebRTC (inference_sdk's `client.webrtc.stream`)."""

    name = "webrtc"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._serves_webrtc: dict[str, bool] = {}
        # A server's pipeline list does not show its WebRTC workers: the sessions open from here count as its load.
        self.servers = ServerPool(self.servers.urls, self._request, held=self._sessions_on)

    def _sessions_on(self, url: str) -> int:
        return sum(1 for p in self._pipelines.values() if isinstance(p, WebRtcPipeline) and p.url == url and p.is_alive())

    async def check_webrtc(self, url: str) -> None:
        """One line when the server has no WebRTC endpoint (asked once; an unreachable server says so itself)."""
        if url not in self._serves_webrtc:
            # An empty offer: the route refuses it (422) without spawning a worker; without the route it is 404/405
            status, _ = await self._call("the WebRTC check", self._request, "POST", ENDPOINT, {}, url=url)
            self._serves_webrtc[url] = status not in (404, 405)
        if not self._serves_webrtc[url]:
            raise BackendError(
                f"the inference server at {url} does not serve WebRTC (no {ENDPOINT}; its WEBRTC_WORKER_ENABLED "
                "may be off): run `vision-agent inference-server`, or set VISION_AGENT_BACKEND=http"
            )

    def _open(self, url: str, source: Any, spec: dict, parameters: dict | None) -> Any:
        """A WebRTC session on the server (not yet connected); every workflow output comes on the data channel."""
        from inference_sdk.webrtc.client import WebRTCClient
        from inference_sdk.webrtc.config import StreamConfig

        warnings.filterwarnings("ignore", module=r"inference_sdk(\..*)?")
        outputs = [str(o.get("name")) for o in spec.get("outputs") or [] if isinstance(o, dict) and o.get("name")]
        client = WebRTCClient(url, self._api_key, api_key_transport="both")
        config = StreamConfig(data_output=outputs, workflow_parameters=dict(parameters or {}))
        return client.stream(source=source, workflow=spec, config=config)

    async def _start(
        self, pipeline_id: str, name: str, video_reference: str, ref: WorkflowRef,
        max_fps: float | None, parameters: dict | None, on_result: ResultListener | None,
    ) -> PipelineHandle:
        named, what = await self._pipeline_spec(ref)
        source = webrtc_source(video_reference, max_fps)
        spec = named["specification"]
        monitoring = self._settings.monitoring
        async with self.servers.placed() as url:  # by load, as the http backend places its pipelines
            await self.check_webrtc(url)
            pipe = WebRtcPipeline(pipeline_id, name, video_reference, describe_spec(spec), monitoring.result_buffer_size,
                                  monitoring.result_image_max_dimension, on_result, url)
            pipe.server = self.servers.label(url) if self.servers.several else None  # status lines say where
            # a camera at its cap; a file with fps= plays in real time at its own rate (webrtc_source)
            pipe.pace.target = max_fps if is_live(video_reference) or max_fps is None else (
                file_fps(video_reference) or max_fps)
            self._pipelines[pipeline_id] = pipe
        pipe.start(lambda: self._open(url, source, spec, parameters),
                   lambda exc: self._explain(exc, what, pipe.safe_reference))
        return pipe.handle()

    def _explain(self, exc: BaseException, what: str, reference: str) -> str:
        """One line for a session that could not start (the SDK's own message spans lines and names the endpoint)."""
        message = str(exc)
        if ENDPOINT in message or "WebRTC session" in message:
            response = getattr(exc, "response", None) or getattr(exc.__cause__, "response", None)
            status = getattr(response, "status_code", None) or "?"
            return (f"the inference server could not start the WebRTC stream of {reference} (HTTP {status}): "
                    "check that the server can open that camera or file and see its log")
        return str(self.translate(exc, what))

    # A WebRTC session ends with its peer: after a restart the pipeline is started again, never adopted; nor is it
    # moved when its server stops answering (it ends as `error`, saying so).
    def server_id(self, pipeline_id: str) -> str | None:
        return None

    def server_of(self, pipeline_id: str) -> str | None:
        return None

    def carried(self, pipeline_id: str) -> dict[str, float]:
        return {}

    async def adopt_pipeline(self, *args: Any, **kwargs: Any) -> PipelineHandle | None:
        return None
