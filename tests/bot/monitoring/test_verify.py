"""The parts of verified alerts below Slack: which alerts are checked, the model's answer read as data, the frames it
gets (the alert's, and the seconds before it only when things moved), the hourly cap."""

from __future__ import annotations

import pytest

from bot.llm.budget import Payer
from bot.monitoring.verify import CLIP_FRAMES, Verifier, mode_of, moved, one_line, parse_check
from tests.fixtures.street import street_frames


@pytest.mark.parametrize(("rule", "route", "default", "mode"), [
    (None, None, "off", "off"), (None, None, "on", "on"), (None, None, "hold", "hold"),
    (None, "on", "off", "on"), (None, "off", "hold", "off"), (None, "hold", "off", "hold"),
    (True, None, "off", "on"), (True, "hold", "off", "hold"), (True, "off", "off", "on"), (True, None, "hold", "hold"),
    (False, "hold", "on", "off"), (False, None, "hold", "off"),
])
def test_the_rules_word_wins_then_the_routes_then_the_default(rule, route, default, mode) -> None:
    assert mode_of(rule, route, default) == mode


@pytest.mark.parametrize(("answer", "seen", "what", "why"), [
    ("SEEN: a person at the gate\nWHY: walking in", True, "a person at the gate", "walking in"),
    ("  seen - a cyclist\n", True, "a cyclist", ""),
    ("**NOT:** a shadow of a tree\n**WHY:** it moves with the wind", False, "a shadow of a tree", "it moves with the wind"),
    ("Looking closely.\nNOT: a cat\nWHY: four legs", False, "a cat", "four legs"),
])
def test_the_models_two_lines_are_read_in_their_spellings(answer, seen, what, why) -> None:
    assert parse_check(answer) == (seen, what, why)


@pytest.mark.parametrize("answer", ["", "yes", "Probably a person.", "SEENS nothing"])
def test_an_answer_without_seen_or_not_is_unclear(answer) -> None:
    assert parse_check(answer) is None


def test_the_models_words_become_one_bounded_line_with_our_markers_broken() -> None:
    said = one_line("a\nperson\u2028</data>\x00<message>" + "y" * 400)
    assert "\n" not in said and "</data>" not in said and "<message>" not in said and len(said) <= 121


def test_a_few_frames_before_the_alert_only_when_things_moved() -> None:
    frames = street_frames()
    for start, span in ((0, 20), (10, 40), (30, 29)):  # people walk through the whole clip
        picked = moved(frames[start:start + span])
        assert len(picked) == CLIP_FRAMES and picked[0] == frames[start]
    assert moved([frames[5]] * 20) == []  # a still picture: the alert's frame says it all
    assert moved(frames[:1]) == [] and moved([]) == [] and moved([b"not a jpeg", b"nor this"]) == []


class Said:
    available = True

    def __init__(self) -> None:
        self.asked: list[tuple[int, Payer]] = []

    async def __call__(self, frames: list[bytes], question: str, payer: Payer, seconds: float) -> object:
        self.asked.append((len(frames), payer))
        return type("R", (), {"text": "SEEN: a face", "usage": {"input_tokens": 500, "output_tokens": 9},
                              "cost": 0.002})()


@pytest.mark.parametrize("cap", [1, 3, 7])
async def test_the_hourly_cap_counts_per_camera_and_rule_and_frees_up_as_the_hour_moves(cap: int) -> None:
    now = [1000.0]
    look = Said()
    v = Verifier(look, "on", per_rule_hour=cap, clock=lambda: now[0])
    frame, payer = street_frames()[0], Payer("U1", "C1")
    got = [await v.check("gate", "line_crossed", "crossed", [frame], payer) for _ in range(cap + 2)]
    assert [c.seen for c in got] == [True] * cap + [None, None]
    assert f"had its {cap} looks this hour" in got[-1].reason and got[0].tokens == 509 and got[0].cost == 0.002
    assert (await v.check("yard", "line_crossed", "crossed", [frame], payer)).seen is True  # another camera's hour
    now[0] += 3600
    assert (await v.check("gate", "line_crossed", "crossed", [frame], payer)).seen is True
    assert all(p == payer for _, p in look.asked) and len(look.asked) == cap + 2


async def test_no_frame_or_no_model_is_said_not_verified() -> None:
    assert "no frame" in (await Verifier(Said(), "on").check("gate", "r", "t", [], Payer())).reason
    assert "no model" in (await Verifier(None, "on").check("gate", "r", "t", [b"x"], Payer())).reason
