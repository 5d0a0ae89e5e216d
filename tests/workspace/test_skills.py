"""Skills: frontmatter parsed, broken ones skipped with a warning, loaded by name, matched to requests."""

from __future__ import annotations

import importlib.util
import logging
import re
from pathlib import Path

import pytest

from workspace import Workspace

_BLOCK = re.compile(r"(?:roboflow_core|vision_agent)/[a-z0-9_]+@v\d+")
SKILLS = {"ppe-compliance", "parking-lot", "package-delivery", "quality-inspection"}


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    w = Workspace(tmp_path)
    w.init()
    return w


def test_four_template_skills_listed_with_frontmatter(ws: Workspace) -> None:
    skills = {s.name: s for s in ws.list_skills()}
    assert set(skills) == SKILLS
    for s in skills.values():
        assert len(s.description) > 30 and s.models and s.when_to_use and s.keywords
        assert s.path == ws.skills_dir / s.name / "SKILL.md"
    assert "builtin/people" in skills["ppe-compliance"].models


def test_template_skills_name_real_workflow_blocks(ws: Workspace) -> None:
    # Block type names are read from the installed workflow blocks' source (importing them takes seconds).
    spec = importlib.util.find_spec("roboflow_workflows")
    assert spec is not None and spec.submodule_search_locations
    steps = Path(next(iter(spec.submodule_search_locations))) / "core_steps"
    known = {m for f in steps.rglob("*.py") for m in _BLOCK.findall(f.read_text(encoding="utf-8"))}
    ours = (Path(__file__).resolve().parents[2] / "bot" / "backends" / "builtin").glob("*.py")
    known |= {m for f in ours for m in _BLOCK.findall(f.read_text(encoding="utf-8"))}  # the offline detector blocks
    assert {"roboflow_core/byte_tracker@v3", "vision_agent/hog_people_detector@v1"} <= known
    for skill in ws.list_skills():
        used = set(_BLOCK.findall(skill.path.read_text()))
        assert used, skill.name
        assert used <= known, (skill.name, used - known)


def test_load_skill_returns_full_text(ws: Workspace) -> None:
    text = ws.load_skill("PPE-Compliance")
    assert text is not None and text.startswith("---\nname: ppe-compliance")
    assert "## Workflow pattern" in text
    assert ws.load_skill("no-such-skill") is None


def test_broken_frontmatter_is_skipped_with_warning(ws: Workspace, caplog) -> None:
    bad = ws.skills_dir / "broken" / "SKILL.md"
    bad.parent.mkdir()
    bad.write_text("---\nname: [unclosed\n---\nbody\n")
    nofm = ws.skills_dir / "nofm" / "SKILL.md"
    nofm.parent.mkdir()
    nofm.write_text("# just markdown\n")
    good = ws.skills_dir / "forklift" / "SKILL.md"
    good.parent.mkdir()
    good.write_text("---\nname: forklift-safety\ndescription: Forklift near-miss detection\n---\n# Forklifts\n")
    with caplog.at_level(logging.WARNING, logger="workspace.skills"):
        names = {s.name for s in ws.list_skills()}
    assert names == SKILLS | {"forklift-safety"}
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert str(bad) in logged and str(nofm) in logged
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="workspace.skills"):
        ws.list_skills()  # the prompt lists skills every turn: an unchanged broken file warns only once
    assert caplog.records == []
    bad.write_text("---\nname: fixed\ndescription: Fixed skill now parses\n---\n")
    assert "fixed" in {s.name for s in ws.list_skills()}


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("monitor PPE on cam3", "ppe-compliance"),
        ("use the PPE compliance skill on camera 3", "ppe-compliance"),
        ("is everyone on cam2 wearing hard hats?", "ppe-compliance"),
        ("how many cars are parked in the lot right now", "parking-lot"),
        ("tell me if a truck idles at the loading dock", "parking-lot"),
        ("let me know when a parcel is left at the front door", "package-delivery"),
        ("count defects on the conveyor", "quality-inspection"),
    ],
)
def test_requests_match_their_skill_first(ws: Workspace, request_text: str, expected: str) -> None:
    matched = [s.name for s in ws.match_skills(request_text)]
    assert matched and matched[0] == expected


@pytest.mark.parametrize(
    "request_text",
    ["hello", "what is running?", "watch cam1 for people", "run builtin/faces on this image", "stop all pipelines"],
)
def test_unrelated_requests_match_nothing(ws: Workspace, request_text: str) -> None:
    assert ws.match_skills(request_text) == []


def test_user_skill_matches_by_description_words(ws: Workspace) -> None:
    d = ws.skills_dir / "forklift"
    d.mkdir()
    (d / "SKILL.md").write_text("---\nname: forklift-safety\ndescription: Detect forklift near misses with pedestrians\n---\n")
    assert [s.name for s in ws.match_skills("any forklift near misses today?")] == ["forklift-safety"]
