"""A camera name nobody registered is answered with where cameras are registered, the known ones and the closest one
(README's `{"source": "cam1"}` failed with a line about files); a path keeps its own line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agent.tools import ToolContext
from bot.commands.dispatch import run_command
from bot.config import load_settings
from bot.media.cameras import close_match, unknown_camera
from bot.media.resolve import MediaError, resolve_video
from bot.runtime import Runtime

ROWS = ("| Name | URL |\n|---|---|\n| front_door | rtsp://10.0.0.5/s1 |\n| cam-2 | rtsp://10.0.0.6/s1 |\n"
        "| loading dock | rtsp://10.0.0.7/s1 |\n")


@pytest.fixture
def ctx(settings, workspace_dir: Path) -> ToolContext:
    (workspace_dir / "CAMERAS.md").write_text(ROWS)
    return ToolContext(settings=settings)


@pytest.mark.parametrize(("typed", "meant"), [("cam2", "cam-2"), ("cam1", "cam-2"), ("frontdoor", "front_door"),
                                              ("Front-Door", "front_door"), ("loading_dok", "loading dock")])
def test_a_mistyped_camera_is_answered_with_the_registry_the_known_names_and_the_closest(ctx, workspace_dir: Path,
                                                                                     typed: str, meant: str) -> None:
    with pytest.raises(MediaError) as refused:
        resolve_video(typed, ctx)
    said = str(refused.value)
    assert f"{typed!r} is neither a camera nor a video file" in said and "\n" not in said
    assert f"a row of {workspace_dir / 'CAMERAS.md'}" in said
    assert "known cameras: cam-2, front_door, loading dock" in said and f"did you mean `{meant}`?" in said


@pytest.mark.parametrize("typed", ["garage", "x", "parkinglot"])
def test_a_name_like_no_camera_lists_them_without_a_guess(ctx, typed: str) -> None:
    with pytest.raises(MediaError) as refused:
        resolve_video(typed, ctx)
    assert "known cameras: cam-2, front_door, loading dock" in str(refused.value)
    assert "did you mean" not in str(refused.value)


def test_without_cameras_and_for_a_path_the_lines_say_so(settings, workspace_dir: Path) -> None:
    bare = ToolContext(settings=settings)
    with pytest.raises(MediaError, match=r"a row of .*CAMERAS.md .*no cameras yet"):
        resolve_video("cam1", bare)
    for path in ("clips/missing.mp4", "missing.mp4"):  # a file, by its shape: the file's own line
        with pytest.raises(MediaError, match="not found in the allowed folders"):
            resolve_video(path, bare)


def test_close_match_takes_only_a_likely_slip() -> None:
    assert close_match("dock", ["dock2", "gate"]) == "dock2"
    assert close_match("yard", ["dock", "gate"]) is None
    assert unknown_camera("x", []) == "no cameras yet"


async def test_every_door_says_it(base_env: dict[str, str], workspace_dir: Path) -> None:
    """`/vision start`, a watch and a rule on a mistyped camera name the close one too."""
    (workspace_dir / "CAMERAS.md").write_text(ROWS)
    async with Runtime(load_settings(base_env), background=False) as rt:
        ctx = rt.command_context(operator=True)
        start = await run_command("/vision start frontdoor", ctx)
        assert not start.ok and "did you mean `front_door`?" in start.text and "CAMERAS.md" in start.text
        watch = await run_command("/vision watch frontdor appears person", ctx)
        assert not watch.ok and "Unknown camera 'frontdor'" in watch.text and "did you mean `front_door`?" in watch.text
