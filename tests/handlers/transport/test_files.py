"""Images both ways: attachments fetched with the bot token into image blocks (huge ones refused before they are
decoded); frames uploaded into the thread."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web
from PIL import Image

from bot.events import AgentEvent, EventType
from handlers.answers.render import TurnRenderer
from handlers.state.threads import Conversation
from handlers.transport.files import FileFetcher, FileRefused, slack_hosted
from tests.fakes.anthropic_api import FakeAnthropic, text, tool_use
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.attacks import Listener
from tests.fixtures.slack import RunningBot, await_answers, start_bot, stop_bot


def jpeg(width: int = 64, height: int = 48, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, "JPEG")
    return buf.getvalue()


def image_blocks(body: dict) -> list[dict]:
    return [b for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "image"]


def tool_results(body: dict) -> list[dict]:
    return [b for m in body["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"]


async def test_attached_image_is_fetched_with_bot_token_and_reaches_the_model(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("A red square."))
    file = slack_api.add_file("square.jpg", jpeg())
    ts, _ = slack_api.mention("what is this?", files=[file])
    assert await await_answers(slack_api, "C0GENERAL", ts) == ["A red square."]
    downloads = slack_api.calls_to("files.download")
    assert [(d.params["file_id"], d.token) for d in downloads] == [(file["id"], slack_api.bot_token)]
    body = anthropic_api.ok_requests[0].body
    assert len(image_blocks(body)) == 1 and image_blocks(body)[0]["source"]["media_type"] == "image/jpeg"
    assert file["id"] in json.dumps(body["messages"][-1])  # the model can hand the file id to tools
    saved = list((slack_bot.settings.workspace / "uploads" / "slack").glob(f"{file['id']}_*"))
    assert len(saved) == 1 and saved[0].read_bytes() == slack_api.file_bytes[file["id"]]


async def test_non_image_is_refused_politely_in_the_thread(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    pdf = slack_api.add_file("report.pdf", b"%PDF-1.4 not an image", "application/pdf")
    ts, _ = slack_api.mention("", files=[pdf])
    note = (await slack_api.await_for("chat.postMessage", lambda c: c.params.get("thread_ts") == ts))[0]
    assert "only look at images" in note.params["text"] and "report.pdf" in note.params["text"]
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
    assert slack_api.calls_to("files.download") == [] and anthropic_api.requests == []


async def test_oversized_image_is_refused_before_download(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    running = await start_bot(slack_env, slack_api, slack={"max_image_bytes": 1000})
    try:
        anthropic_api.enqueue(text("I only have your words."))
        big = slack_api.add_file("big.jpg", jpeg(400, 400))
        ts, _ = slack_api.mention("look", files=[big])
        posts = await await_answers(slack_api, "C0GENERAL", ts, count=2)
        assert "over my" in posts[0] and posts[1] == "I only have your words."
        assert slack_api.calls_to("files.download") == [] and image_blocks(anthropic_api.ok_requests[0].body) == []
    finally:
        await stop_bot(running)


async def test_frame_event_is_uploaded_into_the_same_thread(slack_api: SlackEmulator) -> None:
    from slack_sdk.web.async_client import AsyncWebClient

    client = AsyncWebClient(token=slack_api.bot_token, base_url=slack_api.api_url)
    ts, _ = slack_api.mention("count faces")
    conv = Conversation(slack_api.team_id, "C0GENERAL", ts, ts, "U0HUMAN")
    frame = jpeg(32, 32)
    await TurnRenderer(client, conv, {}).handle(AgentEvent(EventType.FRAME, {"image": frame, "caption": "1 face"}))
    upload = slack_api.calls_to("files.upload")[0]
    done = slack_api.calls_to("files.completeUploadExternal")[0]
    assert upload.body == frame
    assert (done.params["channel_id"], done.params["thread_ts"], done.params["initial_comment"]) == ("C0GENERAL", ts, "1 face")
    assert [f["id"] for f in done.params["files"]] == [upload.params["file_id"]]


@pytest.mark.slow
async def test_run_inference_by_file_id_finds_the_face_and_uploads_the_frame(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    from skimage import data

    buf = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buf, "JPEG")
    photo = slack_api.add_file("astronaut.jpg", buf.getvalue())
    anthropic_api.enqueue(tool_use(("run_inference", {"image": photo["id"], "model_id": "builtin/faces"})),
                          text("I see one face."))
    ts, _ = slack_api.mention("how many faces?", files=[photo])
    assert await await_answers(slack_api, "C0GENERAL", ts, timeout=240) == ["I see one face."]  # first import of inference
    result = tool_results(anthropic_api.ok_requests[1].body)[0]
    assert not result.get("is_error") and "face" in json.dumps(result["content"])
    shared = slack_api.calls_to("files.completeUploadExternal")
    assert [s.params.get("channel_id") for s in shared] == [None]  # uploaded unshared: the stream shows it
    [streamed] = [m for m in slack_api.messages("C0GENERAL", ts) if "stream_mode" in m]
    [image] = [b for c in streamed["chunks"] if c["type"] == "blocks" for b in c["blocks"]]
    assert image["slack_file"]["id"] == shared[0].params["files"][0]["id"]
    uploaded = slack_api.calls_to("files.upload")[0].body
    assert Image.open(io.BytesIO(uploaded)).format == "JPEG"


async def test_a_144_megapixel_png_is_skipped_with_the_limit_and_the_turn_goes_on(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic, png_12000: bytes
) -> None:
    anthropic_api.enqueue(text("I can only go by your words."))
    huge = slack_api.add_file("huge.png", png_12000, "image/png")
    small = slack_api.add_file("small.jpg", jpeg())
    ts, _ = slack_api.mention("what is in these?", files=[huge, small])
    posts = await await_answers(slack_api, "C0GENERAL", ts, count=2)
    assert "*huge.png* is 12000×12000 (144 MP); the limit is 40 MP — send a smaller image." in posts[0]
    assert posts[1] == "I can only go by your words."
    body = anthropic_api.ok_requests[0].body
    assert len(image_blocks(body)) == 1  # the small one still reached the model; the huge one was never decoded
    assert not list((slack_bot.settings.workspace / "uploads" / "slack").glob(f"{huge['id']}_*"))


async def test_a_decompression_bomb_gets_one_clear_line(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic, png_bomb: bytes
) -> None:
    bomb = slack_api.add_file("bomb.png", png_bomb, "image/png")
    ts, _ = slack_api.mention("", files=[bomb])
    note = (await slack_api.await_for("chat.postMessage", lambda c: c.params.get("thread_ts") == ts))[0]
    assert "*bomb.png* looks like a decompression bomb (400 MP" in note.params["text"]
    assert "limit is 40 MP" in note.params["text"] and "went wrong" not in note.params["text"]
    await slack_api.await_for("reactions.add", lambda c: c.params["name"] == "white_check_mark")
    assert anthropic_api.requests == []


def test_serve_process_stays_under_1_gib_peak_with_the_12000_square_png(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic, png_12000: bytes
) -> None:
    """The tester's attack on the real `vision-agent serve` process: its peak RSS stays far below the 9.4 GB the
    12000×12000 PNG used to cost.

    The peak is the child's VmHWM, read while it runs: getrusage's ru_maxrss of a child also counts the RSS of
    the pytest process it was spawned from (Linux records the pre-exec high-water mark), which is > 1 GiB once
    another test has loaded the inference engine.
    """
    anthropic_api.enqueue(text("No picture for me."))
    exe = os.path.join(os.path.dirname(sys.executable), "vision-agent")
    proc = subprocess.Popen([exe, "serve"], env=slack_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        slack_api.wait_connected(timeout=60)
        huge = slack_api.add_file("huge.png", png_12000, "image/png")
        ts, _ = slack_api.mention("look", files=[huge])
        posts = asyncio.run(await_answers(slack_api, "C0GENERAL", ts, count=2, timeout=60))
        peak_mib = _peak_rss_mib(proc.pid)
        assert "12000×12000 (144 MP)" in posts[0]
        assert posts[1] == "No picture for me."
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, proc.stderr.read()[-2000:] if proc.stderr else ""
    # Below what the pixels alone would take decoded (412 MiB): the image was never decoded. (Before the check, this
    # very path peaked at 720 MiB showing it to the model; asked to run a model on it, the bot reached 9.4 GB.)
    assert peak_mib < min(1024, 12000 * 12000 * 3 / 2**20), f"peak RSS {peak_mib:.0f} MiB"
    print(f"vision-agent serve peak RSS with a 12000x12000 PNG attached: {peak_mib:.0f} MiB")


def _peak_rss_mib(pid: int) -> float:
    """The process's peak resident set size since its exec (VmHWM), in MiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        kib = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    return kib / 1024


