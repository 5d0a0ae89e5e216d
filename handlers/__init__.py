"""The Slack adapter: one module per surface, each with `register(app, bot)`; `register(app, runtime)` wires all."""

from __future__ import annotations

from typing import Any


def register(app: Any, runtime: Any) -> Any:
    """Attach every Slack surface of the bot to a Bolt AsyncApp; returns the SlackBot state they share."""
    from handlers import actions, commands, messages
    from handlers.alerts import SlackAlertSink
    from handlers.context import SlackBot
    from handlers.files import FileFetcher
    from handlers.queue import SessionQueues
    from handlers.threads import ThreadBook

    ws = runtime.workspace
    bot = SlackBot(
        runtime=runtime,
        app=app,
        client=app.client,
        threads=ThreadBook(ws.state_dir / "slack_threads.jsonl"),
        fetcher=FileFetcher(ws.root / "uploads" / "slack", runtime.settings.slack.max_image_bytes),
    )
    bot.queues = SessionQueues(lambda job: messages.run_turn(bot, job))

    async def attach(context: Any, next: Any) -> None:  # listeners reach the shared state as context["vision"]
        context["vision"] = bot
        await next()

    app.use(attach)
    for surface in (messages, commands, actions):
        surface.register(app, bot)
    router = getattr(runtime, "router", None)
    if router is not None:
        router.add_sink(SlackAlertSink(bot))
    return bot
