"""System prompt: fully stable and cached (byte-identical across turns), the per-turn context, heartbeat mode."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from bot.agent.prompt import build_system, turn_context
from tools import build_registry
from workspace import Workspace

T1 = datetime(2026, 2, 11, 10, 0, tzinfo=UTC)


@pytest.fixture
def ws(tmp_path) -> Workspace:
    w = Workspace(tmp_path / "ws")
    w.init()
    (w.root / "AGENTS.md").write_text("# Vision Agent Instructions\n\n- This is a warehouse; shift change at 6am.\n")
    (w.root / "CAMERAS.md").write_text("# Cameras\n\n| Name | URL |\n|---|---|\n| dock | rtsp://10.0.0.5/s1 |\n")
    return w


def cached(blocks: list[dict]) -> list[dict]:
    """The blocks up to and including the cache_control marker."""
    idx = max(i for i, b in enumerate(blocks) if "cache_control" in b)
    return blocks[: idx + 1]


def test_stable_prefix_is_byte_identical_between_turns_and_carries_the_only_marker(ws):
    reg = build_registry()
    first = build_system(ws, reg)
    later = build_system(ws, reg)
    assert json.dumps(cached(first)) == json.dumps(cached(later))
    assert sum("cache_control" in b for b in first) == 1
    assert cached(first) == first  # the whole system prompt is the cached prefix: nothing follows the marker
    tail_first = turn_context(ws, "", now=T1)
    tail_later = turn_context(ws, "pipe_1 dock: running, 3 people", ["parking-lot"], now=T1 + timedelta(minutes=7))
    assert tail_first != tail_later
    assert tail_first.startswith("<turn_context>\nCurrent time: ") and tail_first.endswith("</turn_context>")
    assert "2026-02-11" in tail_first
    assert not any("2026" in b["text"] for b in cached(first))  # no timestamp can break the cache


def test_workspace_files_and_capabilities_are_in_the_stable_part(ws):
    blocks = build_system(ws, build_registry(), capabilities="Blocks: line_counter, time_in_zone")
    stable = "\n".join(b["text"] for b in cached(blocks))
    assert "# AGENTS.md" in stable and "warehouse" in stable
    assert '| dock | camera "dock" |' in stable and "10.0.0.5" not in stable  # cameras by name, never by URL
    assert cached(blocks)[-1]["text"] == "Blocks: line_counter, time_in_zone"
    changed = build_system(ws, build_registry(), capabilities="Blocks: other")
    assert cached(changed) != cached(blocks)


def test_identity_documents_builtin_models_images_and_workflow_format(ws):
    identity = build_system(ws, build_registry())[0]["text"]
    for needle in ("builtin/faces", "Haar", "builtin/people", "HOG", "builtin/motion", "workspace/project/version",
                   "Slack file id", '"steps"', "$steps.", "remember", "run_inference"):
        assert needle in identity, needle


def test_skills_listed_in_the_stable_prompt_and_loaded_ones_in_full_in_the_turn_context(ws):
    blocks = build_system(ws, build_registry())
    stable = "\n".join(b["text"] for b in cached(blocks))
    for name in ("ppe-compliance", "parking-lot", "package-delivery", "quality-inspection"):
        assert f"- {name}:" in stable
    tail = turn_context(ws, skills_loaded=["parking-lot"], now=T1)
    assert "Skill loaded for this request: parking-lot" in tail
    assert "# Parking Lot and Vehicle Monitoring" in tail
    assert "Package Delivery Detection" not in tail  # only the matched skill is loaded in full


def test_a_new_skill_changes_the_stable_prompt_and_an_unknown_one_is_skipped(ws):
    before = build_system(ws, build_registry())
    (ws.skills_dir / "forklift-safety").mkdir()
    (ws.skills_dir / "forklift-safety" / "SKILL.md").write_text(
        "---\nname: forklift-safety\ndescription: Forklifts near people in the warehouse\n---\n# Forklift Safety\n")
    after = build_system(ws, build_registry())
    assert after != before and "- forklift-safety: Forklifts near people" in json.dumps(cached(after))
    assert "Skill loaded" not in turn_context(ws, skills_loaded=["no-such-skill"], now=T1)


def test_active_pipelines_in_the_turn_context(ws):
    assert "pipe_7 'dock'" in turn_context(ws, "pipe_7 'dock' running 5 fps", now=T1)
    assert "None running." in turn_context(ws, "", now=T1)
    assert not any("pipe_7" in b["text"] for b in build_system(ws, build_registry()))


def test_heartbeat_mode_is_lighter_and_asks_for_heartbeat_ok(ws):
    full = build_system(ws, build_registry())
    hb = build_system(ws, build_registry(), mode="heartbeat")
    text = "\n".join(b["text"] for b in hb)
    assert "exactly HEARTBEAT_OK" in text
    assert "Heartbeat Checklist" in text and "Is every running pipeline still receiving frames" in text
    assert '| dock | camera "dock" |' in text and "10.0.0.5" not in text  # cameras are named in alerts
    assert "# AGENTS.md" not in text and "Skill loaded" not in text
    assert len(json.dumps(hb)) < len(json.dumps(full)) / 2
    assert sum("cache_control" in b for b in hb) == 1


def test_builtin_model_ids_in_the_prompt_are_the_ones_the_backend_knows(ws):
    from bot.backends.workflows import BUILTIN_MODELS

    identity = build_system(ws, build_registry())[0]["text"]
    for model_id, block in BUILTIN_MODELS.items():
        assert f"`{model_id}`" in identity and f"`{block}`" in identity
