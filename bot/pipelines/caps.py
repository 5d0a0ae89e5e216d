"""How many pipelines may run: per Slack user and in total (settings `pipelines`), checked at the one start.

A pipeline holds a decoder thread, a model and a ring of frames: one reply asking for 60 starts must not take the
machine. Each pipeline remembers who started it (`PipelineConfig.owner`, a Slack user id; None for the operator:
CLI, REST, MCP). The operator is not held to the per-user cap but counts towards, and is held by, the total,
which guards the machine for everyone. Restoring saved pipelines at start-up does not pass here, so lowering a cap
never drops pipelines that already run.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.rights import Requester

PipelinesLimit = tuple[int, int]  # (per user, total); 0 = no limit


def owner_of(who: Requester) -> str | None:
    """Whose share a start counts against: the Slack user, None for the operator."""
    return None if who.operator else (who.user_id or "unknown")


def cap_refusal(owners: Iterable[str | None], owner: str | None, per_user: int, total: int) -> str | None:
    """One line if `owner` may not start another pipeline beside the running ones (their owners), else None."""
    running = list(owners)
    if total and len(running) >= total:
        return (f"{len(running)} pipelines are running, the most this bot runs at once (pipelines.max_total = "
                f"{total}): stop one first (`/vision list` shows them).")
    mine = sum(1 for o in running if o == owner)
    if owner is not None and per_user and mine >= per_user:
        return (f"you already run {mine} pipelines, the most one person may (pipelines.max_per_user = {per_user}): "
                "stop one of yours first (`/vision list` shows them).")
    return None
