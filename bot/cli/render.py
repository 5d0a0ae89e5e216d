"""Terminal rendering of AgentEvents, `/vision` replies and alerts (rich); the one Slack-markup-to-terminal converter."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from bot.agent.steps import label as step_label
from bot.cli import inputhook
from bot.events import AgentEvent, EventType
from bot.media.redaction import MASKS, redact
from bot.objects.text import for_people

if TYPE_CHECKING:
    from bot.commands.context import CommandReply
    from bot.monitoring.alerts import Alert
    from bot.monitoring.search.moments import Moments
    from bot.runtime import Runtime

# *bold*, never a redactor's *** mask: the text inside starts and ends with something other than * or a space
_SLACK_BOLD = re.compile(r"(?<![\w*])\*([^*\s](?:[^*\n]*[^*\s])?)\*(?![\w*])")
_CODE = re.compile(r"`([^`\n]+)`")
# Slack's <https://x|label>, <#C1|name>, <@U1>, <!here>; not a bare <word> (the usage's `<command>` stays)
_LINK = re.compile(r"<((?:[a-z][a-z0-9+.-]*://|mailto:)[^<>|\s]+|[#@!][^<>|\s]+)(?:\|([^<>]*))?>")
_BULLET = re.compile(r"^(\s*)• ", re.MULTILINE)
_MAX_RESULT = 600
_MAX_THINKING = 800
THINKING = "thinking…"
LOADING_DETECTOR = "loading the detector (its first use in this process takes 10-30 s)"


def _clip(text: str, limit: int) -> str:
    text = redact(text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def save_frame(frames_dir: Path, data: dict[str, Any], label: str = "frame") -> str | None:
    """Write a FRAME's (or a reply's) JPEG under frames/YYYY-MM-DD/ as `LABEL_YYYY-MM-DD_HH-MM-SS.jpg` (the camera or
    caption first, then when: what a person looks for); the path, or None if nothing to save."""
    image = data.get("image")
    if not image:
        return None
    folder = Path(frames_dir) / time.strftime("%Y-%m-%d")
    folder.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", label).strip("-")[:40].rstrip("-") or "frame"
    stem = f"{slug}_{time.strftime('%Y-%m-%d_%H-%M-%S')}"
    path, n = folder / f"{stem}.jpg", 2
    while path.exists():  # two in one second: numbered, never overwritten
        path, n = folder / f"{stem}-{n}.jpg", n + 1
    path.write_bytes(image)
    return str(path)


def _link(m: re.Match[str]) -> str:
    target, label = m[1], m[2]
    if target[0] in "#@!":
        return ("@" if target[0] == "!" else target[0]) + (label or target[1:])
    return f"{label} ({target})" if label and label != target else target


def terminal_text(text: str, style: str = "") -> Text:
    """The command core's Slack markup for a terminal: *bold* and `code` become styles, • a dash, links their text
    (and address). One converter at the CLI edge, so the core writes each string once."""
    plain = _BULLET.sub(r"\1- ", _LINK.sub(_link, text))
    out = Text(style=style)
    pos = 0
    for m in re.finditer(f"{_SLACK_BOLD.pattern}|{_CODE.pattern}", plain):
        out.append(plain[pos:m.start()])
        out.append(m[1] if m[1] is not None else m[2], style="bold" if m[1] is not None else "cyan")
        pos = m.end()
    out.append(plain[pos:])
    return out


def _typed() -> str:
    """What the person has typed at the prompt so far (readline's buffer; '' without readline). Only in the
    prompt's own thread (bot/cli/inputhook.py)."""
    readline = sys.modules.get("readline")
    try:
        return readline.get_line_buffer() if readline is not None else ""
    except Exception:  # noqa: BLE001 - a redraw without the typed text beats none
        return ""


def _same(a: str, b: str) -> bool:
    """Equal but for whitespace (streamed pieces and the joined text differ in it)."""
    return a.split() == b.split()


class _Waiting:
    """The spinner's words, drawn afresh on each refresh: what the turn waits for, for how long, and (during a tool)
    that the detector is loading when it is."""

    def __init__(self, label: str, note: Callable[[], str | None] | None) -> None:
        self.label, self.note, self.since = label, note, time.monotonic()

    def __rich__(self) -> Text:
        out = Text(self.label, style="dim")
        seconds = int(time.monotonic() - self.since)
        if seconds >= 2:
            out.append(f" {seconds} s", style="dim")
        note = self.note() if self.note is not None else None
        if note:
            out.append(f" · {note}", style="yellow")
        return out


def _markdown(text: str) -> Markdown:
    """Model text as rich markdown, through the one redactor (its *** masks escaped so they are not emphasis)."""
    return Markdown(MASKS.sub(r"\*\*\*", redact(text)))


class Renderer:
    """Prints what the agent does: tool calls, results, thinking (dim), frames saved, errors (red)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False)
        self._last_result = ""  # a frame's caption often repeats the tool result: print it once
        self._streamed = ""  # the model's text so far in this call, shown live on a terminal
        self._printed = ""  # the text streamed before a tool call, printed when the call came: not printed again
        self._live: Live | None = None
        self._spinner: Live | None = None  # while the turn waits for the model or a tool (terminals only)
        self.waiting = False  # the prompt is on screen waiting for a line (set by the REPL's input thread)
        self.busy_note: Callable[[], str | None] | None = None  # e.g. the detector loading, said during a tool

    def prompt(self, for_input: bool = False) -> str:
        if not self.console.is_terminal:
            return "you> "
        # readline counts the prompt's width: its colour codes are marked as taking none (\x01 … \x02)
        start, end = ("\x01", "\x02") if for_input and "readline" in sys.modules else ("", "")
        return f"{start}\x1b[1;36m{end}you>{start}\x1b[0m{end} "

    @contextmanager
    def aside(self) -> Iterator[None]:
        """Print something that arrives while the prompt waits (an alert, a file that ran out) above it, then draw
        the prompt again with what was typed so far, so the person still sees where to type."""
        if not (self.waiting and self.console.is_terminal):
            yield
            return
        self.console.file.write("\r\x1b[2K")  # the prompt's line is cleared, the text goes there
        try:
            yield
        finally:
            if inputhook.installed():  # set once readline is in use (repl.line_editing)
                # readline's buffer is read in the prompt's own thread only (bot/cli/inputhook.py): read from here
                # while someone types, glibc aborts the process
                inputhook.soon(self._redraw)
            else:
                self.console.file.write(self.prompt())
            self.console.file.flush()

    def _redraw(self) -> None:
        """The prompt again with what was typed so far (in the prompt's thread; twice is harmless: the line is
        cleared first)."""
        if self.waiting:
            self.console.file.write("\r\x1b[2K" + self.prompt() + _typed())
            self.console.file.flush()

    def _say(self, text: str, style: str = "") -> None:
        # Every line the terminal shows passes the one redactor (model text, tool results, replies, alerts).
        self.console.print(terminal_text(redact(text), style))

    def notice(self, text: str) -> None:
        """A line about a pipeline nobody asked about just now (a file that ran out, with its totals)."""
        self._say(text, "bold green")

    def plain(self, text: str) -> None:
        self._say(text)

    def note(self, text: str) -> None:
        self._say(text, "dim")

    def warn(self, text: str) -> None:
        self._say(text, "yellow")

    def error(self, text: str) -> None:
        self._say(f"error: {text}", "bold red")

    def banner(self, rt: Runtime, session: str) -> None:
        s = rt.settings
        self.console.print(Text.assemble(("Vision Agent", "bold"), (
            f" - workspace {rt.workspace.root}, model {s.llm.model}, backend {s.inference.backend}, "
            f"session {session}", "dim")))
        if not rt.llm_ready:
            why = rt.llm_unavailable()
            self.console.print(Text(f"{why}. Meanwhile /vision commands work.", style="yellow"))
        live = [h for h in (rt.pipelines.snapshot() if rt.pipelines is not None else []) if h.status != "stopped"]
        if live:
            self.note(f"{len(live)} pipeline(s) from the last run: " + ", ".join(
                f"{h.name} ({h.status})" for h in live) + " - /vision list")
        self.note("Type a message, /help for commands, /quit to leave.")

    def wait(self, label: str, tool: bool = False) -> None:
        """Show that the turn is waiting (a spinner with `label`, the seconds and, for a tool, `busy_note`) until
        the next thing is printed. Terminals only: a pipe or a log gets no spinner frames."""
        if not self.console.is_terminal or self._live is not None:
            return
        self.unwait()
        waiting = _Waiting(label, self.busy_note if tool else None)
        self._spinner = Live(Spinner("dots", text=waiting, style="cyan"), console=self.console, transient=True,
                             refresh_per_second=8)
        self._spinner.start()

    def unwait(self) -> None:
        spinner, self._spinner = self._spinner, None
        if spinner is not None:
            spinner.stop()

    def _stream(self, d: dict[str, Any]) -> None:
        """A piece of the answer as it is generated: redrawn as markdown in place (terminals only; a pipe gets the
        final text once)."""
        if not self.console.is_terminal:
            return
        if d.get("restart"):  # a retried call starts over: what came so far is void
            self._streamed = ""
        self._streamed += d.get("text") or ""
        if self._live is None:
            self._printed = ""  # a new model call: what the last one printed was its own
            # drawn on each piece from this thread (no refresh thread of its own: nothing to stop if a turn dies)
            self._live = Live(console=self.console, auto_refresh=False, transient=True, vertical_overflow="visible")
            self._live.start()
        self._live.update(_markdown(self._streamed), refresh=True)

    def _end_stream(self, final: bool) -> None:
        """Close the live view; text streamed before a tool call stays printed, a final answer is printed once by
        its RESPONSE."""
        if self._live is None:
            return
        self._live.stop()
        self._live = None
        if not final and self._streamed.strip():
            self.console.print(_markdown(self._streamed))
            self._printed = self._streamed
        self._streamed = ""

    def end_turn(self) -> None:
        self.unwait()
        self._end_stream(final=True)

    def event(self, ev: AgentEvent, frames_dir: Path) -> None:
        d = ev.data
        self.unwait()
        if ev.type is EventType.TEXT_DELTA:
            self._stream(d)
            return
        self._end_stream(final=ev.type in (EventType.RESPONSE, EventType.ASK_USER, EventType.ERROR))
        self._show(ev, frames_dir)
        if ev.type is EventType.TOOL_CALL:
            self.wait(step_label(str(d.get("name") or ""), d.get("input")) + "…", tool=True)
        elif ev.type in (EventType.THINKING, EventType.TOOL_RESULT, EventType.FRAME, EventType.MOMENTS):
            self.wait(THINKING)  # the model reads the results and writes on

    def _show(self, ev: AgentEvent, frames_dir: Path) -> None:
        d = ev.data
        if ev.type is EventType.THINKING:
            text = d.get("text", "")
            if self._printed and _same(text, self._printed):  # the text before a tool call, streamed: shown once
                self._printed = ""
            else:
                self.console.print(Text(_clip(text, _MAX_THINKING), style="dim italic"))
        elif ev.type is EventType.TOOL_CALL:
            args = json.dumps(d.get("input") or {}, ensure_ascii=False, separators=(", ", ": "))
            step = step_label(str(d.get("name") or ""), d.get("input"))  # the same label Slack's status shows
            self.console.print(Text.assemble(("→ ", "cyan"), (step, "bold cyan"),
                                             (f" ({d.get('name', '?')} {_clip(args, 200)})", "dim cyan")))
        elif ev.type is EventType.TOOL_RESULT:
            style = "red" if d.get("is_error") else "green"
            self._last_result = for_people(d.get("text", "")).strip()
            self.console.print(Text(f"  ← {_clip(self._last_result, _MAX_RESULT)}", style=style))
        elif ev.type is EventType.FRAME:
            caption = (d.get("caption") or "").strip()
            path = d.get("path") or save_frame(frames_dir, d, caption or "frame")
            label = "" if not caption or caption == self._last_result else f" {_clip(caption, 120)}"
            self.console.print(Text(f"  ▣ annotated frame{label} saved to {path}", style="magenta"))
        elif ev.type is EventType.MOMENTS:
            self.moments(d["moments"], frames_dir)
        elif ev.type in (EventType.RESPONSE, EventType.ASK_USER):
            self.console.print(_markdown(d.get("text", "")))
        elif ev.type is EventType.ERROR:
            self.error(d.get("text", "unknown error"))
        elif ev.type is EventType.ALERT:
            self._say(f"ALERT {d.get('camera')}: {d.get('summary') or d.get('text')}", "bold red")

    def command_reply(self, reply: CommandReply, frames_dir: Path) -> None:
        if reply.moments is not None and reply.moments.moments:  # a search: the table and its pictures instead
            self.moments(reply.moments, frames_dir)
            return
        self._say(reply.text, "" if reply.ok else "red")  # the command core writes Slack markup: _say converts it
        if reply.frame:
            caption = reply.frame_caption or "snapshot"
            path = save_frame(frames_dir, {"image": reply.frame}, caption)
            self._say(f"  ▣ {caption} saved to {path}", "magenta")

    def moments(self, found: Moments, frames_dir: Path) -> None:
        """A search's moments as the Slack answer has them: the title, the table, the best pictures saved."""
        from bot.monitoring.search.moments import table_rows, title  # the CLI's start-up does not load search

        if not found.moments:
            return
        rows = table_rows(found, found.timezone)
        table = Table(title=redact(title(found)), title_justify="left")
        for name in rows[0]:
            table.add_column(name, overflow="fold")
        for row in rows[1:]:
            table.add_row(*(redact(c) for c in row))
        self.console.print(table)
        for n, m in enumerate(found.moments, 1):
            if m.picture:
                path = save_frame(frames_dir, {"image": m.picture}, f"search-{n}-{m.camera}")
                self.console.print(Text(f"  ▣ #{n} {m.camera}: picture saved to {path}", style="magenta"))

    def alert(self, alert: Alert, frames_dir: Path) -> None:
        if alert.digest is not None:  # a scheduled digest is a report: its plain text, table and sparklines
            self._say(alert.text)
            return
        line = f"ALERT {_when(alert)} {alert.camera} [{alert.rule}]: {alert.summary or alert.text}"
        self._say(line, "bold red")
        if alert.frame:
            path = save_frame(frames_dir, {"image": alert.frame}, f"alert-{alert.camera}")
            self.console.print(Text(f"  ▣ alert frame saved to {path}", style="magenta"))
        if alert.check is not None:  # posted held until the model saw it
            self.check(alert)
        if alert.clip_path:
            self.clip(alert)

    def check(self, alert: Alert) -> None:
        """The model's look at an alert (verified alerts), under it; its words are plain text here."""
        assert alert.check is not None
        style = {True: "green", False: "yellow"}.get(alert.check.seen, "dim")  # type: ignore[arg-type]
        self.console.print(Text(f"  {alert.camera} [{alert.rule}]: {alert.check.line()}", style=style))

    def clip(self, alert: Alert) -> None:
        """An alert's clip, cut after the alert was shown (other alerts may be printed between): named by its
        camera, rule and time as its ALERT line is; or one line saying there is none."""
        which = f"{alert.camera} [{alert.rule}] {_when(alert)}"
        if alert.clip_path:
            self.console.print(Text(f"  ▶ {which}: alert clip saved to {alert.clip_path}", style="magenta"))
        else:
            self._say(f"  no clip for the {which} alert: too few frames were kept around the event", "yellow")


def _when(alert: Alert) -> str:
    """An alert's local time as its ALERT line and its clip line both name it."""
    return time.strftime("%H:%M:%S", time.localtime(alert.time))
