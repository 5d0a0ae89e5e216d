"""What the cooldown holds is said, not dropped: the next alert sums the crossings since the last one, a pipeline
that ends summarises what is still held, and `/vision rules` says while alerts are held."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from bot.commands.context import CommandContext
from bot.commands.dispatch import run_command
from bot.config import Settings
from bot.monitoring.monitor import Monitor
from bot.services import Services
from tests.bot.monitor_helpers import Clock, FakePipelines, make_router, result

SINCE = re.compile(r"crossed since the last alert: in (\d+) / out (\d+)")


@pytest.fixture
def clock() -> Clock:
    return Clock()


def rig(tmp_path: Path, settings: Settings, clock: Clock, cooldown: float):
    router, sink = make_router(tmp_path, clock, cooldown=cooldown)
    pipes = FakePipelines()
    monitor = Monitor(router, pipes, settings, clock=clock, db_path=tmp_path / "monitor.json")
    monitor.start()
    return monitor, pipes, sink, router


def crossings(seed: int, n: int) -> list[tuple[int, int]]:
    """Running (in, out) totals after each of n crossings, each one way or the other, one to three per frame."""
    rng, cin, cout, out = random.Random(seed), 0, 0, []
    while len(out) < n:
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.55:
                cin += 1
            else:
                cout += 1
        out.append((cin, cout))
    return out


@pytest.mark.parametrize(("seed", "frames", "cooldown", "step"), [(1, 27, 300.0, 3.0), (2, 9, 60.0, 5.0),
                                                                   (3, 40, 45.0, 1.0)])
async def test_crossings_the_cooldown_held_are_said_by_the_next_alert_and_at_the_end(
    tmp_path: Path, settings: Settings, clock: Clock, seed: int, frames: int, cooldown: float, step: float
) -> None:
    monitor, pipes, sink, _ = rig(tmp_path, settings, clock, cooldown)
    pipes.add("street", video="/videos/street.mp4")
    pipes.push("street", result(count_in=0))  # the baseline
    totals = crossings(seed, frames)
    for cin, cout in totals:
        pipes.push("street", result(count_in=cin, count_out=cout))
        clock.advance(step)
    await monitor.flush()

    # every alert but the first says how many crossed since the one before, and all of them add up
    said_in = said_out = 0
    for alert in sink.alerts:
        moved = alert.text[alert.text.index("(") + 1:alert.text.index(";")]  # "in +2, out +1": its own frame's
        said_in += sum(int(n) for n in re.findall(r"in \+(\d+)", moved))
        said_out += sum(int(n) for n in re.findall(r"out \+(\d+)", moved))
        if held := SINCE.search(alert.text):
            said_in, said_out = said_in + int(held[1]), said_out + int(held[2])
    # what is still held when the file ends: one summary, past the cooldown
    pipes.set("street", status="finished")
    await monitor.check_health()
    await monitor.flush()
    summaries = [a for a in sink.alerts if "held by the cooldown" in a.text]
    assert len(summaries) <= 1
    for last in summaries:
        held = SINCE.search(last.text)
        assert held, last.text
        said_in, said_out = said_in + int(held[1]), said_out + int(held[2])
        assert f"totals in {totals[-1][0]} / out {totals[-1][1]}" in last.text
    assert (said_in, said_out) == totals[-1]
    assert len(sink.alerts) < frames  # held, not posted one by one
    await monitor.check_health()  # said once
    await monitor.flush()
    assert sum("held by the cooldown" in a.text for a in sink.alerts) <= 1


async def test_rules_say_while_alerts_are_held_and_what_they_hold(
    tmp_path: Path, settings: Settings, clock: Clock
) -> None:
    monitor, pipes, _, router = rig(tmp_path, settings, clock, 300.0)
    services = Services(monitor=monitor, router=router, pipelines=pipes)  # type: ignore[arg-type]
    ctx = CommandContext(settings, services, "cli", "cli", operator=True)
    pipes.add("door")
    pipes.push("door", result(count_in=0))
    pipes.push("door", result(count_in=1))  # sent: the cooldown starts
    quiet = (await run_command("rules door", ctx)).text
    assert "alerts held for 300 s more" in quiet and "crossed since" not in quiet
    clock.advance(100)
    pipes.push("door", result(count_in=3, count_out=2))
    await monitor.flush()
    text = (await run_command("rules door", ctx)).text
    assert "alerts held for 200 s more: +4 crossed since the last alert: in 2 / out 2" in text
    clock.advance(201)
    assert "held" not in (await run_command("rules door", ctx)).text  # cooldown over: nothing held back


async def test_a_new_pipeline_of_the_same_name_counts_from_its_own_zero(
    tmp_path: Path, settings: Settings, clock: Clock
) -> None:
    monitor, pipes, sink, _ = rig(tmp_path, settings, clock, 300.0)
    pipes.add("door", video="/videos/door.mp4")
    pipes.push("door", result(count_in=0))
    pipes.push("door", result(count_in=5))  # sent
    pipes.set("door", status="stopped")
    await monitor.check_health()
    pipes.handles["p_door"] = pipes.handles["p_door"].with_(pipeline_id="p_door2", status="running")  # started again
    pipes.push("door", result(count_in=0))
    pipes.push("door", result(count_in=2))  # held by the cooldown of the first pipeline's alert
    pipes.set("door", status="finished")
    await monitor.check_health()
    await monitor.flush()
    assert [a.text for a in sink.alerts if "held" in a.text] == [
        "pipeline finished, +2 crossed since the last alert: in 2 / out 0 (held by the cooldown); totals in 2 / out 0"]
