"""Image/video reference resolution: allowed folders, attachments, base64, Slack ids, URL safety, redaction."""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import pytest

from bot.agent.tools import Attachment, ToolContext
from bot.config import load_settings
from bot.media.redaction import RedactingFilter, redact
from bot.media.resolve import MediaError, resolve_image, resolve_video
from tests.fixtures.media import PNG


@pytest.fixture
def ctx(settings) -> ToolContext:
    return ToolContext(settings=settings)


def test_file_in_workspace_by_relative_and_absolute_path(ctx, workspace_dir: Path):
    (workspace_dir / "frames").mkdir()
    (workspace_dir / "frames" / "a.png").write_bytes(PNG)
    assert resolve_image("frames/a.png", ctx) == PNG
    assert resolve_image(str(workspace_dir / "frames" / "a.png"), ctx) == PNG


def test_dotdot_is_refused_even_if_it_lands_inside(ctx, workspace_dir: Path):
    (workspace_dir / "a.png").write_bytes(PNG)
    with pytest.raises(MediaError, match=r"'\.\.'"):
        resolve_image(str(workspace_dir / "sub" / ".." / "a.png"), ctx)


def test_path_outside_allowed_folders_is_refused_with_how_to_allow(ctx, tmp_path: Path):
    outside = tmp_path / "secret.png"
    outside.write_bytes(PNG)
    with pytest.raises(MediaError) as err:
        resolve_image(str(outside), ctx)
    assert "VISION_AGENT_MEDIA_DIRS" in str(err.value) and str(ctx.settings.workspace) in str(err.value)


