"""The Slack adapter: one module per surface, each with `register(app, bot)`; `register(app, runtime)` wires all."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.runtime import Runtime
from handlers.alerts import ended
from handlers.alerts.sink import SlackAlertSink
from handlers.context import SlackBot
from handlers.listeners import actions, commands, home, messages
from handlers.state.alert_book import AlertBook
from handlers.state.inflight import InflightBook
from handlers.state.queue import SessionQueues
from handlers.state.threads import ThreadBook
from handlers.transport.delivery import RetryingRespond
from handlers.transport.files import FileFetcher


def register(app: AsyncApp, runtime: Runtime) -> SlackBot:
    """Attach every Slack surface of the bot to a Bolt AsyncApp; returns the SlackBot state they share."""
    ws = runtime.workspace
    bot = SlackBot(
        runtime=runtime,
        app=app,
        client=app.client,
        threads=ThreadBook(ws.state_dir / "slack_threads.jsonl"),
        fetcher=FileFetcher(ws.root / "uploads" / "slack", runtime.settings.slack.max_image_bytes,
                            max_pixels=runtime.settings.media.max_pixels, api_url=runtime.settings.slack.api_url),
        inflight=InflightBook(ws.state_dir / "slack_inflight.jsonl"),
    )
    for open_turn in bot.inflight.open_turns():  # Slack may redeliver them after the restart: they are queued once
        bot.dedupe.add(open_turn.key)
    bot.queues = SessionQueues(lambda job: messages.run_turn(bot, job))

    async def attach(context: Any, next: Any) -> None:  # listeners reach the shared state as context["vision"]
        context["vision"] = bot
        if context.response_url:  # respond() rides out 429s like every other write
            context["respond"] = RetryingRespond(response_url=context.response_url)
        await next()

    app.use(attach)
    for surface in (messages, commands, actions, home):
        surface.register(app, bot)
    bot.posted_alerts = AlertBook(ws.state_dir / "slack_alerts.json", backend=runtime.settings.storage.backend)
    alerts = SlackAlertSink(bot, bot.posted_alerts)
    runtime.router.add_sink(alerts)
    runtime.router.add_clip_sink(alerts.clip_cut)  # the clip follows its alert into the alert's thread
    runtime.router.add_check_sink(alerts.checked)  # the model's look at an alert updates it in place
    ended.register(bot)  # a file that runs out: its totals where it was started
    return bot
