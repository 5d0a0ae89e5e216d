"""The alert frame store: the router keeps sent alerts' frames by id, the newest `keep` only, and nothing else."""

from __future__ import annotations

from pathlib import Path

from bot.monitoring.alert_frames import AlertFrames
from bot.monitoring.alerts import Alert, AlertRouter


def test_only_the_newest_frames_are_kept_and_a_restart_keeps_their_order(tmp_path: Path) -> None:
    frames = AlertFrames(tmp_path / "frames", keep=2)
    for i in range(3):
        assert frames.put(f"a{i}", f"jpeg {i}".encode())
    assert frames.get("a0") is None and frames.get("a1") == b"jpeg 1" and frames.get("a2") == b"jpeg 2"
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == ["a1.jpg", "a2.jpg"]
    again = AlertFrames(tmp_path / "frames", keep=2)  # after a restart the oldest still goes first
    again.put("a3", b"jpeg 3")
    assert again.get("a1") is None and again.get("a2") == b"jpeg 2" and again.get("a3") == b"jpeg 3"


def test_an_id_that_is_not_an_alert_id_names_no_file(tmp_path: Path) -> None:
    (tmp_path / "secret.jpg").write_bytes(b"not yours")
    frames = AlertFrames(tmp_path / "frames")
    assert not frames.put("../secret", b"x") and not frames.put("", b"x")
    assert frames.get("../secret") is None and frames.get("..") is None and frames.get("nope") is None


async def test_the_router_stores_the_frames_of_sent_alerts_not_of_held_ones(tmp_path: Path) -> None:
    frames = AlertFrames(tmp_path / "frames")
    router = AlertRouter(tmp_path / "alerts.json", cooldown_seconds=300, frames=frames)
    sent = Alert("dock", "line_crossed", "1 crossed", frame=b"first")
    held = Alert("dock", "line_crossed", "2 crossed", frame=b"second")  # inside the cooldown
    assert await router.dispatch(sent) is None and await router.dispatch(held) == "cooldown"
    assert frames.get(sent.alert_id) == b"first" and frames.get(held.alert_id) is None
