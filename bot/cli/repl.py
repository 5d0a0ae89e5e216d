"""The terminal chat (REPL): renders the agent's event stream; `/vision` lines go to the command core."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING

from bot.cli import inputhook
from bot.cli.oneshot import attachment_for, terminal_context, why_no_agent
from bot.cli.render import LOADING_DETECTOR, THINKING, Renderer
from bot.commands.dispatch import run_command
from bot.process import Lifetime
from bot.rights import OPERATOR
from bot.runtime import Runtime

if TYPE_CHECKING:
    from bot.agent.tools import Attachment
    from bot.config import Settings
    from bot.monitoring.alerts import Alert
    from bot.pipelines.tally import Ended

log = logging.getLogger(__name__)
REPL_HELP = """Type a message to talk to the agent. Commands:
  /vision help        pipeline commands (list, start, stop, snapshot, route, status) - no API key needed
  /image PATH         attach an image to your next message
  /new                start a new conversation (new session)
  /help               this text
  /quit               leave (or Ctrl-D); Ctrl-C stops a running answer"""


def interactive(settings: Settings, session: str, images: list[str] | None = None) -> int:
    """The chat REPL; `images` are attached to the first message. Returns when the user quits."""
    line_editing()
    try:
        attachments = [attachment_for(p, settings.media.max_pixels) for p in images or []]
    except ValueError as exc:
        print(f"vision-agent: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(_Repl(settings, session, attachments).run())


def line_editing() -> None:
    """Line editing at the prompt (readline), and what was typed so far drawn again under an alert, from the
    prompt's own thread (bot/cli/inputhook.py)."""
    try:
        import readline  # noqa: F401
    except ImportError:  # not on every platform: input() works without it (an alert redraws the bare prompt)
        return
    inputhook.install()


