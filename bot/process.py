"""What a running `vision-agent` process says about itself: one ready line, and a prompt stop with a last line.

Every process kind (serve, run, the chat REPL, a one-shot, api, mcp over stdio or HTTP) goes through one Lifetime:
its lines go to stderr (so `chat -m`'s stdout holds the reply alone and MCP's stdout the protocol), flushed, so a log
file the console is redirected to holds them as they happen. On Ctrl-C or SIGTERM the process closes in order (the
pipelines stop and stay saved) and says so; it ends within STOP_WITHIN seconds of the signal whatever is still
closing: after GRACE a watchdog ends it with the same last line, and a second signal ends it at once.

A process started by the `vision-agent` command ends with os._exit once its last line is out (`exit_hard`): the
interpreter's own teardown after a camera ran (collecting torch's and inference's objects, inference's usage thread
posting to the network, a daemon thread blocked on stdin) took 7-14 s on a busy 2-core machine, and nothing of ours
is left to close by then. Tests that run these coroutines in their own process leave `exit_hard` off.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

STOP_WITHIN = 3.0  # seconds from Ctrl-C / SIGTERM to the process's end, promised in README.md
GRACE = 2.4  # the orderly close gets this long; the watchdog's last line and exit fit in what is left
SIGNALS = (signal.SIGINT, signal.SIGTERM)

exit_hard = False  # set by the `vision-agent` entry point (bot/cli/main.py): end with os._exit after the last line


def say(line: str, prefix: str = "vision-agent") -> None:
    """One line about the process on stderr, at once (stderr may be a pipe or a log file)."""
    try:
        print(f"{prefix}: {line}" if prefix else line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed (the terminal went away): nothing left to tell
        pass


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"


class Lifetime:
    """One process's stop: signals, the orderly close's deadline, and the last line.

    `on_stop` is called (on the event loop) at the first SIGINT/SIGTERM; `holds()` says, at that moment, what the
    process leaves behind for the last line ("2 pipelines saved: they start again with the next run").
    """

    def __init__(self, prefix: str, holds: Callable[[], str] | None = None, grace: float = GRACE) -> None:
        self.prefix = prefix
        self.holds = holds
        self.grace = grace
        self.cause: str | None = None  # "SIGTERM", "Ctrl-C", …: why it stops (None: not asked to)
        self.asked_at: float | None = None
        self.kept = ""  # what holds() said when the stop was asked
        self.code = 0  # the exit code when the watchdog ends it (a one-shot cut short: 130)
        self._done = threading.Event()
        self._lock = threading.Lock()  # the watchdog and the orderly end may both reach finish()
        self._ended = False

    def say(self, line: str) -> None:
        say(line, self.prefix)

    # signals ------------------------------------------------------------------------------------------------
    def install(self, on_stop: Callable[[], object], loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Route SIGINT and SIGTERM to `stop(on_stop)` on the running loop (no-op where signals cannot be set)."""
        loop = loop or asyncio.get_running_loop()
        for sig in SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self.signalled, sig, on_stop)

    def signalled(self, sig: int, on_stop: Callable[[], object]) -> None:
        if self.cause is not None:  # a second Ctrl-C: no more waiting
            self.finish(130 if sig == signal.SIGINT else 143, now=True)
            return
        self.stop_asked(signal_name(sig))
        on_stop()

    def stop_asked(self, cause: str) -> None:
        """Record why and when the process stops, what it leaves, and start the deadline's watchdog."""
        if self.cause is not None:
            return
        self.cause, self.asked_at = cause, time.monotonic()
        self.kept = self._holds()
        if exit_hard:
            threading.Thread(target=self._watchdog, name="stop-watchdog", daemon=True).start()

    def _holds(self) -> str:
        try:
            return self.holds() if self.holds is not None else ""
        except Exception:  # noqa: BLE001 - the last line must still come out
            return ""

    def _watchdog(self) -> None:
        if not self._done.wait(self.grace):
            self.finish(self.code, overdue=True)

    # the last line ----------------------------------------------------------------------------------------------
    def last_line(self, overdue: bool = False, now: bool = False) -> str:
        kept = self.kept if self.cause is not None else self._holds()
        took = f" in {time.monotonic() - self.asked_at:.1f} s" if self.asked_at is not None else ""
        how = f"stopped ({self.cause}){took}" if self.cause else "stopped"
        if now:
            how = f"stopped at once ({self.cause}, again)"
        elif overdue:
            how += f": closing took over {self.grace:g} s, so it ended without waiting for the rest"
        return how + (f"; {kept}" if kept else "") + "."

    def finish(self, code: int, overdue: bool = False, now: bool = False) -> int:
        """Say the last line once; with `exit_hard`, end the process here. Returns `code` otherwise."""
        with self._lock:
            if self._ended:
                return code
            self._ended = True
            self._done.set()
            self.say(self.last_line(overdue, now))
        if exit_hard:
            end_now(code)
        return code


_terminal: tuple[int, list[Any]] | None = None  # stdin's terminal settings when the process started (keep_terminal)


def keep_terminal() -> None:
    """Remember the terminal's settings. While the chat's prompt waits, readline holds the terminal in its own mode
    (no echo, no line editing by the kernel); an exit that cuts the prompt short must give the shell its terminal
    back as it was, or what is typed next in the shell stays invisible."""
    global _terminal
    try:
        import termios

        fd = sys.stdin.fileno()
        if os.isatty(fd):
            _terminal = (fd, termios.tcgetattr(fd))
    except Exception:  # noqa: BLE001 - no terminal, no termios (not Unix): nothing to give back
        _terminal = None


def end_now(code: int) -> None:
    """Flush what was written and end the process without the interpreter's teardown (see the module docstring),
    the terminal as it was found (keep_terminal) and its cursor shown (a spinner hides it)."""
    if _terminal is not None:
        with contextlib.suppress(Exception):
            import termios

            termios.tcsetattr(_terminal[0], termios.TCSADRAIN, _terminal[1])
            if sys.stdout.isatty():
                sys.stdout.write("\x1b[?25h")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def signal_name(sig: int) -> str:
    return "Ctrl-C" if sig == signal.SIGINT else signal.Signals(sig).name
