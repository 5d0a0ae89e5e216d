"""Bringing the pipelines of the last run back, in the background: nothing (the Slack connect, the CLI) waits for a
camera, and a source that keeps failing backs off and ends as `error` in `/vision list` instead of delaying anything.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from bot.backends.base import AdoptingBackend, BackendError, PipelineHandle
from bot.media.redaction import redact
from bot.media.sniff import STILL_HINT, still_image
from bot.pipelines.owners import runs_elsewhere
from bot.pipelines.state import PipelineConfig, load_state

if TYPE_CHECKING:
    from bot.pipelines.manager import PipelineManager

log = logging.getLogger(__name__)

# Seconds before the 2nd, 3rd and 4th try within one run; after the last the pipeline stays `error`.
BACKOFF = (15.0, 60.0, 300.0)
# Consecutive failed restarts after which a saved pipeline is listed as `error` without being opened again.
GIVE_UP_AFTER = 3


def _reason(exc: BaseException) -> str:
    return redact(str(exc) if isinstance(exc, BackendError) else f"{type(exc).__name__}: {exc}")


async def _adopt(mgr: PipelineManager, cfg: PipelineConfig) -> PipelineHandle | None:
    """The pipeline as the inference server kept running it while this process was down (no second copy)."""
    backend = mgr.backends.named(cfg.backend)
    if not cfg.server_id or not isinstance(backend, AdoptingBackend):
        return None
    mgr.backends.assign(cfg.pipeline_id, cfg.backend)
    handle = await backend.adopt_pipeline(
        cfg.pipeline_id, cfg.server_id, cfg.name, cfg.video_reference, ref=cfg.workflow(mgr.spec_of(cfg)),
        on_result=mgr.on_result, paused=cfg.paused, server=cfg.server, max_fps=cfg.max_fps, parameters=cfg.parameters,
        carried=cfg.carried,
    )
    if handle is None:
        log.info("pipeline %s is no longer on the inference server; starting it again", cfg.name)
    else:
        log.info("pipeline %s (%s) adopted: the inference server kept running it", cfg.name, cfg.pipeline_id)
    return handle


async def restore_one(mgr: PipelineManager, cfg: PipelineConfig, retry_in: float | None = None,
                      retried: bool = False) -> PipelineHandle:
    """Start (or adopt) one saved pipeline; a failure becomes status `error` with the reason and what happens next.

    The log warns on the first failure and when retries end; a `retried` one that fails again is logged at info (its
    status and its pipeline_error alert say it already: the REPL printed two more warnings at every retry)."""
    try:
        handle = await _adopt(mgr, cfg) or await mgr.launch(cfg)
        failed = handle.status == "error"
    except Exception as exc:  # a dead camera must not stop the others from coming back
        failed, reason = True, _reason(exc)
        handle = mgr.placeholder(cfg, "error", reason)
    cfg.restore_failures = cfg.restore_failures + 1 if failed else 0
    if failed:
        why = handle.error or "the source failed"
        nxt = (f"retrying in {retry_in:g} s" if retry_in is not None
               else f"not retried; `/vision stop {cfg.name}` removes it, `/vision start` opens it again")
        handle = handle.with_(status="error", error=f"{why} ({nxt})")
        level = logging.INFO if retried and retry_in is not None else logging.WARNING
        log.log(level, "pipeline %s could not be restored: %s", cfg.name, handle.error)
    return mgr.adopt_config(cfg, handle)


def take_saved(mgr: PipelineManager) -> tuple[list[PipelineConfig], dict[str, PipelineHandle]]:
    """List every saved pipeline at once (its name taken): to start as `starting`; given up on as `error`."""
    pending, given_up = [], {}
    for cfg in load_state(mgr.state_path):
        if mgr.knows(cfg.pipeline_id) or runs_elsewhere(cfg):  # another live process runs it: not started twice
            continue
        if still_image(cfg.video_reference):  # a picture never becomes a stream: not opened, not retried
            note = f"{redact(cfg.video_reference)} {STILL_HINT}; `/vision stop {cfg.name}` removes it"
            given_up[cfg.pipeline_id] = mgr.adopt_config(cfg, mgr.placeholder(cfg, "error", note))
        elif cfg.restore_failures >= GIVE_UP_AFTER:  # failed at every one of the last start-ups: not opened again
            note = f"failed at the last {cfg.restore_failures} start-ups"
            given_up[cfg.pipeline_id] = mgr.adopt_config(cfg, mgr.placeholder(cfg, "error", note).with_(
                error=f"{note}; `/vision stop {cfg.name}` removes it, `/vision start` opens it again"))
        else:
            mgr.adopt_config(cfg, mgr.placeholder(cfg, "starting"), waiting=True)
            pending.append(cfg)
    return pending, given_up


async def _sleep_unless_removed(mgr: PipelineManager, pending: list[PipelineConfig], seconds: float) -> None:
    """Back off, but wake up as soon as the user has removed every pipeline that was waiting."""
    end = asyncio.get_running_loop().time() + seconds
    while any(mgr.wants_restore(c.pipeline_id) for c in pending):
        left = end - asyncio.get_running_loop().time()
        if left <= 0:
            return
        await asyncio.sleep(min(left, 0.5))


async def bring_back(mgr: PipelineManager, pending: list[PipelineConfig], backoff: tuple[float, ...] = ()) -> list[
        PipelineHandle]:
    """Start the taken pipelines; the ones whose source fails are tried again after each `backoff` delay."""
    out: list[PipelineHandle] = []
    delays = (0.0, *backoff)
    for attempt, delay in enumerate(delays):
        await _sleep_unless_removed(mgr, pending, delay)
        pending = [c for c in pending if mgr.wants_restore(c.pipeline_id)]
        if not pending:
            break
        retry_in = delays[attempt + 1] if attempt + 1 < len(delays) else None
        results = [(cfg, await restore_one(mgr, cfg, retry_in, retried=attempt > 0)) for cfg in pending]
        out = [h for h in out if h.pipeline_id not in {c.pipeline_id for c in pending}] + [h for _, h in results]
        pending = [cfg for cfg, h in results if h.status == "error"]
    return out


async def restore_all(mgr: PipelineManager, backoff: tuple[float, ...] = ()) -> list[PipelineHandle]:
    """Every pipeline saved in active_state.json, with `backoff` retries for the ones whose source fails.

    One the inference server still runs (the bot died without close()) is adopted, not started a second time.
    """
    pending, given_up = take_saved(mgr)
    order = [c.pipeline_id for c in load_state(mgr.state_path)]
    done = {h.pipeline_id: h for h in [*given_up.values(), *await bring_back(mgr, pending, backoff)]}
    return [done[pid] for pid in order if pid in done]


class BackgroundRestore:
    """`start()` returns at once; the backend is built off the event loop (importing `inference` takes seconds)."""

    def __init__(self, mgr: PipelineManager, backoff: tuple[float, ...] = BACKOFF) -> None:
        self.mgr, self.backoff = mgr, backoff
        self.task: asyncio.Task[list[PipelineHandle]] | None = None

    def start(self) -> asyncio.Task[list[PipelineHandle]]:
        pending, given_up = take_saved(self.mgr)  # listed at once, before anyone can ask
        self.task = asyncio.create_task(self._run(pending, list(given_up.values())), name="restore-pipelines")
        return self.task

    async def _run(self, pending: list[PipelineConfig], given_up: list[PipelineHandle]) -> list[PipelineHandle]:
        if not pending:
            return given_up
        try:
            await self.mgr.provider.aget()
        except Exception:
            log.exception("the inference backend could not be built; saved pipelines stay in active_state.json")
            return given_up
        restored = given_up + await bring_back(self.mgr, pending, self.backoff)
        if restored:
            log.info("restored %d pipeline(s) from %s", len(restored), self.mgr.state_path)
        return restored

    async def wait(self) -> list[PipelineHandle]:
        return await self.task if self.task is not None else []

    async def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            try:
                await self.task
            except (asyncio.CancelledError, Exception):
                pass
