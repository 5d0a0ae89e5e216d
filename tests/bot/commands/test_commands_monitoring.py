"""/vision rule|rules|unrule|schedule|jobs|unschedule through run_command, with the real Monitor and Scheduler."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.commands.dispatch import USAGE, CommandContext, run_command
from bot.commands.rules import RULE_USAGE
from bot.commands.schedule import SCHEDULE_USAGE
from bot.config import load_settings
from bot.monitoring.monitor import Monitor
from bot.monitoring.rules import Rule
from bot.pipelines.manager import PipelineManager
from bot.scheduling.inputs import SchedulerInputs
from bot.scheduling.scheduler import Scheduler
from bot.services import Services
from tests.bot.monitor_helpers import dwell_result, make_router
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.slack import RunningBot
from tests.tools.fake_backend import FakeBackend, result

CAMERAS = "| Name | URL | Location |\n|---|---|---|\n| dock | rtsp://10.0.0.5/s1 | Loading dock |\n"


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


def make_ctx(settings, workspace_dir: Path, backend: FakeBackend, **who) -> CommandContext:
    (workspace_dir / "CAMERAS.md").write_text(CAMERAS)
    router, sink = make_router(workspace_dir, time.time, cooldown=settings.monitoring.alert_cooldown_seconds)  # as the runtime wires it
    mgr = PipelineManager(lambda: backend, workspace_dir / "active_state.json", settings)
    monitor = Monitor(router, mgr, settings, db_path=workspace_dir / ".state" / "monitor.json")
    scheduler = Scheduler(SchedulerInputs(settings, monitor=monitor, router=router, pipelines=mgr),
                          db_path=workspace_dir / ".state" / "cron.json")
    ctx = CommandContext(settings, Services(pipelines=mgr, router=router, monitor=monitor), scheduler=scheduler,
                         **({"user_id": "U1", "channel_id": "C1"} | who))
    ctx.sink = sink  # type: ignore[attr-defined] - the test reads what was alerted
    return ctx


@pytest.fixture
def ctx(settings, workspace_dir: Path, backend: FakeBackend):
    ctx = make_ctx(settings, workspace_dir, backend)
    yield ctx
    ctx.scheduler.stop()


@pytest.fixture
def op_ctx(settings, workspace_dir: Path, backend: FakeBackend):
    """The operator's context (the terminal): rules for every camera and heartbeat jobs are the operator's to set."""
    ctx = make_ctx(settings, workspace_dir, backend, user_id="cli", channel_id="cli", operator=True)
    yield ctx
    ctx.scheduler.stop()


@pytest.mark.parametrize(
    ("text", "camera", "rule"),
    [
        ("rule dock line", "dock", Rule("line_crossed", "dock")),
        ("rule DOCK appears car", "dock", Rule("class_appears", "dock", class_name="car")),
        ("rule dock appears", "dock", Rule("class_appears", "dock")),
        ("rule dock count person>3 cooldown=120", "dock", Rule("count_over", "dock", "person", 3, 120)),
        ("rule dock count person&gt;3", "dock", Rule("count_over", "dock", "person", 3)),  # as Slack sends '>'
        ("rule dock count person 3", "dock", Rule("count_over", "dock", "person", 3)),
        ("rule dock zone 30s cooldown=5", "dock", Rule("time_in_zone", "dock", threshold=30, cooldown_seconds=5)),
        ("rule * line", "*", Rule("line_crossed", "*")),
    ],
)
async def test_rule_kinds_reach_the_monitor(op_ctx, text, camera, rule):
    reply = await run_command(text, op_ctx)
    assert reply.ok, reply.text
    assert op_ctx.services.monitor.rules() == [rule]
    assert f"`/vision unrule {camera} {rule.id}`" in reply.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rule ../etc line", "camera is 1 to 64 letters, digits, spaces"),
        ("rule dock", RULE_USAGE),
        ("rule dock wobble", RULE_USAGE),
        ("rule dock line extra", RULE_USAGE),
        ("rule dock count person", "count takes CLASS>N, e.g. `count person>3`"),
        ("rule dock count >3", "count takes CLASS>N"),
        ("rule dock zone soon", "zone takes a number of seconds, e.g. `zone 60`"),
        ("rule dock line cooldown=later", "cooldown is a number of seconds from 0 to 604800 (a week"),
        ("rule dock line every=5", "unknown option every=; allowed: cooldown"),
    ],
)
async def test_rule_mistakes_say_what_to_type(ctx, text, expected):
    reply = await run_command(text, ctx)
    assert not reply.ok and expected in reply.text
    assert ctx.services.monitor.rules() == []


async def test_a_rule_set_by_command_fires_on_pipeline_results(ctx, backend):
    ctx.services.monitor.start()
    await run_command("start 0 name=desk", ctx)
    assert (await run_command("rule desk count person>2", ctx)).ok  # a pipeline name is a camera too
    pid = ctx.manager().resolve("desk").pipeline_id
    backend.emit(pid, result({"person": 2}))
    backend.emit(pid, result({"person": 3}))
    await ctx.services.monitor.flush()
    assert [(a.camera, a.rule) for a in ctx.sink.alerts] == [("desk", "count_over:person>2")]
    await ctx.manager().stop_all()


async def test_a_rule_for_a_camera_without_a_pipeline_yet_waits_for_it(ctx, backend):
    ctx.services.monitor.start()
    reply = await run_command("rule street zone 20", ctx)
    assert reply.ok, reply.text
    assert "No camera or pipeline is called street yet: the rule applies once a pipeline of that name runs" in reply.text
    assert [(r.camera, r.id) for r in ctx.services.monitor.rules()] == [("street", "time_in_zone>20s")]
    assert "*street*: `time_in_zone>20s`" in (await run_command("rules street", ctx)).text

    await run_command("start 0 name=street", ctx)
    pid = ctx.manager().resolve("street").pipeline_id
    backend.emit(pid, dwell_result(("person", 12, 21.0)))
    await ctx.services.monitor.flush()
    assert [(a.camera, a.text) for a in ctx.sink.alerts] == [("street", "person #12 in the zone for 21 s, over 20 s")]
    await ctx.manager().stop_all()


async def test_rules_lists_configured_and_guessed_defaults(op_ctx, backend):
    assert "*dock*: none yet" in (await run_command("rules", op_ctx)).text
    await run_command("start 0 name=desk", op_ctx)
    op_ctx.services.monitor.on_result(op_ctx.manager().resolve("desk"), result({}))  # nothing seen: the default is guessed, no alert
    await run_command("rule dock count person>3 cooldown=90", op_ctx)
    await run_command("rule * appears car", op_ctx)
    listing = (await run_command("rules", op_ctx)).text
    lines = listing.splitlines()
    assert lines[0] == "*Rules*" and lines[1].startswith("• *every camera*: `class_appears:car`")
    assert "• *desk*: `class_appears:car`" in listing and "default" not in listing  # '*' rules replace the guess
    assert "`count_over:person>3` (alerts when more than 3 people are in view; cooldown 90 s)" in listing
    await run_command("unrule * class_appears:car", op_ctx)
    one = (await run_command("rules desk", op_ctx)).text
    default = op_ctx.settings.monitoring.alert_cooldown_seconds  # rules without cooldown= use the configured one
    assert one.splitlines()[1] == (f"• *desk*: `class_appears:*` (alerts when an object appears; cooldown {default:g} s)"
                                   " — default, guessed from its results")
    assert not (await run_command("rules garage", op_ctx)).ok


async def test_unrule_removes_and_explains_misses(op_ctx):
    await run_command("rule dock count person>3", op_ctx)
    await run_command("rule * line", op_ctx)
    miss = await run_command("unrule dock count_over:person>4", op_ctx)
    assert not miss.ok and "its rules: `count_over:person>3`" in miss.text
    wrong_scope = await run_command("unrule dock line_crossed", op_ctx)
    assert not wrong_scope.ok and "`/vision unrule * line_crossed`" in wrong_scope.text
    assert (await run_command("unrule dock count_over:person&gt;3", op_ctx)).ok  # Slack-escaped id
    assert op_ctx.services.monitor.rules() == [Rule("line_crossed", "*")]
    assert not (await run_command("unrule dock", op_ctx)).ok
    op_ctx.services.monitor.add_rule(Rule("line_crossed", "gone"))  # its pipeline and CAMERAS.md row were removed since
    assert "• *gone*: `line_crossed`" in (await run_command("rules", op_ctx)).text
    member = CommandContext(op_ctx.settings, op_ctx.services, user_id="U1", channel_id="C1", scheduler=op_ctx.scheduler)
    theirs = await run_command("unrule gone line_crossed", member)  # the operator's rule: not a member's to remove
    assert not theirs.ok and "belongs to the operator" in theirs.text
    assert (await run_command("unrule gone line_crossed", op_ctx)).ok
    assert op_ctx.services.monitor.rules() == [Rule("line_crossed", "*")]


@pytest.mark.parametrize(
    ("text", "name", "fields"),
    [
        ("schedule summary at 19:00", "summary-19:00", {"action": "daily_summary", "at": "19:00"}),
        ("schedule snapshot dock every hour", "snapshot-dock-hourly", {"every_minutes": 60, "camera": "dock"}),
        ("schedule snapshot Dock every 15 minutes", "snapshot-dock-every-15min", {"every_minutes": 15}),
        ("schedule snapshot dock at 9:30", "snapshot-dock-09:30", {"at": "09:30", "action": "snapshot"}),
        ("schedule heartbeat every 5 minutes", "heartbeat-every-5min", {"action": "heartbeat", "every_minutes": 5}),
        ("schedule summary at 07:15 name=morning", "morning", {"at": "07:15"}),
    ],
)
async def test_schedule_saves_a_named_job(op_ctx, text, name, fields):
    reply = await run_command(text, op_ctx)
    assert reply.ok, reply.text
    job = next(j for j in op_ctx.scheduler.jobs() if j.name == name)
    assert {k: getattr(job, k) for k in fields} == fields
    assert f"`/vision unschedule {name}`" in reply.text


@pytest.mark.parametrize("minutes", [0, 15])
async def test_a_heartbeat_job_says_whether_the_configured_one_also_runs(base_env, workspace_dir, backend, minutes):
    settings = load_settings({**base_env, "VISION_AGENT_HEARTBEAT_MINUTES": str(minutes)})
    ctx = make_ctx(settings, workspace_dir, backend, user_id="cli", channel_id="cli", operator=True)  # the site's
    reply = await run_command("schedule heartbeat every 5 minutes", ctx)
    assert reply.ok and ("every 15 min) keeps running too" in reply.text) == (minutes == 15)
    assert ("VISION_AGENT_HEARTBEAT_MINUTES=0" in reply.text) == (minutes == 15)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("schedule", SCHEDULE_USAGE),
        ("schedule coffee at 10:00", SCHEDULE_USAGE),
        ("schedule summary at 25:00", "25:00 is not a time of day; use HH:MM"),
        ("schedule summary tomorrow", "cannot read the schedule 'tomorrow'; say 'at 18:00'"),
        ("schedule summary", "Say when the summary runs, e.g. `at 18:00`"),
        ("schedule summary every hour", "the summary runs once a day: say `at 18:00`"),
        ("schedule heartbeat at 10:00", "the heartbeat repeats: say `every 15 minutes`"),
        ("schedule snapshot garage every hour", "Unknown camera 'garage'; known cameras and pipelines: dock."),
        ("schedule snapshot * every hour", "Name one camera here"),
        ("schedule snapshot", "`/vision schedule snapshot dock every hour`"),
    ],
)
async def test_schedule_mistakes_say_what_to_type(ctx, text, expected):
    reply = await run_command(text, ctx)
    assert not reply.ok and expected in reply.text
    assert [j.name for j in ctx.scheduler.jobs()] == ["daily_summary"]  # only the seeded default


async def test_jobs_show_the_next_run_and_unschedule_removes(ctx):
    await run_command("schedule snapshot dock every hour", ctx)
    await run_command("schedule summary at 19:00", ctx)
    listing = (await run_command("jobs", ctx)).text.splitlines()
    assert listing[0] == "*Jobs*" and len(listing) == 4
    # a member's jobs post where they were asked (U1 in C1), and say who set them
    assert re.fullmatch(r"• `summary-19:00` — daily_summary to <#C1>, daily at 19:00, set by <@U1>; next \w{3} 19:00 UTC",
                        listing[3])
    assert listing[2] == "• `snapshot-dock-hourly` — snapshot of dock to <#C1>, every 60 min, set by <@U1>; next within " \
        "60 min once the scheduler runs — paused: no pipeline runs on dock; resumes when dock runs again"
    ctx.scheduler.start()  # now `schedule` knows the interval job's next run
    soon = datetime.now(ZoneInfo("UTC")) + timedelta(minutes=60)
    line = next(x for x in (await run_command("jobs", ctx)).text.splitlines() if "snapshot-dock-hourly" in x)
    shown = re.search(r"next \w{3} (\d\d:\d\d) UTC — paused: no pipeline runs on dock", line)
    assert shown, line
    assert shown[1] in {f"{soon:%H:%M}", f"{soon - timedelta(minutes=1):%H:%M}"}
    assert (await run_command("unschedule snapshot-dock-hourly", ctx)).ok
    assert ctx.scheduler.next_run("snapshot-dock-hourly") is None
    miss = await run_command("unschedule snapshot-dock-hourly", ctx)
    assert not miss.ok and "the jobs are: `daily_summary`, `summary-19:00`" in miss.text


async def test_status_shows_rules_and_jobs(op_ctx):
    before = (await run_command("status", op_ctx)).text
    assert "*Rules*: 0 (each camera uses its guessed default)" in before
    assert re.search(r"\*Jobs\*: daily_summary \(next \w{3} 18:00 UTC\)", before)
    await run_command("rule dock line", op_ctx)
    await run_command("rule * appears", op_ctx)
    assert "*Rules*: 2 on dock, every camera" in (await run_command("status", op_ctx)).text


async def test_allowlist_covers_rules_and_schedules_but_not_listing(base_env, workspace_dir, backend):
    settings = load_settings(base_env, slack={"allowed_users": ["U1"]})
    stranger = make_ctx(settings, workspace_dir, backend, user_id="U2")
    for text in ("rule dock line", "unrule dock line_crossed", "schedule summary at 10:00", "unschedule daily_summary"):
        reply = await run_command(text, stranger)
        assert not reply.ok and "Only <@U1>" in reply.text
    assert stranger.services.monitor.rules() == [] and len(stranger.scheduler.jobs()) == 1
    assert (await run_command("rules", stranger)).ok and (await run_command("jobs", stranger)).ok


async def test_without_monitor_or_scheduler_the_commands_say_where_they_work(settings):
    bare = CommandContext(settings)
    reply = await run_command("rule * line", bare)
    assert not reply.ok and "the monitor is not running" in reply.text
    reply = await run_command("jobs", bare)
    assert not reply.ok and "`vision-agent chat` or `vision-agent serve`" in reply.text
    assert USAGE.count("schedule") >= 1 and "unrule CAMERA RULE_ID" in USAGE


async def test_slack_slash_rule_is_acknowledged_ephemerally(slack_bot: RunningBot, slack_api: SlackEmulator):
    cams = "| Name | URL |\n|---|---|\n| cam1 | rtsp://10.0.0.7/a |\n"
    (slack_bot.settings.workspace / "CAMERAS.md").write_text(cams)
    env = await slack_api.await_ack(slack_api.slash("rule cam1 line"))
    assert env.ack_payload["response_type"] == "ephemeral"
    assert "Rule on *cam1*" in env.ack_payload["text"]
    assert slack_bot.runtime.monitor.rules("cam1") == [Rule("line_crossed", "cam1")]
    assert slack_api.calls_to("chat.postMessage") == []  # nothing public
