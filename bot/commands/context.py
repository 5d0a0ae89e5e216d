"""What every `/vision` command gets (who asks, the services it may touch) and gives back; option parsing."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bot.backends.base import BackendError
from bot.media.attachments import Attachment
from bot.rights import LOCAL_CHANNEL, OPERATOR, Requester
from bot.services import Services

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.monitoring.digest import Digest
    from bot.monitoring.search.moments import Moments
    from bot.pipelines.manager import PipelineManager
    from bot.scheduling.scheduler import Scheduler
    from workspace import Workspace

log = logging.getLogger(__name__)

__all__ = ["LOCAL_CHANNEL", "CommandContext", "CommandReply", "fail", "parse_options"]


@dataclass(frozen=True)
class CommandReply:
    """What to show: text (simple markdown), optionally a frame to upload (to post_channel in Slack)."""

    text: str
    frame: bytes | None = None
    frame_caption: str = ""
    ok: bool = True
    post_channel: str | None = None
    file: bytes | None = None  # a file to post (an exported recipe script), named file_name
    file_name: str = ""
    digest: Digest | None = None  # `/vision digest`: text carries it in words; Slack adds its table and chart
    moments: Moments | None = None  # `/vision search`: text lists them; Slack and the terminal add the table, frames
    table: list[list[str]] | None = None  # a header and rows (`/vision cameras`): text says them, Slack draws a table


@dataclass
class CommandContext:
    """Who asks and what they may touch: the process's Services (each None when this process does not run it)."""

    settings: Settings
    services: Services = field(default_factory=Services)
    user_id: str | None = None
    channel_id: str | None = None
    session_key: str | None = None  # the REPL's conversation (`recipe save` takes its last setup); None in Slack
    # The person at the terminal, an API or MCP client: set only by those adapters' own code, never from a payload
    # (a Slack channel or user that happens to be called "cli" is a Slack person like any other).
    operator: bool = False
    # `schedule`, `jobs`, `unschedule`: the scheduler sits above the agent, so it is not one of the Services.
    scheduler: Scheduler | None = None
    # The person at this terminal (REPL, `chat -m`) may name any file they can read: they could open it anyway.
    # Set only by the terminal adapter; never for Slack, REST or MCP, and never for the model's tool calls.
    local_files: bool = False
    # Where the terminal's person typed the line (a relative file is theirs: bot/commands/relay.py); None: here.
    cwd: Path | None = None
    # Where a slow command shows a first line at once ("loading the detector…"); None: nobody is waiting.
    progress: Callable[[str], Awaitable[None]] | None = None

    async def say(self, text: str) -> None:
        """Show an interim line before the reply (a progress line never costs the command)."""
        if self.progress is None:
            return
        try:
            await self.progress(text)
        except Exception:  # noqa: BLE001 - the command's own reply still comes
            log.warning("progress line not shown", exc_info=True)

    @property
    def workspace(self) -> Workspace | None:
        """The camera registry and files (with settings and attachments: a `bot.media.resolve.MediaScope`)."""
        return self.services.workspace

    @property
    def attachments(self) -> Sequence[Attachment]:
        """A command names its sources in words: no attached files."""
        return ()

    @property
    def requester(self) -> Requester:
        """Who asks, for `bot.rights.refusal`: the operator only when an operator adapter said so."""
        return OPERATOR if self.operator else Requester.slack(self.user_id, self.channel_id)

    def manager(self) -> PipelineManager:
        if self.services.pipelines is None:
            raise BackendError("pipelines are not available in this process.")
        return self.services.pipelines


def fail(text: str) -> CommandReply:
    return CommandReply(text=text, ok=False)


def parse_options(tokens: list[str], allowed: set[str]) -> tuple[list[str], dict[str, str]]:
    """Positional words and key=value options; ValueError for an option not in `allowed`."""
    args, opts = [], {}
    for tok in tokens:
        key, eq, val = tok.partition("=")
        if eq:
            if key.lower() not in allowed:
                raise ValueError(f"unknown option {key}=; allowed: {', '.join(sorted(allowed)) or 'none'}")
            opts[key.lower()] = val
        else:
            args.append(tok)
    return args, opts
