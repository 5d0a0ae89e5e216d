"""Cron jobs: the persisted job record, schedule phrases, and the built-in actions (daily summary, snapshots)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from bot.events import EventType
from bot.monitoring.alerts import DEFAULT_CAMERA, Alert
from bot.monitoring.digest_log import from_log
from bot.monitoring.digest_text import digest_text
from bot.monitoring.timeline import digest
from bot.monitoring.wording import describe_counts
from bot.objects.owner import Owner
from bot.objects.text import check_name, untrusted
from bot.objects.when import check_interval, parse_when
from bot.rights import UNATTENDED, Requester
from bot.services import need
from bot.storage import records
from workspace.memory import SITE

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.monitoring.alerts import AlertRouter
    from bot.pipelines.manager import PipelineManager
    from bot.scheduling.inputs import DrivenAgent
    from workspace.memory import MemoryStore

log = logging.getLogger(__name__)

_ALERT = re.compile(r"^\d{2}:\d{2}:\d{2} (?:HEARTBEAT )?ALERT(?: ([\w:.>*-]+))?:")
MAX_LOG_CHARS = 8000  # of the day's log shown to the model; the counts above it are exact regardless
BUDGET = re.compile(r"LLM budget|budget for conversations")  # the budget's refusal lines (bot/llm/budget.py)


@dataclass(frozen=True)
class CronJob:
    """A persisted job: an action at a daily time ('18:00', heartbeat time zone) or every N minutes."""

    name: str
    action: str
    at: str | None = None
    every_minutes: float | None = None
    camera: str | None = None
    enabled: bool = True
    channel: str | None = None  # where its output goes (`to=`) instead of the route; None: the route
    thread_ts: str | None = None  # ... under this message
    owner: Owner | None = field(default=None, compare=False)  # who scheduled it, where (None: the operator)

    @property
    def target(self) -> tuple[str | None, str | None]:
        """(channel, thread_ts): the Alert fields that send this job's output to its own channel or thread."""
        return self.channel, self.thread_ts

    def checked(self) -> CronJob:
        """The job, if its fields make sense together and lie within the bounds every door holds (a name, a time of
        day or an interval of 1 minute to 7 days: nothing saved can overflow the scheduler); ValueError otherwise."""
        check_name(self.name, "a job's name")
        if (self.at is None) == (self.every_minutes is None):
            raise ValueError("give a job either a daily time (at='18:00') or an interval (every_minutes=60)")
        if self.at is not None:
            parse_when(f"at {self.at}")
        else:
            check_interval(float(self.every_minutes or 0))
        if self.action == "snapshot" and not self.camera:
            raise ValueError("a snapshot job needs a camera (the pipeline name)")
        return self

    def record(self) -> dict[str, Any]:
        return {**asdict(replace(self, owner=None)), "owner": self.owner.model_dump() if self.owner else None}

    @classmethod
    def from_record(cls, row: dict[str, Any]) -> CronJob:
        """A stored job, checked as a new one is (TypeError / ValueError: a record to set aside)."""
        return records.typed(cls, row).checked()  # every field of its type, then the bounds of a new job

    @property
    def requester(self) -> Requester:
        """Who its model work (a summary's prose, a heartbeat) runs as: unattended, billed to its owner."""
        owner = self.owner or Owner()
        return Requester.unattended_for(owner.user, owner.channel)

    def describe(self) -> str:
        when = f"daily at {self.at}" if self.at else f"every {self.every_minutes:g} min"
        return f"{self.name}: {self.action}{' of ' + self.camera if self.camera else ''}, {when}"


def day_counts(by_camera: dict[str, list[str]]) -> dict[str, tuple[int, Counter[str]]]:
    """Per camera: observations that are not alerts, and alerts by rule."""
    out: dict[str, tuple[int, Counter[str]]] = {}
    for cam, bullets in by_camera.items():
        rules: Counter[str] = Counter()
        plain = 0
        for b in bullets:
            m = _ALERT.match(b)
            if m:
                rules[m.group(1) or "heartbeat"] += 1
            else:
                plain += 1
        out[cam] = (plain, rules)
    return out


def summary_lines(day: str, by_camera: dict[str, list[str]]) -> list[str]:
    """'- door: 2 alerts (line_crossed ×2); at most 3 people at once; line crossings in 5 / out 4; 12 other notes'."""
    lines = [f"Daily summary for {day}"]
    counts = day_counts(by_camera)
    for cam in sorted(counts):
        plain, rules = counts[cam]
        detail = ", ".join(f"{r} ×{n}" for r, n in rules.most_common())
        lines.append(f"- {cam}: {sum(rules.values())} alerts" + (f" ({detail})" if detail else "")
                     + f"; {digest(by_camera[cam], alerts=False)}; {plain} other notes")
    return lines


