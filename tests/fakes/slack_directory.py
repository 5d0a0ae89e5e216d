"""The Slack emulator's conversations and users methods: thread history (paged as Slack pages it), channel info,
users.info with the user object docs.slack.dev documents."""

from __future__ import annotations

from typing import Any

from tests.fakes.slack_methods import SlackError, _require

MAX_LIMIT = 1000  # conversations.replies: "the maximum number of items to return", at most 1,000
INTERNAL = ("reactions_by",)  # the emulator's own bookkeeping, never part of a message Slack returns


def _user_object(uid: str, team: str, name: str, display: str, real: str, is_bot: bool) -> dict[str, Any]:
    """A users.info `user` as docs.slack.dev shows it (the fields a bot reads; email needs users:read.email)."""
    return {
        "id": uid, "team_id": team, "name": name, "deleted": False, "color": "9f69e7", "real_name": real,
        "tz": "Europe/London", "tz_label": "Greenwich Mean Time", "tz_offset": 0,
        "profile": {"avatar_hash": "ge3b51ca72de", "status_text": "", "status_emoji": "", "real_name": real,
                    "display_name": display, "real_name_normalized": real, "display_name_normalized": display,
                    "image_24": "https://a.slack-edge.com/df10d/img/avatars/ava_0024-24.png", "team": team},
        "is_admin": False, "is_owner": False, "is_primary_owner": False, "is_restricted": False,
        "is_ultra_restricted": False, "is_bot": is_bot, "updated": 1502138686, "is_app_user": False, "has_2fa": False,
    }


class DirectoryMethods:
    """Mixed into SlackEmulator: the workspace's people and conversation history."""

    users: dict[str, dict[str, Any]]  # user id -> user object
    invisible: set[str]  # members users.info will not show the bot (user_not_visible), e.g. some Connect guests

    def add_user(self, uid: str, display_name: str, real_name: str = "", *, is_bot: bool = False) -> dict[str, Any]:
        """A workspace member; `display_name` may be anything a person can type into their profile."""
        self.users[uid] = _user_object(uid, self.team_id, uid.lower(), display_name, real_name or display_name, is_bot)
        return self.users[uid]

    def known_user(self, uid: str) -> None:
        """Whoever writes in the workspace is a member users.info knows (with a plain profile unless added)."""
        if uid and uid not in self.users:
            self.add_user(uid, uid.lower())

    def api_users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "user")
        if params["user"] in self.invisible:
            raise SlackError("user_not_visible")
        if params["user"] not in self.users:
            raise SlackError("user_not_found")
        return {"user": dict(self.users[params["user"]])}

    def api_conversations_replies(self, params: dict[str, Any]) -> dict[str, Any]:
        """The thread's root then its replies, oldest first, `limit` at a time with a next_cursor."""
        _require(params, "channel", "ts")
        msgs = self.messages(params["channel"], params["ts"])
        if not msgs:
            raise SlackError("thread_not_found")
        try:
            limit = min(int(params.get("limit") or MAX_LIMIT), MAX_LIMIT)
            start = int(params["cursor"].removeprefix("dGVhbTpD")) if params.get("cursor") else 0
        except ValueError:
            raise SlackError("invalid_cursor") from None
        page = [{k: v for k, v in m.items() if k not in INTERNAL} for m in msgs[start:start + limit]]
        more = start + limit < len(msgs)
        return {"messages": page, "has_more": more,
                "response_metadata": {"next_cursor": f"dGVhbTpD{start + limit}" if more else ""}}

    def api_conversations_info(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "channel")
        ch = self.channel(params["channel"])
        return {"channel": {"id": ch.id, "name": ch.name, "is_im": ch.is_im, "is_private": ch.is_private,
                            "is_channel": not ch.is_im and not ch.is_private, "is_member": ch.bot_member}}

    def api_conversations_open(self, params: dict[str, Any]) -> dict[str, Any]:
        """docs.slack.dev conversations.open: `users` (one id here) -> the app's IM with them, the same one each time."""
        _require(params, "users")
        uid = str(params["users"]).split(",")[0].strip()
        if uid not in self.users:
            raise SlackError("user_not_found")
        for ch in self.channels.values():
            if ch.is_im and ch.user == uid:
                return {"channel": {"id": ch.id}, "already_open": True}
        ch = self.add_channel(self.next_id("D"), "", is_im=True)
        ch.user = uid
        return {"channel": {"id": ch.id}}
