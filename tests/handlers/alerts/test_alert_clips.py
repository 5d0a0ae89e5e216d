"""An alert's clip goes up into the alert's thread (its frame is inside the alert), and the session knows the clip id."""

from __future__ import annotations

import json
from pathlib import Path

from bot.media.clip_video import encode_clip
from handlers.state.threads import session_key
from tests.bot.pipelines.test_clips import jpeg_of
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.slack import RunningBot
from tests.handlers.alerts.test_alerts import alert, alert_bot  # noqa: F401 - alert_bot is a fixture


async def test_alert_clip_is_uploaded_into_the_alert_thread_and_named_in_its_session(
    alert_bot: RunningBot, slack_api: SlackEmulator, tmp_path: Path  # noqa: F811
) -> None:
    clip = encode_clip([jpeg_of(i) for i in range(20)], 5.0, 4 * 1024 * 1024, tmp_path / "lobby-20261123-1.mp4")
    assert clip is not None
    router = alert_bot.runtime.router
    assert await router.dispatch(alert(clip_path=str(clip.path))) is None
    uploads = await slack_api.await_for("files.upload", count=2)
    assert sorted(u.params["length"] for u in uploads)[-1] == clip.bytes  # the frame, then the whole clip
    assert any(u.body == clip.path.read_bytes() for u in uploads)
    frame, clip_shared = await slack_api.await_for("files.completeUploadExternal", count=2)
    ts = slack_api.messages("C0GENERAL")[0]["ts"]
    assert "channel_id" not in frame.params  # the frame is shown by the alert's image block
    assert (clip_shared.params["channel_id"], clip_shared.params["thread_ts"]) == ("C0GENERAL", ts)
    assert "lobby-20261123-1.mp4" in json.dumps([c.params for c in slack_api.calls_to("files.getUploadURLExternal")])
    key = session_key(alert_bot.bot.team_id, "C0GENERAL", ts)
    seeded = json.dumps(alert_bot.runtime.sessions.history(key))
    assert "clip id lobby-20261123-1" in seeded


async def test_alert_whose_clip_file_is_gone_still_posts_with_its_frame(
    alert_bot: RunningBot, slack_api: SlackEmulator, tmp_path: Path  # noqa: F811
) -> None:
    assert await alert_bot.runtime.router.dispatch(alert(clip_path=str(tmp_path / "gone.mp4"))) is None
    await slack_api.await_for("chat.postMessage")
    assert len(slack_api.calls_to("chat.postMessage", lambda c: "blocks" in c.params)) == 1
