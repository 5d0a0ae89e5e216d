"""The scheduler thread (`schedule`): heartbeat, tier-1 health ticks, persisted cron jobs; no job overlaps itself."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import schedule

from bot.backends.base import LIVE, PipelineHandle
from bot.monitoring.alerts import Alert, in_window
from bot.monitoring.outlived import RULE, Notice
from bot.objects.owner import Owner
from bot.scheduling import cron_jobs
from bot.scheduling.cron_jobs import CronJob
from bot.scheduling.heartbeat import Heartbeat
from bot.scheduling.inputs import SchedulerInputs
from bot.storage import Storage, open_storage, records

log = logging.getLogger(__name__)

Action = Callable[[CronJob], Any]  # may return an awaitable: it then runs on the main loop


class Scheduler:
    """Runs on its own thread; coroutine jobs go to the main loop (run_coroutine_threadsafe)."""

    def __init__(
        self,
        inputs: SchedulerInputs,
        *,
        db_path: Path | None = None,
        tick_seconds: float = 1.0,
        health_seconds: float = 10.0,
        storage: Storage | None = None,
    ) -> None:
        self.inputs = inputs
        self.settings, self.monitor = inputs.settings, inputs.monitor
        self.heartbeat = Heartbeat(inputs)
        self.tick_seconds, self.health_seconds = tick_seconds, health_seconds
        self._tz = ZoneInfo(self.settings.heartbeat.timezone)
        self._clock = inputs.clock
        self._store = storage if storage is not None else open_storage(
            db_path or Path(self.settings.workspace) / ".state" / "cron.json", self.settings.storage.backend)
        self._jobs = self._store.table("jobs")
        self._sched = schedule.Scheduler()
        self._lock = threading.RLock()
        self._running: set[str] = set()
        self._workers: set[threading.Thread] = set()
        self._futures: set[Any] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.runs: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.actions: dict[str, Action] = {
            "heartbeat": lambda job: self.heartbeat.run(job.target, job.requester),
            "daily_summary": lambda job: cron_jobs.daily_summary(inputs.agent, inputs.memory, inputs.router,
                                                                 target=job.target, job=job),
            "digest": lambda job: cron_jobs.post_digest(inputs.router, self.settings, job, self._clock()),
            "snapshot": self._snapshot,
        }
        self._paused: set[str] = set()  # snapshot jobs whose camera's pipeline is down, told so once
        if self.monitor is not None:  # a camera's pipeline ended: its snapshot jobs pause, said where they post
            self.monitor.outlived.add(self._outlived)
        self._seed_defaults()

    # lifecycle ------------------------------------------------------------
    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Schedule the heartbeat, health ticks and saved jobs, then start the thread (call on the main loop)."""
        if self._thread is not None:
            return
        self._loop = loop or asyncio.get_running_loop()
        hb = self.settings.heartbeat
        if hb.enabled and hb.interval_minutes > 0:
            self.every(hb.interval_minutes * 60, self.heartbeat.run, "heartbeat")
        if self.monitor is not None and self.health_seconds > 0:
            self.every(self.health_seconds, self.monitor.check_health, "health")
        for job in self._load():
            try:
                self._schedule(job)
            except Exception as exc:  # noqa: BLE001 - a stored job the scheduler cannot take never stops start-up
                self._set_aside(job, f"could not be scheduled: {exc}")
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop_forever, name="scheduler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread, cancel coroutine jobs still running, wait briefly for worker threads."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        with self._lock:
            futures, workers = list(self._futures), list(self._workers)
        for fut in futures:
            fut.cancel()
        for w in workers:
            w.join(timeout)
        self._sched.clear()

    def _loop_forever(self) -> None:
        while not self._stop.wait(self.tick_seconds):
            self.run_pending()

    def run_pending(self) -> None:
        with self._lock:
            self._sched.run_pending()

    # jobs -----------------------------------------------------------------
    def every(self, seconds: float, fn: Callable[[], Any], name: str, active_hours: bool = False) -> None:
        """An internal recurring job (not persisted). fn may be sync (runs on a worker thread) or async."""
        with self._lock:
            # schedule annotates the interval as int; a float works (it becomes a timedelta) and tests use < 1 s.
            job = self._sched.every(seconds)  # type: ignore[arg-type]
            job.seconds.do(self._fire, name, fn, active_hours).tag(name)

    def add_job(
        self,
        name: str,
        action: str,
        *,
        at: str | None = None,
        every_minutes: float | None = None,
        camera: str | None = None,
        channel: str | None = None,
        thread_ts: str | None = None,
        owner: Owner | None = None,
    ) -> CronJob:
        """Check a cron job, schedule it, then save it (replacing one with the same name): one the scheduler cannot
        take is refused (ValueError) and never stored, so nothing saved can stop a later start. Who may replace
        whose job, caps and where it may post: bot/commands/schedule.py `create_job`, which every door calls."""
        if action not in self.actions:
            raise ValueError(f"unknown job action {action!r}; use one of {', '.join(sorted(self.actions))}")
        job = CronJob(name, action, at, every_minutes, camera, channel=channel, thread_ts=thread_ts,
                      owner=owner).checked()
        with self._lock:
            probe = schedule.Scheduler()  # scheduled on a scratch scheduler first: it must take it
            self._schedule(job, probe)
            self._sched.clear(f"cron:{name}")
            if self._thread is not None:
                self._schedule(job)
            self._jobs.upsert(job.record(), name=name)
        return job

    def remove_job(self, name: str) -> bool:
        with self._lock:
            self._sched.clear(f"cron:{name}")
            return bool(self._jobs.remove(name=name))

    def jobs(self) -> list[CronJob]:
        with self._lock:
            return [j for j in (self._read(row) for row in self._jobs.all()) if j is not None]

    def job(self, name: str) -> CronJob | None:
        """The job of that name, in any case (`OPS-DIGEST` is `ops-digest`: one job, one owner)."""
        return next((j for j in self.jobs() if j.name == name), None) or \
            next((j for j in self.jobs() if j.name.casefold() == name.casefold()), None)

    def _read(self, row: dict[str, Any]) -> CronJob | None:
        try:
            return self._job(row)
        except Exception:  # noqa: BLE001 - set aside at start-up (`_load`); one added since by hand is skipped
            return None

    def _load(self) -> list[CronJob]:
        """The stored jobs, through the one loader: a record of another shape or out of bounds is set aside."""
        with self._lock:
            return records.load(self._store, "jobs", self._job)

    def _job(self, row: dict[str, Any]) -> CronJob:
        """A stored job this scheduler can run (ValueError for another version's action)."""
        job = CronJob.from_record(row)
        if job.action not in self.actions:
            raise ValueError(f"unknown job action {job.action!r}")
        return job

    def _set_aside(self, job: CronJob, why: str) -> None:
        with self._lock:
            self._jobs.remove(name=job.name)
        records.keep(self._store.path, "jobs", [(job.record(), why)])

    def next_run(self, name: str) -> datetime | None:
        """When a saved job runs next (aware, local time), or None while the scheduler thread is not running it."""
        with self._lock:
            runs = [j.next_run for j in self._sched.get_jobs(f"cron:{name}") if j.next_run is not None]
        return min(runs).astimezone() if runs else None  # `schedule` keeps naive local times

    def run_now(self, name: str) -> None:
        """Fire a saved job at once (still never alongside itself)."""
        job = next((j for j in self.jobs() if j.name == name), None)
        if job is None:
            raise KeyError(f"no cron job named {name!r}")
        self._fire(f"cron:{name}", lambda: self.actions[job.action](job), False)

    def _schedule(self, job: CronJob, on: schedule.Scheduler | None = None) -> None:
        if not job.enabled:
            return
        sched = on or self._sched
        run = lambda: self.actions[job.action](job)  # noqa: E731 - looked up at run time: actions can be replaced
        tag = f"cron:{job.name}"
        if job.at:
            sched.every().day.at(job.at, self._tz.key).do(self._fire, tag, run, False).tag(tag)
        else:
            every = sched.every(float(job.every_minutes or 60) * 60)  # type: ignore[arg-type]
            every.seconds.do(self._fire, tag, run, True).tag(tag)

    def _seed_defaults(self) -> None:
        """A daily summary at 18:00, once per workspace (a user who deletes it keeps it deleted)."""
        meta = self._store.table("meta")
        if not meta.get(seeded=True):
            meta.upsert({"seeded": True}, seeded=True)
            if not self.jobs():
                self.add_job("daily_summary", "daily_summary", at="18:00")

    # a camera that went away --------------------------------------------------
    def _outlived(self, h: PipelineHandle) -> list[Notice]:
        """The snapshot jobs of a camera whose pipeline ended pause, said where they post (bot/monitoring/outlived.py)."""
        out = []
        for job in self.jobs():
            if job.action == "snapshot" and job.camera == h.name:
                with self._lock:
                    self._paused.add(job.name)
                out.append(Notice(job.channel, job.thread_ts, _member(job), f"scheduled snapshot `{job.name}` paused "
                                  f"until {h.name} runs again"))
        return out

    async def _snapshot(self, job: CronJob) -> bool:
        """A scheduled snapshot; while no pipeline runs on its camera it is skipped, and said once where it posts
        (not a stale frame of a finished file, not silence), until it runs again."""
        camera, pipelines = job.camera or "", self.inputs.pipelines
        if pipelines is not None and not any(h.name == camera and h.status in LIVE for h in pipelines.snapshot()):
            with self._lock:
                first = job.name not in self._paused
                self._paused.add(job.name)
            if first and self.inputs.router is not None:
                who = f"<@{_member(job)}> " if _member(job) else ""
                await self.inputs.router.deliver(Alert(
                    camera, RULE, f"{who}scheduled snapshot `{job.name}` skipped: no pipeline runs on {camera}; it "
                    f"resumes when one does (`/vision start {camera}`).", channel=job.channel, thread_ts=job.thread_ts,
                    notify=_member(job)))
            return False
        with self._lock:
            self._paused.discard(job.name)
        return await cron_jobs.snapshot(pipelines, self.inputs.router, self.inputs.memory, camera, job.target)

    # running ----------------------------------------------------------------
    def _fire(self, name: str, fn: Callable[[], Any], active_hours: bool) -> None:
        """Start a job on a worker thread unless the previous run of the same job is still going."""
        window = self.settings.heartbeat.active_hours
        if active_hours and window and not in_window(window, datetime.fromtimestamp(self._clock(), self._tz)):
            return
        with self._lock:
            if name in self._running:
                self.skipped[name] += 1
                log.info("job %s skipped: its previous run is still going", name)
                return
            self._running.add(name)
            worker = threading.Thread(target=self._execute, args=(name, fn), name=f"job:{name}", daemon=True)
            self._workers.add(worker)
        worker.start()

    def _execute(self, name: str, fn: Callable[[], Any]) -> None:
        fut = None
        try:
            result = fn()
            if inspect.isawaitable(result):
                if self._loop is None or self._loop.is_closed():
                    getattr(result, "close", lambda: None)()  # never awaited: close it quietly
                    raise RuntimeError("scheduler has no running event loop for coroutine jobs")
                # Submit and register under the lock: stop() copies the futures under it after setting _stop, so
                # a job is either refused here or seen (and cancelled) there — never started and missed.
                with self._lock:
                    if self._stop.is_set():
                        getattr(result, "close", lambda: None)()
                        return
                    fut = asyncio.run_coroutine_threadsafe(_awaited(result), self._loop)
                    self._futures.add(fut)
                fut.result()
            with self._lock:
                self.runs[name] += 1
        except BaseException as exc:  # noqa: BLE001 - the scheduler outlives any job
            if fut is not None and fut.cancelled():
                log.info("job %s cancelled", name)
            else:
                with self._lock:
                    self.failures[name] += 1
                log.error("scheduled job %s failed: %s", name, exc, exc_info=isinstance(exc, Exception))
        finally:
            with self._lock:
                self._running.discard(name)
                self._futures.discard(fut)
                self._workers.discard(threading.current_thread())


async def _awaited(aw: Any) -> Any:
    return await aw


def _member(job: CronJob) -> str | None:
    """The Slack member who scheduled it (None: the operator)."""
    return job.owner.user if job.owner is not None and job.owner.member else None
