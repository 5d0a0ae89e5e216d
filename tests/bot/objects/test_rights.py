"""Rights on what members create: only its owner or an operator changes or removes a thing; a member's object never
replaces an operator's of the same name; every kind is capped per person and in total; a job posts only where its
owner may, and so does a route."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest

from bot.config import load_settings
from bot.rights import OPERATOR, Requester
from tests.bot.objects.doors import ALICE, Doors, open_doors, settings_env

BOB = Requester.slack("U0BOB", "C0BOB", "public", "Bob")
CAROL = Requester.slack("U0CAROL", "C0CAROL", "public", "Carol")
BOSS = Requester.slack("U0BOSS", "C0BOB", "public", "Boss")  # an operator in Slack (slack.operators)


@pytest.fixture
async def doors(base_env) -> AsyncIterator[Doors]:
    settings = load_settings(settings_env(base_env), slack={"operators": [BOSS.user_id], "open_channels": ["C0OPEN"]})
    async for d in open_doors(settings):
        yield d


def _recipe(doors: Doors, name: str, owner: Requester) -> None:
    meta = {"created_by": owner.user_id, "owner": {"user": owner.user_id, "channel": owner.channel_id, "place": "public"},
            "audience": f"public:{owner.channel_id}", "successes": 0, "failures": 0, "step_failures": {}}
    (doors.rt.workspace.root / "recipes").mkdir(exist_ok=True)
    (doors.rt.workspace.root / "recipes" / f"{name}.json").write_text(json.dumps(
        {"name": name, "description": "", "version": 1, "parameters": {}, "steps": [], "metadata": meta}))


@dataclass(frozen=True)
class Kind:
    """How to make one object of a kind as someone, and how someone else tries to remove it."""

    name: str
    make: Callable[[Doors, Requester], Awaitable[str]]
    remove: Callable[[Doors, Requester], Awaitable[str]]


async def _watch_id(doors: Doors) -> str:
    return doors.rt.watches.all()[0].id


KINDS = [
    Kind("pipeline", lambda d, who: d.slash("start dock", who), lambda d, who: d.slash("stop dock", who)),
    Kind("rule", lambda d, who: d.slash("rule dock count person>3", who),
         lambda d, who: d.slash("unrule dock count_over:person>3", who)),
    Kind("watch", lambda d, who: d.slash("watch dock appears person", who),
         lambda d, who: _then(_watch_id(d), lambda wid: d.slash(f"unwatch {wid}", who))),
    Kind("job", lambda d, who: d.slash("schedule digest every hour name=ops-digest", who),
         lambda d, who: d.slash("unschedule ops-digest", who)),
    Kind("route", lambda d, who: _then(d.slash("start dock", who), lambda _: d.slash(
        f"route <#{who.channel_id}> camera=dock", who)), lambda d, who: d.slash(f"route <#{who.channel_id}> camera=dock",
                                                                               who)),
    Kind("recipe", lambda d, who: _made(_recipe(d, "ops", who)), lambda d, who: d.slash("recipe delete ops", who)),
]


async def _then(first: Awaitable[str], then: Callable[[str], Awaitable[str]]) -> str:
    return await then(await first)


async def _made(_: None) -> str:
    return "made"


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
async def test_only_its_owner_or_an_operator_changes_or_removes_it(doors: Doors, kind: Kind) -> None:
    made = await kind.make(doors, ALICE)
    assert "belongs to" not in made and "Usage" not in made, made
    refused = await kind.remove(doors, BOB)
    assert "belongs to <@U0ALICE>: only they or an operator may change or remove it" in refused, refused
    assert "<@U0BOSS>" in refused  # says who else may
    allowed = await kind.remove(doors, BOSS)  # an operator named in slack.operators
    assert "belongs to" not in allowed, allowed


@pytest.mark.parametrize("kind", [k for k in KINDS if k.name not in ("recipe", "watch")], ids=lambda k: k.name)
async def test_a_members_object_never_replaces_the_operators(doors: Doors, kind: Kind) -> None:
    operator = Requester(OPERATOR.user_id, ALICE.channel_id, operator=True)  # made from the terminal, for Alice's room
    await kind.make(doors, operator)
    taken = await kind.make(doors, ALICE) if kind.name != "pipeline" else await kind.remove(doors, ALICE)
    assert "belongs to the operator" in taken, taken


async def test_the_operators_seeded_summary_is_never_replaced_by_a_members_job_of_its_name(doors: Doors) -> None:
    said = await doors.slash("schedule summary at 07:00 name=daily_summary", ALICE)
    assert "belongs to the operator" in said
    [job] = doors.rt.scheduler.jobs()
    assert (job.name, job.at, job.owner) == ("daily_summary", "18:00", None)


async def test_stop_all_by_a_member_stops_their_own_and_says_what_it_left(doors: Doors) -> None:
    await doors.slash("start dock", ALICE)
    await doors.slash("start gate", BOB)
    said = await doors.slash("stop all", BOB)
    assert "*gate*" in said and "1 pipeline of other people or the operator left as they are" in said
    assert {h.name: h.status for h in doors.rt.pipelines.snapshot()} == {"dock": "running", "gate": "stopped"}


@pytest.mark.parametrize(("kind", "make"), [
    ("rule", lambda d, who, n: d.slash(f"rule dock count person>{n}", who)),
    ("watch", lambda d, who, n: d.slash(f"watch dock count person>{n}", who)),
    ("job", lambda d, who, n: d.slash(f"schedule digest every {n + 1} hours", who)),
    ("route", lambda d, who, n: _then(d.slash(f"start dock name=cam{n}", who), lambda _: d.slash(
        f"route <#{'C0OPEN' if who.operator else who.channel_id}> camera=cam{n}", who))),
    ("note", lambda d, who, n: d.tool("remember", {"content": f"note {n}"}, who)),
    ("pipeline", lambda d, who, n: d.slash(f"start {['dock', 'gate'][n % 2]} name=p{n}", who)),
])
async def test_every_kind_is_capped_per_person_and_in_total(base_env, kind: str, make) -> None:
    total = 4 if kind == "job" else 3  # the seeded daily summary is a job too, the operator's
    caps = {kind: {"per_person": 2, "total": total}} if kind != "pipeline" else {}
    limits = {"pipelines": {"max_per_user": 2, "max_total": total}} if kind == "pipeline" else {}
    settings = load_settings(settings_env(base_env), caps=caps, **limits)
    async for doors in open_doors(settings):
        for n in range(2):
            assert "the most" not in (said := await make(doors, ALICE, n)), said
        mine = await make(doors, ALICE, 2)
        assert "the most one person may" in mine and "= 2)" in mine, mine
        assert "the most" not in (said := await make(doors, BOB, 3)), said
        full = await make(doors, CAROL, 4)
        assert "the most this bot keeps at once" in full and f"= {total})" in full, full
        held = await make(doors, OPERATOR, 5)  # the operator is held by the total too, never by the per-person cap
        assert "the most this bot keeps at once" in held, held


async def test_a_members_job_posts_only_where_they_may(doors: Doors) -> None:
    here = await doors.slash("schedule digest every hour", ALICE)
    assert "to <#C0OPS>" in here  # where it was asked, not the operator's alert channel
    elsewhere = await doors.slash("schedule digest every 2 hours to=<#C0SECRET|secret>", ALICE)
    assert "a job you schedule posts here" in elsewhere and "C0OPEN" in elsewhere
    link = "https://acme.slack.com/archives/C0SECRET/p1700000000000100"
    assert "a job you schedule posts here" in await doors.slash(f"schedule digest every 3 hours to={link}", ALICE)
    thread = "https://acme.slack.com/archives/C0OPS/p1700000000000100"
    assert "(thread)" in await doors.slash(f"schedule digest every 4 hours to={thread}", ALICE)
    assert "to <#C0OPEN>" in await doors.slash("schedule digest every 5 hours to=<#C0OPEN|open>", ALICE)
    assert "to <#C0SECRET>" in await doors.slash("schedule digest every 6 hours to=<#C0SECRET|secret>", BOSS)
    targets = {j.every_minutes: (j.channel, j.thread_ts) for j in doors.rt.scheduler.jobs() if j.every_minutes}
    assert targets == {60: ("C0OPS", None), 240: ("C0OPS", "1700000000.000100"), 300: ("C0OPEN", None),
                       360: ("C0SECRET", None)}


async def test_a_member_routes_alerts_only_where_they_read_them(doors: Doors) -> None:
    await doors.slash("start dock", ALICE)
    refused = await doors.slash("route <#C0SECRET|secret> camera=dock", ALICE)
    assert "you can route alerts to this channel or one the operator opened (C0OPEN)" in refused
    assert doors.rt.router.routes() == {}
    assert "now go to" in await doors.slash("route <#C0OPEN|open> camera=dock", ALICE)
    assert doors.rt.router.route_owner("dock").user == "U0ALICE"


async def test_a_member_routes_only_their_own_pipelines_alerts(doors: Doors) -> None:
    """Where every camera's alerts go, and the operator's cameras', is the operator's: a member's route never takes
    them out of the alert channel."""
    assert "every camera's alerts go is the operator's" in await doors.slash("route <#C0OPS|ops>", ALICE)
    assert "go where its owner or the operator sends them" in await doors.slash("route <#C0OPS> camera=gate", ALICE)
    await doors.slash("start gate", BOB)
    assert "go where its owner or the operator sends them" in await doors.slash("route <#C0OPS> camera=gate", ALICE)
    assert "now go to" in await doors.slash("route <#C0BOB> camera=GATE", BOB)  # the camera's own name, any case
    assert doors.rt.router.routes() == {"gate": "C0BOB"}


async def test_a_members_rule_on_the_operators_camera_alerts_where_they_set_it(doors: Doors) -> None:
    """It alerts beside the camera's own rules (never replacing them or its guessed defaults), and in the member's
    channel, not in the operator's alert channel."""
    from tests.tools.fake_backend import result

    sent: list[tuple[str, str | None]] = []

    async def sink(alert, channel):  # type: ignore[no-untyped-def]
        sent.append((alert.rule, channel))

    doors.rt.router.add_sink(sink)
    await doors.slash("start dock")  # the operator's camera
    said = await doors.slash("rule dock count person>1", ALICE)
    assert "Its alerts come to <#C0OPS>" in said
    pid = doors.rt.pipelines.resolve("dock").pipeline_id
    doors.backend.emit(pid, result({"person": 3}))
    await doors.rt.monitor.flush()
    assert ("count_over:person>1", "C0OPS") in sent
    assert any(rule == "class_appears:*" and channel != "C0OPS" for rule, channel in sent), sent  # its default stays
    assert "rules for every camera are the operator's" in await doors.slash("rule * appears person", ALICE)
