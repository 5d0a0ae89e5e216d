"""The soak's bot: `vision-agent serve` as its own process (so its RSS is its own), the footage, `/vision` commands."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.fakes.anthropic_api import API_KEY, FakeAnthropic
from tests.fakes.slack_api import SlackEmulator

ALERTS = "C0ALERTS"


def looped_video(src: Path, dst: Path, seconds: float, fps: float) -> Path:
    """`src` played back to back often enough for `seconds` at up to 4x `fps` (a file source ends; cameras do not).

    The packets are copied, not re-encoded (PyAV remux with shifted timestamps), so this takes well under a second.
    """
    import av

    with av.open(str(src)) as inp, av.open(str(dst), "w", format="avi") as out:
        ins = inp.streams.video[0]
        loops = max(2, math.ceil(seconds * fps * 4 / max(ins.frames or 1, 1)))
        outs = out.add_stream_from_template(ins)
        time_base = ins.time_base
        assert time_base is not None, f"{src} has no video time base"
        outs.time_base = time_base
        offset = 0
        for _ in range(loops):
            inp.seek(0)
            last = offset
            for packet in inp.demux(ins):
                if packet.dts is None or packet.pts is None:
                    continue
                packet.pts += offset
                packet.dts += offset
                packet.stream, packet.time_base = outs, time_base
                last = max(last, packet.pts)
                out.mux(packet)
            offset = last + 1
    return dst


def as_avi(src: Path, dst: Path) -> Path:
    """`src` re-encoded as MPEG-4 Part 2 in AVI, as vtest.avi is: `looped_video` copies packets, which an H.264 MP4
    with B-frames does not survive (its reordered timestamps and decoder config). A short clip takes a fraction of a
    second."""
    from fractions import Fraction

    import av

    with av.open(str(src)) as inp, av.open(str(dst), "w", format="avi") as out:
        ins = inp.streams.video[0]
        rate = Fraction(ins.average_rate or 10)
        outs = out.add_stream("mpeg4", rate=rate)
        outs.width, outs.height, outs.pix_fmt = ins.codec_context.width, ins.codec_context.height, "yuv420p"
        outs.bit_rate = 2_000_000
        for n, frame in enumerate(inp.decode(ins)):
            frame = frame.reformat(format="yuv420p")
            frame.pts, frame.time_base = n, 1 / rate
            out.mux(outs.encode(frame))
        out.mux(outs.encode(None))
    return dst


def footage(workspace: Path, seconds: float, fps: float, src: Path | None = None) -> tuple[Path, str]:
    """A looped street video in the workspace (where `/vision start` may read it) and what it is: OpenCV's vtest.avi
    (bench/_realdata fetches it once), or `src` looped (then nothing is downloaded)."""
    if src is not None:
        clip = src if src.suffix == ".avi" else as_avi(src, workspace / f"{src.stem}.avi")
        return looped_video(clip, workspace / "street_loop.avi", seconds, fps), f"{src.name} looped"
    from bench._realdata import DataUnavailable, examples_dir

    try:
        src, what = examples_dir() / "vtest.avi", "OpenCV's vtest.avi street video"
    except DataUnavailable as exc:
        from tests.fixtures.inference import make_video

        print(f"(no real footage: {exc}; using a generated face video instead)")
        src, what = make_video(workspace / "faces.mp4", frames=300), "a generated face video"
    return looped_video(src, workspace / "street_loop.avi", seconds, fps), what


def bot_env(slack: SlackEmulator, llm: FakeAnthropic, root: Path) -> dict[str, str]:
    # PYTHONPATH: the bot runs the code of the tree the bench runs from (a worktree), not the venv's editable install.
    # SOAK_TRACE*: the memory census (bench/_soak_trace.py). MALLOC_*: a run may try allocator settings.
    keep = ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "SOAK_TRACE", "SOAK_TRACE_DIR", "SOAK_TRACE_EVERY")
    return {**{k: v for k, v in os.environ.items() if k in keep}, "HF_HUB_OFFLINE": "1", "NO_PROXY": "127.0.0.1",
            "VISION_AGENT_WORKSPACE": str(root), "VISION_AGENT_HEARTBEAT_MINUTES": "0",
            "VISION_AGENT_ALERT_CHANNEL": ALERTS, "ANTHROPIC_BASE_URL": llm.url, "ANTHROPIC_API_KEY": API_KEY,
            "SLACK_BOT_TOKEN": slack.bot_token, "SLACK_APP_TOKEN": slack.app_token, "SLACK_API_URL": slack.api_url}


def start(env: dict[str, str], log: Path) -> subprocess.Popen:
    """`vision-agent serve`; with SOAK_TRACE set, through bench/_soak_trace.py (a census of live objects)."""
    exe = os.path.join(os.path.dirname(sys.executable), "vision-agent")
    cmd = [sys.executable, "-m", "bench._soak_trace", "serve"] if env.get("SOAK_TRACE") else [exe, "serve"]
    if env.get("SOAK_TRACE"):
        env = {**env, "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[1]),
                                                               env.get("PYTHONPATH", "")) if p)}
    with log.open("wb") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen) -> int | None:
    """SIGTERM, then SIGKILL after 30 s; the exit code (None if it had to be killed)."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        return None


def rss_mb(pid: int) -> float:
    """VmRSS of a process in MB, from /proc (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


async def command(slack: SlackEmulator, text: str, channel: str = "C0GENERAL", timeout: float = 120) -> str:
    """Type `/vision TEXT` in Slack; the ephemeral answer, from the ack or (when slow) from the response_url."""
    env = slack.slash(text, channel=channel)
    await slack.await_ack(env, timeout=30)
    said = (env.ack_payload or {}).get("text", "")
    if said and not said.startswith(":hourglass"):
        return said
    rid = env.payload["response_url"].rsplit("/", 1)[-1]
    calls = await slack.await_for("response_url", lambda c: c.params.get("rid") == rid, timeout=timeout)
    return str(calls[-1].params.get("text", ""))


async def settle(slack: SlackEmulator, quiet: float, timeout: float) -> float:
    """Wait until the emulator saw no new Web API call for `quiet` seconds (or `timeout`); seconds waited."""
    loop = asyncio.get_running_loop()
    start_at = last_change = loop.time()
    seen = len(slack.calls)
    while loop.time() - start_at < timeout:
        await asyncio.sleep(0.5)
        if len(slack.calls) != seen:
            seen, last_change = len(slack.calls), loop.time()
        elif loop.time() - last_change >= quiet:
            break
    return loop.time() - start_at
