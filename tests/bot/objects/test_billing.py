"""Model work nobody watches is its owner's: a confirm watch's looks and a member's scheduled summary are counted on
the owner's share of the day's budget (never the heartbeat's reserve), and stop when that share is spent, saying so
where they were asked. Against the Messages API emulator, through the real LLM client."""

from __future__ import annotations

from pathlib import Path

from bot.backends.base import Detection, InferenceResult
from bot.config import load_settings
from bot.llm.client import LLMClient
from bot.llm.look import FrameLook
from bot.monitoring.rules import Rule
from bot.monitoring.watch import EXPIRED
from bot.monitoring.watch_conditions import RuleCondition
from bot.objects.owner import Owner
from bot.rights import Requester
from bot.scheduling.cron_jobs import CronJob, _narrative
from tests.bot.agent.test_agent import make_agent
from tests.bot.monitor_helpers import Clock
from tests.bot.monitoring.test_watches import _book, _watch
from tests.fakes.anthropic_api import FakeAnthropic, text
from workspace import Workspace

ALICE = Owner(user="U0ALICE", channel="C0OPS", place="public")


def seen(frame: bytes) -> InferenceResult:
    return InferenceResult(detections=(Detection("person", 0.9, (10.0, 10.0, 40.0, 90.0), 1),), frame=frame)


def _ws(root: Path) -> Workspace:
    ws = Workspace(root)
    ws.init()
    return ws


def spend_alices_share(llm: LLMClient) -> None:
    """Alice chatted earlier today: $3 of a $10 day, over her 25 % share (the day and the people's part are not)."""
    llm.usage.settle(0.0, {"input_tokens": 1_000_000, "output_tokens": 0}, None,
                     ["total", "people", "channel:C0OPS", "user:U0ALICE"])


def _spent(usage_by: dict[str, float]) -> set[str]:
    return {k for k, v in usage_by.items() if v > 0}


async def test_a_confirm_look_is_counted_on_the_watch_owners_share(anthropic_api: FakeAnthropic, llm_settings,
                                                                    tmp_path: Path, astronaut_jpeg: bytes) -> None:
    llm = LLMClient(llm_settings, tmp_path / "usage.json", retry_base_delay=0.001)
    clock = Clock()
    book, pipes, sent = _book(tmp_path, clock)
    book.confirm = FrameLook(llm)
    try:
        anthropic_api.enqueue(text("YES, a person."))
        book.add(_watch(clock, RuleCondition(Rule("class_appears", "dock", class_name="person")), confirm=True,
                        user_id="U0ALICE", channel="C0OPS", owner=ALICE))
        pipes.push("dock", seen(astronaut_jpeg))
        await book.flush()
        assert "(the model agreed on the frame)" in sent[0][0].text
        assert _spent(llm.usage.today()["by"]) == {"people", "channel:C0OPS", "user:U0ALICE"}  # not the reserve's
    finally:
        await llm.aclose()


async def test_a_spent_share_stops_the_watch_and_says_so_where_it_was_asked(anthropic_api: FakeAnthropic, llm_env,
                                                                             tmp_path: Path, astronaut_jpeg: bytes) -> None:
    llm = LLMClient(load_settings(llm_env), tmp_path / "usage.json", retry_base_delay=0.001)
    spend_alices_share(llm)
    clock = Clock()
    book, pipes, sent = _book(tmp_path, clock)
    book.confirm = FrameLook(llm)
    try:
        w = book.add(_watch(clock, RuleCondition(Rule("class_appears", "dock", class_name="person")), confirm=True,
                            user_id="U0ALICE", channel="C0OPS", thread_ts="1700000000.000100", owner=ALICE))
        pipes.push("dock", seen(astronaut_jpeg))
        await book.flush()
        [(alert, channel)] = sent
        assert channel == "C0OPS" and alert.thread_ts == "1700000000.000100" and alert.rule == EXPIRED
        assert alert.text.startswith(f"<@U0ALICE> Watch `{w.id}` on dock stopped before it could confirm")
        assert "your share of today's LLM budget" in alert.text and book.all() == []
        assert anthropic_api.requests == []  # refused before the model was asked
    finally:
        await llm.aclose()


async def test_a_members_summary_is_billed_to_them_and_says_when_their_share_is_spent(
    anthropic_api: FakeAnthropic, llm_env, tmp_path: Path
) -> None:
    job = CronJob("alice-summary", "daily_summary", at="18:00", owner=ALICE)
    assert job.requester == Requester.unattended_for("U0ALICE", "C0OPS") and job.requester.unattended
    agent = make_agent(load_settings(llm_env), _ws(tmp_path / "a"))
    anthropic_api.enqueue(text("A calm day at the dock."))
    assert await _narrative(agent, "2026-03-04", "- 12:00 dock: 2 people", job.requester) == "A calm day at the dock."
    assert _spent(agent.llm.usage.today()["by"]) == {"people", "channel:C0OPS", "user:U0ALICE"}
    await agent.llm.aclose()
    broke = make_agent(load_settings(llm_env), _ws(tmp_path / "b"))
    spend_alices_share(broke.llm)
    said = await _narrative(broke, "2026-03-04", "- 12:00 dock: 2 people", job.requester)
    assert said.startswith("(No written summary today: <@U0ALICE>'s share of today's model budget is spent")
    await broke.llm.aclose()


def test_a_members_unattended_work_has_their_rights_audience_and_bill_never_the_operators(settings) -> None:
    """A tool the operator opted in for unattended turns (heartbeat.unattended_tools) runs, in a member's job, as
    that member: it may not stop the operator's pipelines, its notes keep the member's audience, it spends their share."""
    from bot.llm.budget import payer_of
    from bot.objects.owner import change_refusal, is_operator
    from bot.rights import UNATTENDED, audience

    who = Requester.unattended_for("U0ALICE", "C0OPS")
    assert who.unattended and not who.operator and not who.person  # its prompt is ours, not Alice's words
    assert not is_operator(settings, who) and change_refusal(settings, None, who, "pipeline 'dock'")
    assert audience(who) == "private:C0OPS" and Owner.of(who).user == "U0ALICE"
    assert payer_of(who).keys() == ["total", "people", "channel:C0OPS", "user:U0ALICE"]
    assert Requester.unattended_for(None, None) is UNATTENDED and payer_of(UNATTENDED).keys() == ["total"]
