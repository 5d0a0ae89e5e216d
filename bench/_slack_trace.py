"""`vision-agent serve` that writes when it issues each Slack Web API call (the client side's clock), for finding
where a first step's time goes (bench/slack_latency.py with SLACK_TRACE=1).

Run as the bot's entry point (`python -m bench._slack_trace serve`). slack_sdk logs every request it is about to send
(`Sending a request - url: ...`, logger slack_sdk.web.async_base_client, at debug level) just before the HTTP
request goes out; that logger alone is turned to debug here (its records made plainly: PlainRecords) and go, one line each (time, method, the
thread or message the call is about, a reaction's name), to $SLACK_TRACE_FILE. Nothing in the Slack client is
replaced; nothing here is imported by the product.
"""

from __future__ import annotations

import gc
import logging
import os
import re
import sys
import time
from typing import Any

_METHOD = re.compile(r"/api/([\w.]+)")
_FIELDS = {key: re.compile(rf"'{key}': '([^']*)'") for key in ("thread_ts", "timestamp", "ts", "name")}


class IssueLog(logging.Handler):
    """One line per Web API request the bot sends: `time<TAB>method<TAB>thread_ts<TAB>timestamp<TAB>name`."""

    def __init__(self, path: str) -> None:
        super().__init__(logging.DEBUG)
        self.out = open(path, "a", buffering=1)  # noqa: SIM115 (open for the process's life; a line each)

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        method = _METHOD.search(text)
        if not text.startswith("Sending a request") or method is None:
            return
        found = {key: (m.group(1) if (m := rx.search(text)) else "") for key, rx in _FIELDS.items()}
        self.out.write(f"{record.created:.6f}\t{method.group(1)}\t{found['thread_ts']}\t{found['timestamp']}\t"
                       f"{found['name']}\n")


def read(path: str) -> list[tuple[float, str, str, str, str]]:
    """The lines IssueLog wrote: (time, method, thread_ts, timestamp, name)."""
    rows = []
    with open(path) as f:
        for line in f:
            t, method, thread_ts, timestamp, name = line.rstrip("\n").split("\t")
            rows.append((float(t), method, thread_ts, timestamp, name))
    return rows


def gc_pauses(log: IssueLog) -> None:
    """Each cyclic collection of generation 1 or 2 as a line `time<TAB>gc<TAB>generation<TAB>ms` (time: its end): a
    collection holds the event loop, every request due waits behind it."""
    began: list[float] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[:] = [time.time()]
        elif began and info.get("generation", 0) >= 1:
            now = time.time()
            log.out.write(f"{now:.6f}\tgc\t{info['generation']}\t{(now - began[0]) * 1000:.2f}\t\n")

    gc.callbacks.append(note)


class PlainRecords(logging.Logger):
    """A logger whose records skip the process's record factory: the bot's (bot/media/redaction.py) masks every
    record as it is made, ~0.5 ms for a request line with its params, which would slow the bot under trace by more
    than the trace measures. These records go only to IssueLog, which keeps the method and timestamps alone."""

    def makeRecord(self, name: str, level: int, fn: str, lno: int, msg: object, args: Any, exc_info: Any,
                   func: str | None = None, extra: Any = None, sinfo: str | None = None) -> logging.LogRecord:
        return logging.LogRecord(name, level, fn, lno, msg, args, exc_info, func, sinfo)


def main() -> int:
    default = logging.getLoggerClass()
    logging.setLoggerClass(PlainRecords)  # only for this one logger, made here before slack_sdk asks for it
    try:
        sdk = logging.getLogger("slack_sdk.web.async_base_client")
    finally:
        logging.setLoggerClass(default)
    assert isinstance(sdk, PlainRecords), "slack_sdk was imported before the trace could set up its logger"
    sdk.setLevel(logging.DEBUG)
    sdk.propagate = False  # only here: the bot's own log stays as it is
    log = IssueLog(os.environ["SLACK_TRACE_FILE"])
    sdk.addHandler(log)
    gc_pauses(log)
    from bot.cli import main as cli

    if os.environ.get("SLACK_PROFILE"):  # the whole run under cProfile (slower), its stats written on the way out
        import cProfile

        profile = cProfile.Profile()
        try:
            return int(profile.runcall(cli, sys.argv[1:]) or 0)
        finally:
            profile.dump_stats(os.environ["SLACK_PROFILE"])
    sys.argv = ["vision-agent", *sys.argv[1:]]
    return int(cli() or 0)


if __name__ == "__main__":
    sys.exit(main())
