"""Nothing blocks the event loop (issue 22 item 6): an image that is slow to decode is decoded off the loop with a
time limit, so other users' slash commands are acked within Slack's 3 s meanwhile and the slow image gets a line;
a JPEG of more progressive scans than we decode is refused from its header. The images are made here."""

from __future__ import annotations

import asyncio
import io
import re
import time

import pytest
from PIL import Image

import bot.media.sniff as sniff
from bot.media.images import to_image_block
from bot.media.sniff import MAX_JPEG_SCANS, TooManyScans, check_image
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.fakes.slack_api import SlackEmulator
from tests.fixtures.slack import await_answers, start_bot, stop_bot


def progressive(width: int, height: int, extra_scans: int = 0) -> bytes:
    """A progressive JPEG; `extra_scans` repeats its smallest scan: every copy is another pass over all the blocks
    (libjpeg only warns about the bogus progression), so a small file takes long to decode."""
    img = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    buf = io.BytesIO()
    img.save(buf, "JPEG", progressive=True, quality=90)
    data = buf.getvalue()
    starts = [m.start() for m in re.finditer(b"\xff\xda", data)] + [len(data) - 2]  # SOS markers, then EOI
    scans = [data[a:b] for a, b in zip(starts, starts[1:], strict=False)]
    return data[:-2] + min(scans[1:], key=len) * extra_scans + b"\xff\xd9"


def test_a_jpeg_of_too_many_scans_is_refused_from_its_header_and_an_ordinary_one_passes() -> None:
    ordinary = progressive(640, 480)
    assert check_image(ordinary).media_type == "image/jpeg"
    to_image_block(ordinary)
    bomb = progressive(640, 480, extra_scans=MAX_JPEG_SCANS * 10)
    started = time.monotonic()
    with pytest.raises(TooManyScans) as exc:
        to_image_block(bomb)
    assert time.monotonic() - started < 1.0  # counted, not decoded
    line = str(exc.value)
    assert "\n" not in line and "progressive scans" in line and "baseline JPEG" in line


async def test_a_slow_image_does_not_hold_other_users_commands_and_gets_a_line(
    slack_env: dict[str, str], slack_api: SlackEmulator, anthropic_api: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sniff, "MAX_JPEG_SCANS", 10**6)  # let the slow image through to the decoder
    slow = progressive(6000, 6000, extra_scans=6000)  # 36 MP, under 1 MB, seconds of decoding
    assert len(slow) < 1024 * 1024
    running = await start_bot(slack_env, slack_api, media={"decode_timeout_seconds": 1.0})
    gaps: list[float] = []

    async def probe() -> None:  # the emulators share the bot's loop: a stalled loop shows as a gap here
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.05)
            gaps.append(time.monotonic() - last)
            last = time.monotonic()

    try:
        anthropic_api.enqueue(text("Hello."), text("I could not see it."))
        first, _ = slack_api.mention("hello")  # a first turn warms up what loads lazily (not the decode's stall)
        assert await await_answers(slack_api, "C0GENERAL", first) == ["Hello."]
        file = slack_api.add_file("slow.jpg", slow)
        prober = asyncio.create_task(probe())
        ts, _ = slack_api.mention("what is in this picture?", files=[file])
        await slack_api.await_for("files.download")
        await asyncio.sleep(0.3)  # the decode has begun
        asked = time.monotonic()
        help_ack = await slack_api.await_ack(slack_api.slash("help", user="U0OTHER"))
        assert time.monotonic() - asked < 3.0 and help_ack.ack_latency is not None and help_ack.ack_latency < 3.0
        assert "/vision &lt;command&gt;" in help_ack.ack_payload["text"]
        assert await await_answers(slack_api, "C0GENERAL", ts) == ["I could not see it."]
        prober.cancel()
        assert max(gaps) < 1.5, f"the event loop stalled for {max(gaps):.1f}s"
        body = anthropic_api.ok_requests[1].body
        note = str(body["messages"][-1]["content"])
        assert "image slow.jpg took longer than 1s to decode and was skipped" in note
        assert not any(b.get("type") == "image" for b in body["messages"][-1]["content"])
    finally:
        await stop_bot(running)
