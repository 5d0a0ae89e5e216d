"""Alerts printed while someone types at the chat prompt: the prompt comes back under them with what was typed,
and the process lives. Before, the alert's thread read readline's line buffer while readline edited it in the
prompt's thread, and glibc aborted the chat (`mbsrtowcs: Assertion ... failed`, seen in a CI run and reproduced here
within a second of typing). A child on a pseudo-terminal runs the REPL's own input thread (`_Repl._input`) and
asides (`Renderer.aside`, as an alert, a clip or a file that ran out uses it) every few milliseconds."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

from tests.bot.cli.test_cli import ROOT
from tests.fakes.waits import patience

CHILD = """
import asyncio, sys, tempfile
from bot.cli.repl import _Repl, line_editing
from bot.config import load_settings

line_editing()
repl = _Repl(load_settings({"VISION_AGENT_WORKSPACE": tempfile.mkdtemp(), "VISION_AGENT_HEARTBEAT_MINUTES": "0"}), "s")

async def main():
    stop, said = asyncio.Event(), 0
    async def asides():
        nonlocal said
        while not stop.is_set():
            with repl.out.aside():
                repl.out.notice(f"street finished (notice {said})")
            said += 1
            await asyncio.sleep(0.003)
    task = asyncio.create_task(asides())
    lines = 0
    while (line := await repl._input()) not in (None, "quit"):
        lines += 1
    stop.set()
    await task
    print(f"lines {lines} asides {said}", flush=True)

asyncio.run(main())
"""


class _Pty:
    def __init__(self) -> None:
        self.fd, slave = pty.openpty()
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()} | {"PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD], cwd=ROOT, env=env, stdin=slave, stdout=slave,
                                     stderr=slave, close_fds=True)
        os.close(slave)
        self.screen = b""

    def drain(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if select.select([self.fd], [], [], 0.02)[0]:
                try:
                    self.screen += os.read(self.fd, 1 << 16)
                except OSError:  # the child ended
                    return

    def plain(self) -> str:
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", self.screen.decode(errors="replace"))

    def wait_for(self, pattern: str, seconds: float = 60) -> None:
        deadline = time.monotonic() + patience(seconds)
        while not re.search(pattern, self.plain()[-20000:]):
            assert time.monotonic() < deadline and self.proc.poll() is None, self.plain()[-2000:]
            self.drain(0.1)


def test_typing_while_alerts_print_keeps_the_chat_alive_and_what_was_typed_on_screen() -> None:
    term = _Pty()
    try:
        term.wait_for(r"notice \d+")
        typed = 0
        for _ in range(150):  # a person pasting lines while the camera's notices keep coming
            os.write(term.fd, "/vision search someone walking left é\r".encode())
            typed += 1
            term.drain(0.01)
            assert term.proc.poll() is None, term.plain()[-2000:]
        os.write(term.fd, "half typé".encode())  # no Enter: the prompt must keep showing it under new notices
        term.wait_for(r"notice \d+[^\n]*\n+\r*you> half typé")
        os.write(term.fd, b"\x15quit\r")  # Ctrl-U clears the half line
        deadline = time.monotonic() + patience(60)
        while term.proc.poll() is None and time.monotonic() < deadline:
            term.drain(0.1)
        term.drain(0.2)
        assert term.proc.returncode == 0, term.plain()[-2000:]
        assert "Assertion" not in term.plain()
        assert re.search(rf"lines {typed} asides \d+", term.plain()), term.plain()[-500:]
    finally:
        term.proc.kill()
        term.proc.wait()
        os.close(term.fd)
