"""What every `/vision` command gets (who asks, the services it may touch) and gives back; option parsing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.backends.base import BackendError
from bot.rights import LOCAL_CHANNEL, Requester
from bot.services import Recipes, Services

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.monitoring.alerts import AlertRouter
    from bot.monitoring.monitor import Monitor
    from bot.pipelines.manager import PipelineManager
    from bot.scheduling.scheduler import Scheduler
    from workspace import Workspace

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


@dataclass
class CommandContext:
    """Who asks and what they may touch (each service None when this process does not run it)."""

    settings: Settings
    pipelines: PipelineManager | None = None
    router: AlertRouter | None = None
    workspace: Workspace | None = None
    user_id: str | None = None
    channel_id: str | None = None
    monitor: Monitor | None = None  # `rule`, `rules`, `unrule`
    scheduler: Scheduler | None = None  # `schedule`, `jobs`, `unschedule`
    recipes: Recipes | None = None  # `recipes`, `recipe save|run|export|delete`
    session_key: str | None = None  # the REPL's conversation (`recipe save` takes its last setup); None in Slack
    services: Services = field(default_factory=Services)  # as tools get them: `recipe run` replays through tools

    @property
    def requester(self) -> Requester:
        """Who asks, for `bot.rights.refusal` (the CLI REPL passes LOCAL_CHANNEL: the operator)."""
        return Requester.of(self.user_id, self.channel_id)

    def manager(self) -> PipelineManager:
        if self.pipelines is None:
            raise BackendError("pipelines are not available in this process.")
        return self.pipelines


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