class _Repl:
    def __init__(self, settings: Settings, session: str, attachments: list[Attachment] | None = None) -> None:
        self.settings = settings
        self.session = session
        self.attachments = list(attachments or [])  # sent with the next message
        self.out = Renderer()
        self._turn: asyncio.Task | None = None
        self._pending_input: asyncio.Future | None = None
        self._stopping = asyncio.Event()
        self.lifetime = Lifetime("vision-agent chat")

    async def run(self) -> int:
        self._install_signals()  # before the runtime starts: a SIGTERM while it starts also ends with a last line
        async with Runtime(self.settings) as rt:
            self.rt = rt
            self.lifetime.holds = rt.leaving
            self.out.busy_note = self._busy_note
            rt.router.add_sink(self._on_alert)
            rt.router.add_clip_sink(self._on_clip)  # a clip follows its alert
            rt.router.add_check_sink(self._on_check)  # ... and the model's look at it (verified alerts)
            rt.pipelines.add_end_listener(self._on_end)
            self.out.banner(rt, self.session)
            await rt.announce_stored()  # stored data set aside at start-up: said once, through the sink above
            while not self._stopping.is_set() and (line := await self._input()) is not None:
                if not await self._handle(line.strip()):
                    self.lifetime.stop_asked(line.strip().split()[0])
                    break
            self.lifetime.stop_asked("end of input")  # Ctrl-D (or a signal, which said so already)
        return self.lifetime.finish(0)

    def _busy_note(self) -> str | None:
        """What the model's or a tool's wait is really about, when it is the detector loading (~15 s, once)."""
        return LOADING_DETECTOR if self.rt.backend.loading else None

    async def _handle(self, line: str) -> bool:
        """Act on one input line; False means quit."""
        if not line:
            return True
        word = line.split()[0].lower()
        if word in ("/quit", "/exit", "/q"):
            return False
        if word == "/help":
            self.out.plain(REPL_HELP)
        elif word == "/vision":
            await self._vision(line)
        elif word == "/image":
            self._attach(line[len(word):].strip())
        elif word == "/new":
            self.session = time.strftime("%Y%m%d-%H%M%S")
            self.out.note(f"new session {self.session}")
        elif word.startswith("/"):
            self.out.error(f"unknown command {word}; type /help")
        elif not self.rt.llm_ready:
            self.out.warn(f"{why_no_agent(self.rt)}; /vision commands work without it")
        else:
            self._turn = asyncio.create_task(self._run_turn(line))
            try:
                await self._turn
            except asyncio.CancelledError:
                self.out.note("(stopped)")
            finally:
                self._turn = None
        return True

    def _attach(self, path: str) -> None:
        if not path:
            self.out.error("usage: /image PATH")
            return
        try:
            self.attachments.append(attachment_for(path, self.settings.media.max_pixels))
        except ValueError as exc:
            self.out.error(str(exc))
            return
        self.out.note(f"attached {self.attachments[-1].path} (sent with your next message)")

    async def _run_turn(self, text: str) -> None:
        attachments, self.attachments = self.attachments, []
        self.out.wait(THINKING)  # until the model's first word or step
        try:
            async for ev in self.rt.agent.process_message(f"cli:{self.session}", text, attachments, OPERATOR):
                self.out.event(ev, self.rt.workspace.frames_dir)
        except Exception as exc:  # keep the REPL alive; details with -v
            log.info("turn failed", exc_info=True)  # shown with -v
            self.out.error(f"the turn failed: {type(exc).__name__}: {exc}")
        finally:
            self.out.end_turn()  # a turn cut short (Ctrl-C) must not leave the live answer view running

    async def _vision(self, line: str) -> None:
        reply = await run_command(line, terminal_context(self.rt, self.session, self._progress))
        self.out.command_reply(reply, self.rt.workspace.frames_dir)

    async def _progress(self, text: str) -> None:
        self.out.note(text)

    async def _on_alert(self, alert: Alert, channel: str | None) -> None:
        with self.out.aside():
            self.out.alert(alert, self.rt.workspace.frames_dir)

    @staticmethod
    def where(channel: str | None) -> str:
        """Where its alert sink shows an alert (AlertRouter.destinations: a watch typed beside it says so)."""
        return f"the terminal chat (pid {os.getpid()})"

    async def _on_clip(self, alert: Alert, channel: str | None) -> None:
        with self.out.aside():
            self.out.clip(alert)

    async def _on_check(self, alert: Alert, channel: str | None) -> None:
        with self.out.aside():
            self.out.check(alert)

    def _on_end(self, ended: Ended) -> None:
        with self.out.aside():
            self.out.notice(ended.line())

    # input without blocking the loop (alerts and pipelines keep running while the prompt waits)
    async def _input(self) -> str | None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()
        self._pending_input = fut

        def read() -> None:
            try:
                line: str | None = input(self.out.prompt(for_input=True))
            except (EOFError, OSError, ValueError):
                line = None
            self.out.waiting = False
            try:
                loop.call_soon_threadsafe(_deliver, fut, line)
            except RuntimeError:  # the REPL already ended (Ctrl-C at the prompt): nobody waits for this line
                pass

        # A daemon thread, so a prompt still waiting for a line never holds up the exit.
        self.out.waiting = True  # alerts and notices printed meanwhile draw the prompt again below them
        threading.Thread(target=read, name="repl-input", daemon=True).start()
        try:
            return await fut
        finally:
            self._pending_input = None

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, self._on_sigint)
            loop.add_signal_handler(signal.SIGTERM, self.lifetime.signalled, signal.SIGTERM, self._stop)
        except (NotImplementedError, RuntimeError):  # not the main thread / not Unix: default Ctrl-C
            pass

    def _on_sigint(self) -> None:
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()  # Ctrl-C during an answer stops the answer, not the REPL
        else:  # at the prompt (or while starting): Ctrl-C leaves; a second one at once
            self.lifetime.signalled(signal.SIGINT, self._stop)

    def _stop(self) -> None:
        """SIGTERM (or Ctrl-C at the prompt): end the answer if one runs, leave the prompt, close in order."""
        self._stopping.set()
        self.out.end_turn()
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()
        if self._pending_input is not None and not self._pending_input.done():
            print()
            self._pending_input.set_result(None)


def _deliver(fut: asyncio.Future[str | None], line: str | None) -> None:
    if not fut.done():  # Ctrl-C may have answered the prompt already
        fut.set_result(line)