async def daily_summary(
    agent: DrivenAgent | None, memory: MemoryStore | None, router: AlertRouter | None, date: str | None = None,
    target: tuple[str | None, str | None] = (None, None), job: CronJob | None = None,
) -> str | None:
    """Post a short report of a day's observations and alerts (default today); None on a day with nothing.

    Its prose is model work nobody watches: billed to the job's owner (`job.requester`); when their share is
    spent, the counts still go out, with one line saying why there is no prose today."""
    memory, router = need(memory, "memory"), need(router, "alert router")
    day = date or memory.today()
    # The summary is posted to the alerts channel: only notes everyone may read (no DM's or private channel's).
    by_camera = memory.observations_by_camera(day, viewer=SITE)
    if not by_camera:
        log.info("daily summary %s: nothing was observed, nothing posted", day)
        return None
    counts = day_counts(by_camera)
    lines = summary_lines(day, by_camera)
    if agent is not None:
        who = job.requester if job is not None else UNATTENDED
        narrative = await _narrative(agent, day, memory.get_daily_observations(day, viewer=SITE), who)
        if narrative:
            lines += ["", narrative]
    text = "\n".join(lines)
    totals = {cam: sum(rules.values()) for cam, (_, rules) in counts.items()}
    await router.dispatch(Alert(DEFAULT_CAMERA, "daily_summary", text, totals, summary=lines[0], channel=target[0],
                                thread_ts=target[1]))
    return text


async def _narrative(agent: DrivenAgent, day: str, log_text: str, who: Requester = UNATTENDED) -> str:
    """A few sentences from the model, in a session of its own (never a chat session); the log (what cameras and
    people wrote) goes in as quoted data. A refusal of the budget becomes the line said instead of the prose."""
    prompt = (
        f"Write the daily summary for {day} in at most five short sentences: what happened on each camera, "
        "anything unusual, anything to check tomorrow. Do not call tools. The day's observation log:\n\n"
        + untrusted("observation log", log_text[-MAX_LOG_CHARS:])
    )
    parts: list[str] = []
    try:
        async for ev in agent.process_message(f"cron:daily_summary:{day}", prompt, [], who):
            if ev.type in (EventType.RESPONSE, EventType.ASK_USER):
                parts.append(ev.data.get("text", ""))
            elif ev.type is EventType.ERROR and BUDGET.search(str(ev.data.get("text", ""))):
                whose = f"<@{who.user_id}>'s" if not who.operator and who.user_id else "the day's"
                return (f"(No written summary today: {whose} share of today's model budget is spent; the counts "
                        "above are complete, and the prose comes back tomorrow.)")
    except Exception:  # the counts still go out without the prose
        log.exception("daily summary narrative failed")
    return "\n".join(p for p in parts if p).strip()


async def snapshot(
    pipelines: PipelineManager | None, router: AlertRouter | None, memory: MemoryStore | None, camera: str,
    target: tuple[str | None, str | None] = (None, None),
) -> bool:
    """Post the latest annotated frame of a camera's pipeline; False (and a log line) if it has none."""
    try:
        latest = pipelines.latest(camera) if pipelines is not None else None
    except Exception:  # noqa: BLE001 - unknown or stopped pipeline
        latest = None
    if latest is None or not latest.frame:
        log.warning("snapshot of %s skipped: no frame; is a pipeline named %s running?", camera, camera)
        return False
    router = need(router, "alert router")
    counts = latest.counts()
    seen = describe_counts(counts) if counts else "nothing detected"
    await router.dispatch(
        Alert(camera, "snapshot", f"scheduled snapshot ({seen})", counts, frame=latest.frame, channel=target[0],
              thread_ts=target[1])
    )
    if memory is not None:
        memory.store(f"snapshot: {seen}", "observation", camera_id=camera)
    return True


async def post_digest(router: AlertRouter | None, settings: Settings, job: CronJob, now: float) -> str:
    """Post what happened since the job's previous run (its interval; a daily job: the last 24 h), with a table
    where the sink can draw one; posted also when nothing happened (that is news too). Returns the text."""
    router = need(router, "alert router")
    log = need(router.events, "the event log")
    start = now - (job.every_minutes * 60 if job.every_minutes else 86400.0)
    tz = settings.heartbeat.timezone
    note = "since the last digest" if job.every_minutes else ""
    d = await asyncio.to_thread(from_log, log, router, settings, start, now, note, job.camera)  # off the loop
    text = digest_text(d, tz)
    # cooldown 0: a digest is asked for on a schedule; the router's cooldown is for detections
    await router.dispatch(Alert(job.camera or DEFAULT_CAMERA, "digest", text, cooldown_seconds=0.0, digest=d,
                                channel=job.channel, thread_ts=job.thread_ts))
    return text
