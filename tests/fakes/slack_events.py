"""The Slack emulator's injections: what people do in Slack, turned into the envelopes Slack would push."""

from __future__ import annotations

import time
import uuid
from typing import Any

from tests.fakes.slack_socket import Envelope

HUMAN = "U0HUMAN"


def channel_type(channel: str) -> str:
    return {"D": "im", "G": "group"}.get(channel[:1], "channel")


class EventInjection:
    """Mixed into SlackEmulator: mention / message / dm / slash / click helpers that return envelopes."""

    def event_payload(self, event: dict[str, Any]) -> dict[str, Any]:
        return {
            "token": "verification-token", "team_id": self.team_id, "context_team_id": self.team_id,
            "api_app_id": self.app_id, "event": event, "type": "event_callback",
            "event_id": self.next_id("Ev"), "event_time": int(time.time()),
            "authorizations": [{"enterprise_id": None, "team_id": self.team_id, "user_id": self.bot_user_id,
                                "is_bot": True, "is_enterprise_install": False}],
            "is_ext_shared_channel": False,
        }

    def push_event(self, event: dict[str, Any]) -> Envelope:
        return self.push("events_api", self.event_payload(event))

    def _human_message(self, channel: str, text: str, thread_ts: str | None, user: str,
                       files: list[dict[str, Any]] | None) -> dict[str, Any]:
        ch = self.channel(channel)
        self.known_user(user)  # whoever writes is a member of the workspace, known to users.info
        msg: dict[str, Any] = {"type": "message", "user": user, "text": text, "team": self.team_id,
                               "client_msg_id": str(uuid.uuid4())}
        if thread_ts:
            msg["thread_ts"] = thread_ts
        if files:
            msg["files"] = files
            msg["subtype"] = "file_share"
            msg["upload"] = False
        return self.store_message(ch.id, msg)

    def _event_of(self, msg: dict[str, Any], channel: str, type_: str = "message") -> dict[str, Any]:
        event = {k: v for k, v in msg.items() if k not in ("reactions_by", "reply_count")}
        event.update(type=type_, channel=self.channel(channel).id, event_ts=msg["ts"])
        if type_ == "message":
            event["channel_type"] = channel_type(event["channel"])
        else:
            event.pop("subtype", None)
        return event

    # what people do ----------------------------------------------------------------
    def mention(self, text: str, channel: str = "C0GENERAL", thread_ts: str | None = None, user: str = HUMAN,
                files: list[dict[str, Any]] | None = None, message_first: bool = False) -> tuple[str, list[Envelope]]:
        """@-mention the bot: Slack sends app_mention AND message.channels for the same message."""
        body = text if f"<@{self.bot_user_id}>" in text else f"<@{self.bot_user_id}> {text}"
        msg = self._human_message(channel, body, thread_ts, user, files)
        events = [self._event_of(msg, channel, "app_mention"), self._event_of(msg, channel)]
        if message_first:
            events.reverse()
        return msg["ts"], [self.push_event(e) for e in events]

    def message(self, text: str, channel: str = "C0GENERAL", thread_ts: str | None = None, user: str = HUMAN,
                files: list[dict[str, Any]] | None = None) -> tuple[str, Envelope]:
        """A plain message (no mention) in a channel or thread."""
        msg = self._human_message(channel, text, thread_ts, user, files)
        return msg["ts"], self.push_event(self._event_of(msg, channel))

    def dm(self, text: str, thread_ts: str | None = None, files: list[dict[str, Any]] | None = None,
           user: str = HUMAN) -> tuple[str, Envelope]:
        return self.message(text, "D0HUMAN", thread_ts, user, files)

    def open_messages_tab(self, user: str = HUMAN, channel: str = "D0HUMAN") -> Envelope:
        """A person opens the app's Messages tab (the agent's DM): Slack sends app_home_opened with tab=messages."""
        return self.push_event({"type": "app_home_opened", "user": user, "channel": self.channel(channel).id,
                                "tab": "messages", "event_ts": self.next_ts()})

    def other_bot_message(self, text: str, channel: str = "C0GENERAL", thread_ts: str | None = None) -> Envelope:
        msg = {"type": "message", "subtype": "bot_message", "bot_id": "B0OTHER", "username": "otherbot",
               "text": text, **({"thread_ts": thread_ts} if thread_ts else {})}
        msg = self.store_message(self.channel(channel).id, msg)
        return self.push_event(self._event_of(msg, channel))

    def edit(self, channel: str, ts: str, text: str) -> Envelope:
        """A person edits a message: Slack sends subtype message_changed."""
        msg = self.find_message(channel, ts)
        msg["text"] = text
        event = {"type": "message", "subtype": "message_changed", "channel": self.channel(channel).id,
                 "channel_type": channel_type(channel), "hidden": True, "ts": self.next_ts(),
                 "event_ts": self.next_ts(), "message": dict(msg), "previous_message": dict(msg)}
        return self.push_event(event)

    def echo_bot_message(self, ch: Any, msg: dict[str, Any]) -> None:
        """The bot's own chat.postMessage comes back as a message event, as in Slack."""
        if self.echo_bot_messages:
            event = self._event_of(msg, ch.id)
            event["bot_profile"] = {"id": self.bot_id, "app_id": self.app_id, "name": "vision-agent"}
            self.push_event(event)

    def slash(self, text: str, channel: str = "C0GENERAL", user: str = HUMAN, command: str = "/vision") -> Envelope:
        """A slash command; its response_url is `{base}/response/<rid>` (recorded as method `response_url`)."""
        rid = self.next_id("R")
        payload = {
            "token": "verification-token", "team_id": self.team_id, "team_domain": "emulated",
            "channel_id": self.channel(channel).id, "channel_name": self.channel(channel).name,
            "user_id": user, "user_name": "human", "command": command, "text": text,
            "api_app_id": self.app_id, "is_enterprise_install": "false",
            "response_url": f"{self.base_url}/response/{rid}", "trigger_id": self.next_id("trig-"),
        }
        return self.push("slash_commands", payload, accepts_response_payload=True)

    def click(self, action_id: str, value: str, channel: str, message_ts: str, user: str = HUMAN) -> Envelope:
        """A person clicks a Block Kit button on a message."""
        message = self.find_message(channel, message_ts)
        block_id, kind = _element_of(message, action_id)
        payload = {
            "type": "block_actions", "api_app_id": self.app_id, "token": "verification-token",
            "user": {"id": user, "username": "human", "team_id": self.team_id},
            "team": {"id": self.team_id, "domain": "emulated"},
            "container": {"type": "message", "message_ts": message_ts, "channel_id": self.channel(channel).id,
                          "is_ephemeral": False},
            "channel": {"id": self.channel(channel).id, "name": self.channel(channel).name},
            "message": message, "trigger_id": self.next_id("trig-"),
            "response_url": f"{self.base_url}/response/{self.next_id('R')}",
            "actions": [{"action_id": action_id, "block_id": block_id, "value": value, "type": kind,
                         "action_ts": f"{time.time():.6f}"}],
        }
        return self.push("interactive", payload, accepts_response_payload=False)


def _element_of(message: dict[str, Any], action_id: str) -> tuple[str, str]:
    """(block_id, element type) of the interactive element a click names: a button in an actions block, or the
    feedback_buttons of a context_actions block (whose click payload has type feedback_buttons)."""
    for block in message.get("blocks") or []:
        if block.get("type") not in ("actions", "context_actions"):
            continue
        for element in block.get("elements") or []:
            if element.get("action_id") == action_id:
                return block.get("block_id", ""), element.get("type", "button")
    first = next((b.get("block_id", "") for b in message.get("blocks") or [] if b.get("type") == "actions"), "")
    return first, "button"
