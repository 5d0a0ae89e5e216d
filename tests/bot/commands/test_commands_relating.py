"""`/vision rule … near|then` through run_command: what reaches the monitor, and mistakes that say what to type."""

from __future__ import annotations

import pytest

from bot.commands.dispatch import run_command
from bot.commands.rules import RULE_USAGE
from bot.monitoring.rules import Rule
from tests.bot.commands.test_commands_monitoring import make_ctx
from tests.tools.fake_backend import FakeBackend


@pytest.fixture
def ctx(settings, workspace_dir):
    ctx = make_ctx(settings, workspace_dir, FakeBackend())
    yield ctx
    ctx.scheduler.stop()


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("rule dock near person car", Rule("near", "dock", "person", 0.5, other_class="car")),
        ("rule dock near person car 0", Rule("near", "dock", "person", 0, other_class="car")),
        ("rule dock near face person 1.5 cooldown=30",
         Rule("near", "dock", "face", 1.5, 30, other_class="person")),
        ("rule dock then gate person", Rule("then", "gate", "person", 60, after_camera="dock")),
        ("rule DOCK then gate 45s", Rule("then", "gate", None, 45, after_camera="dock")),
        ("rule dock then gate person 86400 cooldown=604800",
         Rule("then", "gate", "person", 86400, 604800, after_camera="dock")),
    ],
)
async def test_near_and_then_reach_the_monitor(ctx, text, rule):
    reply = await run_command(text, ctx)
    assert reply.ok, reply.text
    assert ctx.services.monitor.rules() == [rule]
    assert f"`/vision unrule {rule.camera} {rule.id}`" in reply.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rule dock near person", RULE_USAGE),
        ("rule dock near person car far", "near's gap is a number of box sizes from 0 (touching) to 10"),
        ("rule dock near person car 99", "near's gap is a number of box sizes"),
        ("rule dock near * car", "near takes two class names"),
        ("rule dock then", RULE_USAGE),
        ("rule dock then dock person", "`then` needs two different cameras; both are dock."),
        ("rule * then dock person", "`then` links two named cameras"),
        ("rule dock then gate person 30 extra", RULE_USAGE),
        # a window that is not 1 s to a day is one line naming it, not the whole usage (nor a class called '-5')
        ("rule dock then gate person -5", "then's window is seconds from 1 to 86400 (a day"),
        ("rule dock then gate -5", "then's window is seconds from 1 to 86400"),
        ("rule dock then gate person nan", "not 'nan'"),
        ("rule dock then gate person 1e309", "not '1e309'"),
        ("rule dock then gate person 0", "then's window is seconds from 1"),
        ("rule dock then gate person 99999999999", "not '99999999999'"),
        ("rule dock then gate person 30 cooldown=99999999999999", "cooldown is a number of seconds from 0 to 604800 (a week"),
        ("rule dock line cooldown=604801", "cooldown is a number of seconds from 0 to 604800"),
    ],
)
async def test_near_and_then_mistakes_say_what_to_type(ctx, text, expected):
    reply = await run_command(text, ctx)
    assert not reply.ok and expected in reply.text
    assert expected == RULE_USAGE or "\n" not in reply.text and "Usage" not in reply.text
    assert ctx.services.monitor.rules() == []


async def test_a_then_rule_says_which_camera_has_no_pipeline_yet(ctx):
    reply = await run_command("rule dock then gate person", ctx)
    assert "No camera or pipeline is called gate yet" in reply.text and "called dock" not in reply.text
    listing = (await run_command("rules gate", ctx)).text
    assert "`then:person@dock<=60s` (alerts when person is seen on dock, then on gate within 60 s;" in listing
    assert (await run_command("unrule gate then:person@dock&lt;=60s", ctx)).ok  # as Slack sends '<'
    assert ctx.services.monitor.rules() == []


async def test_rules_marks_a_stored_rule_whose_class_the_model_never_gives(ctx):
    added = await run_command("rule street near person car", ctx)  # before street runs: nothing to check yet
    assert added.ok and "No camera or pipeline is called street yet" in added.text
    assert "never fires" not in (await run_command("rules street", ctx)).text
    assert (await run_command("start 0 name=street model=builtin/people", ctx)).ok
    listing = (await run_command("rules street", ctx)).text
    assert "never fires: street's model `builtin/people` gives `person`" in listing, listing
    await run_command("rule street near person person", ctx)
    listing = (await run_command("rules street", ctx)).text
    assert listing.count("never fires") == 1, listing