async def test_an_image_whose_bytes_are_not_what_slack_says_is_judged_by_its_bytes(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8)).save(buf, "BMP")
    fake = slack_api.add_file("photo.png", buf.getvalue(), "image/png")  # Slack trusts the name; we sniff
    ts, _ = slack_api.mention("", files=[fake])
    note = (await slack_api.await_for("chat.postMessage", lambda c: c.params.get("thread_ts") == ts))[0]
    assert "*photo.png* is a BMP image; attach a JPEG, PNG, GIF or WebP." in note.params["text"]
    assert anthropic_api.requests == []


async def test_a_file_stored_outside_slack_never_gets_the_bot_token(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic, listener: Listener
) -> None:
    anthropic_api.enqueue(text("I only have your words."))
    remote = {**slack_api.add_file("cam.jpg", jpeg()), "url_private": listener.url, "url_private_download": listener.url,
              "is_external": True, "external_type": "gdrive"}
    ts, _ = slack_api.mention("look at this", files=[remote])
    posts = await await_answers(slack_api, "C0GENERAL", ts, count=2)
    assert "stored outside Slack (127.0.0.1)" in posts[0] and "upload the image itself" in posts[0]
    assert posts[1] == "I only have your words."
    assert listener.bodies == [] and slack_api.calls_to("files.download") == []  # no request left for that host


