"""HttpBackend: an inference server through inference-sdk (single images, workflows, hosted pipelines)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

from bot.backends.base import BackendError, InferenceResult, PipelineHandle, ResultListener, WorkflowRef
from bot.backends.convert import from_model_response, from_serialized_output
from bot.backends.direct.frames import queue_depth
from bot.backends.errors import OFFLINE_HINT, problems_from_block_errors, shorten_problem
from bot.backends.http.failover import CONSUME_TIMEOUT, ServerSilent, StreamManagerDown, unreachable
from bot.backends.http.pipeline import HostedPipeline
from bot.backends.http.servers import ServerPool
from bot.backends.http.wire import answer, broken_off, initialise_payload, manager_down
from bot.backends.policy import check_spec
from bot.backends.shared import BackendBase, fetch_saved_workflow, inline_spec, refuse_unsafe
from bot.backends.workflows import describe_spec, is_builtin, roboflow_model_id
from bot.config import Settings
from bot.media.reach import is_loopback
from bot.media.sources import buffer_strategies, capture_reference, is_live

LAUNCH_TIMEOUT = 60.0  # seconds a server may take to start a pipeline (it spawns a process for it)


class HttpBackend(BackendBase):
    """InferenceBackend talking to an inference server (`vision-agent inference-server`, Docker, or hosted)."""

    name = "http"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.url = settings.inference.server_url.rstrip("/")
        key = settings.inference.api_key
        self._api_key = key.get_secret_value() if key else None
        self._timeout = settings.inference.request_timeout
        self.servers = ServerPool(settings.inference.server_urls or [self.url], self._request)

    # --- plumbing ------------------------------------------------------------------------------------------------

    def client(self, url: str | None = None) -> Any:
        """A fresh InferenceHTTPClient for `url` (default: the first server); configuration is per client, so one per
        call keeps threads apart."""
        import warnings

        from inference_sdk import InferenceConfiguration, InferenceHTTPClient

        warnings.filterwarnings("ignore", module=r"inference_sdk(\..*)?")
        client = InferenceHTTPClient(api_url=url or self.url, api_key=self._api_key)
        client.configure(InferenceConfiguration(api_key_transport="header"))
        return client

    def unreachable(self, url: str | None = None) -> BackendError:
        return BackendError(
            f"inference server at {url or self.url} is not reachable: start it with `vision-agent inference-server` "
            "or set INFERENCE_SERVER_URL"
        )

    def consume(self, url: str, pipeline_id: str) -> dict[str, Any]:
        """The server-side pipeline's next results (the SDK's consume call has no timeout: a server that accepts
        and never answers would hold the poller for good; here that is ServerSilent, which moves the pipeline)."""
        import requests

        timeout = min(self._timeout, CONSUME_TIMEOUT)
        try:
            status, body = self._request("GET", f"/inference_pipelines/{quote(pipeline_id, safe='')}/consume",
                                         {"excluded_fields": []}, url=url, timeout=timeout)
        except requests.Timeout as exc:
            raise ServerSilent(f"{url} accepted the connection but sent no results within {timeout:.0f}s") from exc
        cut = broken_off(status, body)  # the manager's reply was cut short: it died while answering, or a blip
        if manager_down(status, body) or cut and self.servers.manager_down(url):
            # its pipelines are gone with it: moved like those of a server that died
            raise StreamManagerDown(f"{url} answers, but its stream manager does not")
        return {} if cut else answer(status, body)  # cut short by a manager that still runs: the poller asks again

    def translate(self, exc: BaseException, what: str, url: str | None = None) -> BackendError:
        """SDK / requests exceptions → a BackendError a user can act on (`url`: the server it was about)."""
        if isinstance(exc, BackendError):
            return exc
        names = {c.__name__ for c in type(exc).__mro__}
        if isinstance(exc, StreamManagerDown) or "InferencePipeline Manager" in str(getattr(exc, "api_message", "")):
            return BackendError(f"the inference server at {url or self.url} runs no pipelines: its stream manager is "
                                "not running; restart `vision-agent inference-server` (its output says why)")
        if unreachable(exc):
            return self.unreachable(url)
        if names & {"ReadTimeout", "TimeoutError"}:
            return BackendError(f"inference server at {url or self.url} did not answer within {self._timeout:.0f}s: retry later")
        message = str(getattr(exc, "api_message", None) or exc)
        if "Could not connect to Roboflow API" in message or "Roboflow API" in message and "connect" in message:
            return BackendError(f"could not reach Roboflow to load {what}: {OFFLINE_HINT}")
        status = getattr(exc, "status_code", None)
        if status in (401, 403):
            return BackendError(f"the inference server refused {what}: set ROBOFLOW_API_KEY to a valid key")
        if status == 404 and "not found" in message.lower():
            return BackendError(f"{what} was not found: check the id")
        return BackendError(f"{what} failed on the inference server: {shorten_problem(message)}")

    async def _call(self, what: str, fn: Any, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """Run a blocking SDK call in a thread, bounded by a timeout, with errors translated."""
        try:
            return await asyncio.wait_for(asyncio.to_thread(fn, *args, **kwargs), timeout or self._timeout)
        except TimeoutError:
            raise BackendError(f"inference server at {self.url} did not answer within {timeout or self._timeout:.0f}s: retry later") from None
        except Exception as exc:  # noqa: BLE001
            raise self.translate(exc, what) from exc

    def _request(
        self, method: str, path: str, body: Any = None, url: str | None = None, timeout: float | None = None
    ) -> tuple[int, Any]:
        """(HTTP status, JSON body) of one call to a server (default: the first), the key as a bearer header;
        requests' exceptions pass through (a timeout, a refused connection)."""
        import requests

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        resp = requests.request(method, f"{url or self.url}{path}", json=body, headers=headers,
                                timeout=timeout or self._timeout)
        try:
            return resp.status_code, resp.json()
        except ValueError:
            return resp.status_code, {"message": resp.text[:300]}

    def resolve(self, ref: WorkflowRef, video: bool) -> tuple[dict[str, Any], str]:
        """(kwargs naming the workflow for the SDK, what-for-errors); safety-checks inline specs."""
        spec, what = inline_spec(ref, video, self._settings.inference.motion_gate)
        if spec is None:
            return {"workspace_name": ref.workspace_name, "workflow_id": ref.workflow_id}, what
        refuse_unsafe(spec, self._settings)
        return {"specification": spec}, what

    async def _to_run(self, ref: WorkflowRef, video: bool) -> tuple[dict[str, Any], str]:
        """resolve(), with a saved workflow fetched here and sent inline: the server would run whatever blocks it
        holds, so it passes the block policy like any other spec (as the direct backend's does)."""
        named, what = self.resolve(ref, video)
        if "specification" not in named:
            spec = await self._call(what, fetch_saved_workflow, self._settings, ref.workspace_name, ref.workflow_id)
            named = {"specification": spec}
        return named, what

    # --- single images -------------------------------------------------------------------------------------------

    async def _run_frame(self, frame: Any, ref: WorkflowRef, parameters: dict | None) -> InferenceResult:
        max_dim = self._settings.monitoring.result_image_max_dimension
        if ref.model_id and ref.workflow_spec is None and not ref.workflow_id and not is_builtin(ref.model_id):
            return await self._infer_model(frame, ref.model_id, ref.confidence, max_dim)
        named, what = await self._to_run(ref, video=False)
        client = self.client()
        outputs = await self._call(what, client.run_workflow, images={"image": frame}, parameters=parameters, **named)
        if not outputs:
            return InferenceResult(image_size=(frame.shape[1], frame.shape[0]))
        return from_serialized_output(outputs[0], source_image=frame, max_dimension=max_dim)

    async def _infer_model(self, frame: Any, model_id: str, confidence: float | None, max_dim: int | None) -> InferenceResult:
        from inference_sdk import InferenceConfiguration

        client = self.client()
        if confidence is not None:
            client.configure(InferenceConfiguration(api_key_transport="header", confidence_threshold=confidence))
        response = await self._call(f"model {model_id}", client.infer, frame, model_id=roboflow_model_id(model_id))
        return from_model_response(response if isinstance(response, dict) else response[0], frame, max_dim)

    # --- blocks and validation -----------------------------------------------------------------------------------

    async def describe_blocks(self) -> list[dict[str, Any]]:
        status, body = await self._call("block description", self._request, "POST", "/workflows/blocks/describe", {})
        if status != 200:
            raise BackendError(f"the inference server could not describe its blocks (HTTP {status}): retry later")
        return list(body.get("blocks") or [])

    async def validate_workflow(self, spec: dict) -> list[str]:
        return check_spec(spec, self._settings.inference, self._settings.media.max_pixels) or await self._server_problems(spec)

    async def _server_problems(self, spec: dict) -> list[str]:
        status, body = await self._call("validation", self._request, "POST", "/workflows/validate", spec)
        if status == 200:
            return []
        return problems_from_block_errors(str(body.get("message") or body), body.get("blocks_errors"))

    # --- hosted pipelines ----------------------------------------------------------------------------------------

    def server_is_local(self) -> bool:
        return is_loopback(urlparse(self.url).hostname or "")

    def _hosted(
        self, pipeline_id: str, name: str, reference: str, named: dict, what: str, on_result: ResultListener | None
    ) -> Any:
        """A new HostedPipeline in the table, described by its spec (or by the saved workflow's name)."""
        description = describe_spec(named["specification"]) if "specification" in named else what
        pipe = HostedPipeline(self, pipeline_id, name, reference, description, on_result)
        self._pipelines[pipeline_id] = pipe
        return pipe

    async def _pipeline_spec(self, ref: WorkflowRef) -> tuple[dict, str]:
        """The spec a pipeline runs, safety-checked (in _to_run, once) and validated by the server."""
        named, what = await self._to_run(ref, video=True)
        problems = await self._server_problems(named["specification"])
        if problems:
            raise BackendError("the workflow is invalid: " + "; ".join(problems))
        return named, what

    async def _start(
        self, pipeline_id: str, name: str, video_reference: str, ref: WorkflowRef,
        max_fps: float | None, parameters: dict | None, on_result: ResultListener | None,
    ) -> PipelineHandle:
        named, what = await self._pipeline_spec(ref)
        pipe = self._hosted(pipeline_id, name, video_reference, named, what, on_result)
        pipe.pace.target = max_fps  # the server paces every source, a file too, at max_fps
        if not is_live(video_reference) and self.server_is_local():
            if not Path(video_reference).expanduser().exists():
                pipe.fail(f"video file not found: {pipe.safe_reference}: check the path")
                return pipe.handle()
        launch = self._launch_args(video_reference, named["specification"], parameters, max_fps)
        async with self.servers.placed() as url:
            server_id = await self._call(what, self.launch_on, url, launch, timeout=max(self._timeout, LAUNCH_TIMEOUT))
        pipe.place(url, launch)
        pipe.start(server_id)
        return pipe.handle()

    def _launch_args(self, reference: str, spec: dict, parameters: dict | None, max_fps: float | None) -> dict:
        """What starts this pipeline on a server: kept, so another server can start it the same way."""
        filling, consumption = buffer_strategies(reference)
        return {
            "video_reference": capture_reference(reference),
            "workflows_parameters": parameters,
            "max_fps": max_fps,
            "source_buffer_filling_strategy": filling,
            "source_buffer_consumption_strategy": consumption,
            "results_buffer_size": self._settings.monitoring.result_buffer_size,
            "workflow_specification": spec,
            # The server's queues of decoded frames and of results awaiting the sink, bounded per pipeline in bytes
            # as a direct pipeline's are (inference's defaults queue 64 and 512 frames), at least frames.MIN_DEPTH.
            "depth": queue_depth(self._settings.monitoring.frame_buffer_bytes, reference),
        }

    def launch_on(self, url: str, launch: dict) -> str:
        """Start a pipeline on the server at `url` (blocking: spawning its process takes seconds); its id there."""
        status, body = self._request("POST", "/inference_pipelines/initialise", initialise_payload(launch), url=url,
                                     timeout=max(self._timeout, LAUNCH_TIMEOUT))
        return str((answer(status, body).get("context") or {}).get("pipeline_id") or "")

    def end_on(self, url: str, server_id: str) -> None:
        """Ask the server at `url` to end one of its pipelines, within the request timeout (the SDK's terminate call
        has none: a server that hung held the bot's stop and close() for good)."""
        status, body = self._request("POST", f"/inference_pipelines/{quote(server_id, safe='')}/terminate", {},
                                     url=url)
        answer(status, body)

    def server_id(self, pipeline_id: str) -> str | None:
        pipe = self._pipelines.get(pipeline_id)
        return (pipe.server_id or None) if pipe is not None else None

    def server_of(self, pipeline_id: str) -> str | None:
        pipe = self._pipelines.get(pipeline_id)
        return (pipe.url or None) if pipe is not None else None

    def carried(self, pipeline_id: str) -> dict[str, float]:
        pipe = self._pipelines.get(pipeline_id)
        return pipe.carried() if pipe is not None else {}

    async def adopt_pipeline(
        self,
        pipeline_id: str,
        server_id: str,
        name: str,
        video_reference: str,
        ref: WorkflowRef,
        on_result: ResultListener | None = None,
        paused: bool = False,
        server: str | None = None,
        max_fps: float | None = None,
        parameters: dict | None = None,
        carried: dict[str, float] | None = None,
    ) -> PipelineHandle | None:
        """Resume consuming a pipeline the server kept running while we were down; None if the server lost it, or
        no longer answers, or is no longer configured (it is started again then, wherever the load says)."""
        url = (server or self.url).rstrip("/")
        if url not in self.servers.urls:
            return None
        path = f"/inference_pipelines/{quote(server_id, safe='')}/status"
        try:
            status, _ = await self._call("pipeline status", self._request, "GET", path, url=url)
        except BackendError:
            return None
        if status != 200:  # 404 once it ended or the server restarted
            return None
        named, what = self.resolve(ref, video=True)
        pipe = self._hosted(pipeline_id, name, video_reference, named, what, on_result)
        pipe.pace.target = max_fps
        if "specification" in named:  # a saved workflow is fetched only if it has to move
            pipe.place(url, self._launch_args(video_reference, named["specification"], parameters, max_fps))
        else:
            pipe.place(url, None)
        pipe.carry_on(carried or {})
        pipe.start(server_id, paused=paused)
        return pipe.handle()

    async def server_pipelines(self) -> list[str]:
        """Ids of the pipelines the server runs (including ones other clients started)."""
        status, body = await self._call("pipeline list", self._request, "GET", "/inference_pipelines/list")
        return [str(p) for p in body.get("pipelines") or []] if status == 200 else []
