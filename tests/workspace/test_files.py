"""Workspace on disk: init from templates, prompt files, size limit, camera registry."""

from __future__ import annotations

import logging
from pathlib import Path

from bot.config import load_settings
from workspace import Camera, Workspace
from workspace.files import TEMPLATES, parse_camera_table

EXPECTED = [
    "AGENTS.md", "USER.md", "CAMERAS.md", "HEARTBEAT.md", "config.yaml", "memory/KNOWLEDGE.md",
    "skills/ppe-compliance/SKILL.md", "skills/parking-lot/SKILL.md", "skills/package-delivery/SKILL.md",
    "skills/quality-inspection/SKILL.md",
]


def test_init_creates_seed_layout(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    created = ws.init()
    for rel in EXPECTED:
        assert (ws.root / rel).is_file(), rel
        assert ws.root / rel in created
    for d in (ws.sessions_dir, ws.memory_dir, ws.frames_dir, ws.state_dir, ws.skills_dir):
        assert d.is_dir()
    assert ws.active_state_path == ws.root / "active_state.json"
    assert ws.exists()


def test_init_is_idempotent_and_never_overwrites_edits(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    (ws.root / "AGENTS.md").write_text("# mine\nbe brief\n")
    (ws.root / "skills/parking-lot/SKILL.md").write_text("edited")
    assert ws.init() == []
    assert ws.init(restore=True) == []
    assert (ws.root / "AGENTS.md").read_text() == "# mine\nbe brief\n"
    assert (ws.root / "skills/parking-lot/SKILL.md").read_text() == "edited"


def test_deleted_template_stays_deleted_unless_restored(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    skill = ws.root / "skills/quality-inspection/SKILL.md"
    skill.unlink()
    assert ws.init() == []  # start-up respects the deletion
    assert not skill.exists()
    assert ws.init(restore=True) == [skill]  # `vision-agent init` brings it back
    assert skill.read_bytes() == (TEMPLATES / "skills/quality-inspection/SKILL.md").read_bytes()


def test_template_config_yaml_loads_to_the_defaults(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    ws.init()
    with_file = load_settings({"VISION_AGENT_WORKSPACE": str(ws.root)})
    without = load_settings({"VISION_AGENT_WORKSPACE": str(tmp_path / "empty")})
    assert with_file.model_dump(exclude={"workspace"}) == without.model_dump(exclude={"workspace"})


def test_prompt_files_skip_comments_and_empty_files(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    files = ws.load_prompt_files()
    assert list(files) == ["AGENTS.md", "CAMERAS.md"]  # USER.md is only a comment until the user fills it
    assert "<!--" not in files["AGENTS.md"] and "builtin/people" in files["AGENTS.md"]
    (ws.root / "USER.md").write_text("# User\nName: Dana\n")
    assert ws.load_prompt_files()["USER.md"] == "# User\nName: Dana"
    assert "HEARTBEAT_OK" in ws.heartbeat_checklist()


def test_oversized_prompt_file_is_skipped_with_warning(tmp_path: Path, caplog) -> None:
    ws = Workspace(tmp_path, max_file_bytes=2000)
    ws.init()
    (ws.root / "USER.md").write_text("x" * 2001)
    with caplog.at_level(logging.WARNING, logger="workspace.files"):
        files = ws.load_prompt_files()
    assert "USER.md" not in files and "AGENTS.md" in files
    msg = " ".join(r.getMessage() for r in caplog.records)
    assert "USER.md" in msg and "2000" in msg
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="workspace.files"):
        assert "USER.md" not in ws.load_prompt_files()
    assert caplog.records == []  # once, not on every turn


def test_default_size_limit_is_16k(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    (tmp_path / "AGENTS.md").write_text("a" * (16 * 1024))
    (tmp_path / "CAMERAS.md").write_text("a" * (16 * 1024 + 1))
    assert list(ws.load_prompt_files()) == ["AGENTS.md"]


def test_cameras_parsed_from_table_and_resolved_by_name(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    assert ws.cameras() == []  # the template's example rows sit in a comment
    with (ws.root / "CAMERAS.md").open("a") as f:
        f.write("| cam1 | rtsp://192.168.1.50/stream1 | Production Floor East | 1080p |\n")
        f.write("| Dock | `rtsp://u:p@10.0.0.9/live` | Loading Dock | |\n")
    assert ws.cameras() == [
        Camera("cam1", "rtsp://192.168.1.50/stream1", "Production Floor East", "1080p"),
        Camera("Dock", "rtsp://u:p@10.0.0.9/live", "Loading Dock", ""),
    ]
    assert ws.camera("dock").url == "rtsp://u:p@10.0.0.9/live"
    assert ws.camera("cam9") is None


def test_camera_tables_follow_their_headers() -> None:
    text = (
        "## Office\n| URL | Name |\n|---|---|\n| 0 | webcam |\n\n"
        "## Other data\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "## Yard\n| Camera | Source | Where |\n|:--|:--|:--|\n| gate | rtsp://10.0.0.2/s | North gate |\n"
    )
    assert parse_camera_table(text) == [Camera("webcam", "0"), Camera("gate", "rtsp://10.0.0.2/s", "North gate")]


def test_a_camera_row_may_say_how_the_camera_is_turned() -> None:
    text = ("| Name | URL | Rotation | Mirror |\n|---|---|---|---|\n| hall | rtsp://10.0.0.3/s | 180 | |\n"
            "| desk | 0 | | h |\n")
    assert parse_camera_table(text) == [Camera("hall", "rtsp://10.0.0.3/s", rotate="180"),
                                        Camera("desk", "0", flip="h")]


def test_template_heartbeat_schedules_nothing(tmp_path: Path) -> None:
    from bot.scheduling.heartbeat.checklist import scheduled_items

    ws = Workspace(tmp_path)
    ws.init()
    # An untouched workspace must cost nothing while idle: no scheduled LLM checks until the user adds them.
    assert scheduled_items((ws.root / "HEARTBEAT.md").read_text()) == []


def test_named_zones_come_from_their_own_table_and_are_not_cameras(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    assert ws.zones() == {}  # the template's example zone sits in a comment
    (ws.root / "CAMERAS.md").write_text(
        "| Name | URL |\n|---|---|\n| dock | rtsp://10.0.0.5/s1 |\n\n## Zones\n\n"
        "| Zone | Camera | Polygon | Notes |\n|---|---|---|---|\n| loading-bay | dock | `100,300,500,300,500,470` | |\n"
        "| empty | dock | | |\n"
    )
    assert ws.zones() == {"loading-bay": "100,300,500,300,500,470"}
    assert [c.name for c in ws.cameras()] == ["dock"]