def test_a_relative_name_outside_the_folders_gets_how_to_allow_the_same_whether_it_exists(
    ctx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Named relative to where the bot runs, a file outside the folders answered only "check the name or attach the
    file" (field test: read as a typo). It says how to let the bot read it, in the same words for a file that
    exists and one that does not (no answer tells what is on disk outside the folders)."""
    (tmp_path / "here.png").write_bytes(PNG)
    monkeypatch.chdir(tmp_path)
    said = []
    for name in ("here.png", "nowhere.png"):
        with pytest.raises(MediaError) as err:
            resolve_image(name, ctx)
        said.append(str(err.value).replace(name, "NAME"))
        assert "VISION_AGENT_MEDIA_DIRS" in str(err.value) and f"copy it into {ctx.settings.workspace}" in str(err.value)
    assert said[0] == said[1]


@pytest.mark.parametrize(("head", "kind"), [(b"\x00\x00\x00\x20ftypisom", "MP4/MOV"), (b"\x00\x00\x00\x14ftypqt  ", "MP4/MOV"),
                                          (b"RIFF\x10\x00\x00\x00AVI LIST", "AVI"),
                                          (b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81", "Matroska/WebM"), (b"FLV\x01\x05", "FLV")])
def test_a_video_given_as_an_image_says_it_is_one_and_what_runs_a_model_over_it(ctx, workspace_dir: Path, head, kind):
    """run_inference on an .mp4 answered "not an image (JPEG, PNG… expected)" (field test), with no word of what does
    take a video. Sniffed by its bytes: a name says nothing (a clip saved as .bin)."""
    (workspace_dir / "clip.bin").write_bytes(head + bytes(64))
    with pytest.raises(MediaError) as err:
        resolve_image("clip.bin", ctx)
    assert f"is a video ({kind}), not a still image" in str(err.value) and "start_pipeline" in str(err.value)


def test_a_real_clip_given_as_an_image_names_the_command_at_the_terminal(ctx, workspace_dir: Path):
    from bot.commands.dispatch import IN_COMMANDS
    from bot.media.sniff import VIDEO_TOOLS

    clip = workspace_dir / "street.mp4"
    clip.write_bytes((Path(__file__).parents[2] / "fixtures" / "data" / "street_2fps.mp4").read_bytes())
    with pytest.raises(MediaError) as err:
        resolve_image(str(clip), ctx)
    assert VIDEO_TOOLS in str(err.value) and "/vision start" in IN_COMMANDS[VIDEO_TOOLS]


def test_symlink_out_of_the_workspace_is_refused(ctx, workspace_dir: Path, tmp_path: Path):
    target = tmp_path / "outside.png"
    target.write_bytes(PNG)
    (workspace_dir / "link.png").symlink_to(target)
    with pytest.raises(MediaError):
        resolve_image("link.png", ctx)


def test_media_dirs_setting_allows_a_folder(base_env, tmp_path: Path):
    media = tmp_path / "media"
    media.mkdir()
    (media / "cam.png").write_bytes(PNG)
    settings = load_settings({**base_env, "VISION_AGENT_MEDIA_DIRS": str(media)})
    assert resolve_image(str(media / "cam.png"), ToolContext(settings=settings)) == PNG
    assert resolve_image("cam.png", ToolContext(settings=settings)) == PNG


def test_attached_file_is_allowed_by_path_name_and_slack_id(settings, tmp_path: Path):
    f = tmp_path / "upload" / "photo.png"
    f.parent.mkdir()
    f.write_bytes(PNG)
    ctx = ToolContext(settings=settings, attachments=[Attachment(f, "image/png", file_id="F0ABC123", name="photo.png")])
    for ref in (str(f), "photo.png", "F0ABC123"):
        assert resolve_image(ref, ctx) == PNG


def test_unknown_slack_file_id_is_refused(ctx):
    with pytest.raises(MediaError, match="not shared in this conversation"):
        resolve_image("F0NOTHERE1", ctx)


def test_data_url_and_raw_base64(ctx):
    b64 = base64.b64encode(PNG).decode()
    assert resolve_image(f"data:image/png;base64,{b64}", ctx) == PNG
    assert resolve_image(b64, ctx) == PNG


def test_non_image_content_is_refused(ctx, workspace_dir: Path):
    (workspace_dir / "notes.txt").write_text("hello")
    with pytest.raises(MediaError, match="not an image"):
        resolve_image("notes.txt", ctx)


def test_loopback_and_private_urls_are_refused(ctx, image_server):
    for url in (f"{image_server}/img.png", "http://10.1.2.3/x.jpg", "http://169.254.169.254/latest/meta-data"):
        with pytest.raises(MediaError, match="local/private address"):
            resolve_image(url, ctx)


def test_inference_server_port_does_not_open_the_whole_host(base_env, image_server):
    settings = load_settings({**base_env, "INFERENCE_SERVER_URL": "http://127.0.0.1:1"})
    with pytest.raises(MediaError, match="local/private"):
        resolve_image(f"{image_server}/img.png", ToolContext(settings=settings))
    port = image_server.rsplit(":", 1)[1]
    settings = load_settings({**base_env, "INFERENCE_SERVER_URL": f"http://127.0.0.1:{port}"})
    assert resolve_image(f"{image_server}/img.png", ToolContext(settings=settings)) == PNG
    settings = load_settings({**base_env, "INFERENCE_SERVER_URL": f"http://127.0.0.1:1,http://127.0.0.1:{port}"})
    assert resolve_image(f"{image_server}/img.png", ToolContext(settings=settings)) == PNG  # any of several servers


def test_registered_camera_opens_its_own_origin_and_redirects_are_followed(ctx, workspace_dir: Path, image_server):
    (workspace_dir / "CAMERAS.md").write_text(
        f"# Cameras\n\n| Name | URL | Location |\n|---|---|---|\n| door | {image_server}/live | Front |\n"
    )
    assert resolve_image(f"{image_server}/redirect", ctx) == PNG


def test_download_over_the_size_cap_is_refused(base_env, workspace_dir: Path, image_server):
    (workspace_dir / "CAMERAS.md").write_text(f"| name | url |\n|--|--|\n| c | {image_server}/ |\n")
    settings = load_settings(base_env, slack={"max_image_bytes": 1000})
    with pytest.raises(MediaError, match="limit"):
        resolve_image(f"{image_server}/big", ToolContext(settings=settings))


def test_video_references(ctx, workspace_dir: Path, tmp_path: Path):
    (workspace_dir / "CAMERAS.md").write_text(
        "| Name | URL |\n|---|---|\n| dock | rtsp://admin:hunter2@192.168.1.50/stream1 |\n"
    )
    (workspace_dir / "clip.mp4").write_bytes(b"\x00")
    assert resolve_video("dock", ctx) == "rtsp://admin:hunter2@192.168.1.50/stream1"
    assert resolve_video("DOCK", ctx) == "rtsp://admin:hunter2@192.168.1.50/stream1"
    assert resolve_video("0", ctx) == "0"
    assert resolve_video("rtsp://93.184.215.14/live", ctx) == "rtsp://93.184.215.14/live"  # public: as given
    with pytest.raises(MediaError, match="local/private"):
        resolve_video("rtsp://10.0.0.9/live", ctx)  # private and not a registered camera
    assert resolve_video("clip.mp4", ctx) == str((workspace_dir / "clip.mp4").resolve())
    outside = tmp_path / "other.mp4"
    outside.write_bytes(b"\x00")
    with pytest.raises(MediaError, match="VISION_AGENT_MEDIA_DIRS"):
        resolve_video(str(outside), ctx)
    with pytest.raises(MediaError, match="local/private"):
        resolve_video("http://192.168.7.7/mjpeg", ctx)
    with pytest.raises(MediaError, match="not found"):
        resolve_video("missing.mp4", ctx)


def test_redact_masks_passwords_in_urls_and_queries():
    assert redact("open rtsp://admin:hunter2@10.0.0.5:554/s1 now") == "open rtsp://admin:***@10.0.0.5:554/s1 now"
    assert redact("http://u:p%40ss@cam/x.jpg") == "http://u:***@cam/x.jpg"
    assert redact("http://cam/snap?user=a&password=hunter2") == "http://cam/snap?user=a&password=***"
    assert redact("rtsp://cam/stream") == "rtsp://cam/stream"
    assert redact("rtsp://u:p@ss@cam/s rtsp://tok3n@cam2/s") == "rtsp://u:***@cam/s rtsp://***@cam2/s"


def test_redacting_filter_masks_log_records(caplog):
    logger = logging.getLogger("test.redact")
    handler_filter = RedactingFilter()
    caplog.handler.addFilter(handler_filter)
    try:
        with caplog.at_level(logging.INFO, logger="test.redact"):
            logger.info("connecting to %s", "rtsp://admin:hunter2@10.0.0.5/s1")
    finally:
        caplog.handler.removeFilter(handler_filter)
    assert "hunter2" not in caplog.text and "admin:***@" in caplog.text