async def test_a_redirect_off_slack_is_not_followed_with_the_token(tmp_path: Path, listener: Listener) -> None:
    seen: list[str] = []

    async def redirect(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        raise web.HTTPFound(listener.url)

    app = web.Application()
    app.router.add_get("/files-pri/{name}", redirect)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    fetcher = FileFetcher(tmp_path, 1_000_000, api_url=f"http://127.0.0.1:{port}/api/")
    try:
        with pytest.raises(FileRefused, match="outside Slack, so I did not follow"):
            await fetcher._download(f"http://127.0.0.1:{port}/files-pri/a.jpg", "xoxb-test-token", "a.jpg")
    finally:
        await fetcher.close()
        await runner.cleanup()
    assert seen == ["Bearer xoxb-test-token"] and listener.bodies == []


def test_only_slacks_own_hosts_are_trusted_with_the_token() -> None:
    api = "https://slack.com/api/"
    assert slack_hosted("https://files.slack.com/files-pri/T1-F1/a.jpg", api)
    assert slack_hosted("https://files.slack-gov.com/files-pri/T1-F1/a.jpg", api)
    for url in ("http://files.slack.com/files-pri/T1-F1/a.jpg",  # not over TLS
                "https://files.slack.com.evil.example/a.jpg", "https://evilslack.com/a.jpg",
                "https://docs.google.com/a.jpg", "https://127.0.0.1/a.jpg"):
        assert not slack_hosted(url, api), url
    assert slack_hosted("http://127.0.0.1:8123/files-pri/x", "http://127.0.0.1:8123/api/")  # a configured gateway
    assert not slack_hosted("http://127.0.0.1:9999/files-pri/x", "http://127.0.0.1:8123/api/")


async def test_a_file_id_cannot_walk_out_of_the_uploads_folder(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("A red square."))
    evil = {**slack_api.add_file("..%2F..%2Fx.jpg", jpeg()), "id": "../../../escaped"}
    ts, _ = slack_api.mention("what is this?", files=[evil])
    assert await await_answers(slack_api, "C0GENERAL", ts) == ["A red square."]
    uploads = slack_bot.settings.workspace / "uploads" / "slack"
    [saved] = list(uploads.iterdir())
    assert saved.resolve().parent == uploads.resolve() and ".." not in saved.name
    assert [p for p in slack_bot.settings.workspace.rglob("*escaped*") if p != saved] == []


async def test_a_url_python_cannot_parse_is_skipped_with_a_line_and_the_other_file_still_arrives(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic, listener: Listener
) -> None:
    """A remote file's url_private is whatever its creator wrote: a look-alike '#' (U+FF03) before '@files.slack.com'
    makes urlsplit raise. That file is skipped with its line; the turn and the real upload beside it go on."""
    anthropic_api.enqueue(text("A red square."))
    forged = f"https://127.0.0.1:{listener.server_address[1]}\uff03@files.slack.com/files-pri/T1-F1/cam.jpg"
    remote = {**slack_api.add_file("cam.jpg", jpeg()), "url_private": forged, "url_private_download": forged}
    real = slack_api.add_file("square.jpg", jpeg())
    ts, _ = slack_api.mention("look at these", files=[remote, real])
    posts = await await_answers(slack_api, "C0GENERAL", ts, count=2)
    assert "*cam.jpg* is stored outside Slack" in posts[0] and posts[1] == "A red square."
    assert [d.params["file_id"] for d in slack_api.calls_to("files.download")] == [real["id"]]
    assert listener.bodies == [] and len(image_blocks(anthropic_api.ok_requests[0].body)) == 1


def test_look_alike_hosts_never_count_as_slack() -> None:
    api = "https://slack.com/api/"
    for url in ("https://slack.com@evil.example/a.jpg", "https://files.slack.com%2eevil.example/a.jpg",
                "https://files.slack.com\u3002evil.example/a.jpg", "https://xn--slck-loa.com/a.jpg",
                "https://files.slack.com\t.evil.example/a.jpg", "https://evil.example#@files.slack.com/a.jpg",
                "https://evil.example\uff03@files.slack.com/a.jpg", "https://evil.example\\@files.slack.com/a.jpg",
                "https://files.slack.com./a.jpg", "ftp://files.slack.com/a.jpg", "//files.slack.com/a.jpg"):
        assert not slack_hosted(url, api), url


async def test_a_file_name_full_of_mentions_pages_nobody(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    """A file's name is its uploader's text: the refusal line that repeats it must not notify the people it names."""
    people = [f"U0NAME{i:03d}" for i in range(8)]
    name = "".join(f"<@{u}>" for u in people) + "<!subteam^S0TEAM|@staff>.pdf"
    pdf = slack_api.add_file("report.pdf", b"%PDF-1.4 not an image", "application/pdf")
    pdf["name"] = name
    ts, _ = slack_api.mention("", files=[pdf])
    note = (await slack_api.await_for("chat.postMessage", lambda c: c.params.get("thread_ts") == ts))[0]
    said = note.params["text"]
    assert "only look at images" in said
    assert not [u for u in people if f"<@{u}>" in said] and "<!subteam" not in said, said
    assert all(u in said for u in people)  # still readable


async def test_odd_file_names_are_saved_inside_the_uploads_folder(
    slack_bot: RunningBot, slack_api: SlackEmulator, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.enqueue(text("Three red squares."))
    names = ["a\u2215..\u2215..\u2215evil.jpg", "nul\x00byte/../x.jpg", ("long" * 2000) + ".jpg"]
    files = []
    for n in names:
        f = slack_api.add_file("plain.jpg", jpeg())
        f["name"] = n
        files.append(f)
    ts, _ = slack_api.mention("what are these?", files=files)
    assert await await_answers(slack_api, "C0GENERAL", ts) == ["Three red squares."]
    uploads = (slack_bot.settings.workspace / "uploads" / "slack").resolve()
    saved = list(uploads.iterdir())
    assert len(saved) == 3 and all(p.resolve().parent == uploads and len(p.name) < 120 for p in saved), saved
    assert len(image_blocks(anthropic_api.ok_requests[0].body)) == 3
