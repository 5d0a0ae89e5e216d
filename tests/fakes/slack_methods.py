"""The Slack emulator's Web API methods, validating arguments the way Slack does (limits, unknown ids)."""

from __future__ import annotations

from typing import Any

from tests.fakes.slack_tables import BlockError, check_message_tables

MAX_TEXT = 40_000
MAX_SECTION = 3_000
MAX_BLOCKS = 50
MAX_MARKDOWN = 12_000  # docs.slack.dev markdown block: "The standard markdown-formatted text. Limit 12,000 characters"


class SlackError(Exception):
    """A Slack API error code (`{"ok": false, "error": code}`)."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def _require(params: dict[str, Any], *names: str) -> None:
    for name in names:
        if params.get(name) in (None, ""):
            raise SlackError("invalid_arguments" if name not in ("channel", "channel_id") else "channel_not_found")


def check_blocks(blocks: Any) -> None:
    """Slack's block limits: <= 50 blocks, section text <= 3,000 chars, header <= 150, markdown <= 12,000; image
    blocks' shape; table and data visualization blocks (tests/fakes/slack_tables.py)."""
    if not isinstance(blocks, list) or len(blocks) > MAX_BLOCKS:
        raise SlackError("invalid_blocks")
    try:
        check_message_tables(blocks)
    except BlockError as exc:
        raise SlackError(exc.error) from None
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "markdown":  # its text is a string, not a text object
            if not isinstance(block.get("text"), str) or not block["text"] or len(block["text"]) > MAX_MARKDOWN:
                raise SlackError("invalid_blocks")
            continue
        text = (block.get("text") or {}).get("text", "") if isinstance(block, dict) else None
        if text is None or (block.get("type") == "section" and len(text) > MAX_SECTION):
            raise SlackError("invalid_blocks")
        if block.get("type") == "header" and len(text) > 150:
            raise SlackError("invalid_blocks")
        if block.get("type") == "image":
            _check_image(block)
        if block.get("type") == "context_actions":
            _check_context_actions(block)


def _check_context_actions(block: dict[str, Any]) -> None:
    """docs.slack.dev context actions block: 1–5 elements, feedback_buttons (both buttons: plain_text <= 75,
    value <= 2,000) or icon_button."""
    elements = block.get("elements")
    if not isinstance(elements, list) or not 1 <= len(elements) <= 5:
        raise SlackError("invalid_blocks")
    for el in elements:
        if not isinstance(el, dict) or el.get("type") not in ("feedback_buttons", "icon_button"):
            raise SlackError("invalid_blocks")
        buttons = [el.get("positive_button"), el.get("negative_button")] if el["type"] == "feedback_buttons" else []
        for b in buttons:
            text = b.get("text") if isinstance(b, dict) else None
            if not (isinstance(text, dict) and text.get("type") == "plain_text" and 0 < len(text.get("text", "")) <= 75
                    and isinstance(b.get("value"), str) and len(b["value"]) <= 2000):
                raise SlackError("invalid_blocks")


def _check_image(block: dict[str, Any]) -> None:
    """docs.slack.dev image block: alt_text (<= 2,000) and exactly one of image_url / slack_file {id | url}."""
    alt, url, file = block.get("alt_text"), block.get("image_url"), block.get("slack_file")
    if not isinstance(alt, str) or not alt or len(alt) > 2000 or (url is None) == (file is None):
        raise SlackError("invalid_blocks")
    if file is not None and (not isinstance(file, dict) or (file.get("id") is None) == (file.get("url") is None)):
        raise SlackError("invalid_blocks")


def slack_file_refs(blocks: Any) -> list[dict[str, Any]]:
    """The slack_file objects of a message's image blocks."""
    return [b["slack_file"] for b in blocks or [] if isinstance(b, dict) and b.get("type") == "image"
            and isinstance(b.get("slack_file"), dict)]


def sniff_mimetype(data: bytes) -> str:
    """What Slack's file processing would call the bytes (image blocks take images only)."""
    for magic, mime in ((b"\xff\xd8\xff", "image/jpeg"), (b"\x89PNG", "image/png"), (b"GIF8", "image/gif")):
        if data.startswith(magic):
            return mime
    return "video/mp4" if data[4:8] == b"ftyp" else "application/octet-stream"


def _check_message(params: dict[str, Any]) -> None:
    if not params.get("text") and not params.get("blocks"):
        raise SlackError("no_text")
    if len(params.get("text") or "") > MAX_TEXT:
        raise SlackError("msg_too_long")
    if params.get("blocks"):
        check_blocks(params["blocks"])


class WebApiMethods:
    """Mixed into SlackEmulator: one `api_<method>` per Web API method the bot may call."""

    status_error: str | None = None  # set to make assistant.threads.setStatus fail with this error
    agent_app = True  # the app has the Agent feature (setSuggestedPrompts answers not_agent_app without it)
    suggested_prompts: dict[str, list[dict[str, Any]]]  # channel -> the prompts last set there
    titles: dict[tuple[str, str], str]  # (channel, thread_ts) -> title

    def _bot_message(self, params: dict[str, Any]) -> dict[str, Any]:
        msg = {"type": "message", "user": self.bot_user_id, "bot_id": self.bot_id, "app_id": self.app_id,
               "text": params.get("text") or "", "team": self.team_id}
        for key in ("blocks", "thread_ts", "metadata"):
            if params.get(key):
                msg[key] = params[key]
        return msg

    def _check_files(self, params: dict[str, Any]) -> None:
        """An image block's slack_file must be an image file that exists and whose upload was completed."""
        for ref in slack_file_refs(params.get("blocks")):
            url = ref.get("url")
            info = self.files.get(ref.get("id", "")) if url is None else next(
                (f for f in self.files.values() if url in (f.get("url_private"), f.get("permalink"))), None)
            if info is None or info["id"] not in self.completed or not info["mimetype"].startswith("image/"):
                raise SlackError("invalid_blocks")

    def _thread_exists(self, channel: str, thread_ts: str | None) -> None:
        if thread_ts:
            self.find_message(channel, thread_ts)  # Slack would post top-level or fail; we fail loudly

    # identity / socket ------------------------------------------------------
    def api_auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"url": "https://emulated.slack.com/", "team": "Emulated", "user": "vision-agent",
                "team_id": self.team_id, "user_id": self.bot_user_id, "bot_id": self.bot_id,
                "is_enterprise_install": False}

    def api_apps_connections_open(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"url": self.socket_url()}

    # chat --------------------------------------------------------------------
    def api_chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "channel")
        ch = self.postable(params["channel"])
        _check_message(params)
        self._check_files(params)
        self._thread_exists(ch.id, params.get("thread_ts"))
        msg = self.store_message(ch.id, self._bot_message(params))
        self.echo_bot_message(ch, msg)
        return {"channel": ch.id, "ts": msg["ts"], "message": msg}

    def api_chat_getPermalink(self, params: dict[str, Any]) -> dict[str, Any]:
        """docs.slack.dev chat.getPermalink: channel + message_ts -> the message's link (a reply's names its thread)."""
        _require(params, "channel", "message_ts")
        ch = self.channel(params["channel"])
        msg = self.find_message(ch.id, params["message_ts"])
        link = f"https://emulated.slack.com/archives/{ch.id}/p{msg['ts'].replace('.', '')}"
        if msg.get("thread_ts") and msg["thread_ts"] != msg["ts"]:
            link += f"?thread_ts={msg['thread_ts']}&cid={ch.id}"
        return {"channel": ch.id, "permalink": link}

    def api_chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "channel", "ts")
        ch = self.channel(params["channel"])
        _check_message(params)
        self._check_files(params)
        msg = self.find_message(ch.id, params["ts"])
        if msg.get("user") != self.bot_user_id or msg.get("bot_id") != self.bot_id:
            raise SlackError("cant_update_message")  # only the app's own messages (docs.slack.dev chat.update)
        if "text" in params:
            msg["text"] = params.get("text") or ""
        if "blocks" in params:  # absent: the message keeps its blocks; [] removes them
            msg["blocks"] = params.get("blocks") or []
        msg["edited"] = {"user": self.bot_user_id, "ts": self.next_ts()}
        return {"channel": ch.id, "ts": msg["ts"], "text": msg["text"]}

    def api_chat_delete(self, params: dict[str, Any]) -> dict[str, Any]:
        """docs.slack.dev chat.delete: a bot token deletes only messages its app posted (cant_delete_message)."""
        _require(params, "channel", "ts")
        ch = self.channel(params["channel"])
        msg = self.find_message(ch.id, params["ts"])
        if msg.get("user") != self.bot_user_id or msg.get("bot_id") != self.bot_id:
            raise SlackError("cant_delete_message")
        ch.messages.remove(msg)
        root = next((m for m in ch.messages if m["ts"] == msg.get("thread_ts") != msg["ts"]), None)
        if root is not None and root.get("reply_count"):
            root["reply_count"] -= 1
        return {"channel": ch.id, "ts": msg["ts"]}

    def api_chat_postEphemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "channel", "user")
        self.channel(params["channel"])
        _check_message(params)
        return {"message_ts": self.next_ts()}

    # reactions -----------------------------------------------------------------
    def api_reactions_add(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "channel", "timestamp", "name")
        msg = self.find_message(self.channel(params["channel"]).id, params["timestamp"])
        users = msg.setdefault("reactions_by", {}).setdefault(params["name"], [])
        if self.bot_user_id in users:
            raise SlackError("already_reacted")
        users.append(self.bot_user_id)
        return {}

    def api_reactions_remove(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "channel", "timestamp", "name")
        msg = self.find_message(self.channel(params["channel"]).id, params["timestamp"])
        users = msg.setdefault("reactions_by", {}).get(params["name"], [])
        if self.bot_user_id not in users:
            raise SlackError("no_reaction")
        users.remove(self.bot_user_id)
        return {}

    # files -----------------------------------------------------------------------
    def api_files_info(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "file")
        if params["file"] not in self.files:
            raise SlackError("file_not_found")
        return {"file": dict(self.files[params["file"]])}

    def api_files_getUploadURLExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "filename", "length")
        fid = self.next_id("F")
        self.files[fid] = {"id": fid, "name": params["filename"], "title": params["filename"], "size": 0,
                           "mimetype": "application/octet-stream", "user": self.bot_user_id}
        return {"upload_url": f"{self.base_url}/upload/{fid}", "file_id": fid}

    def api_files_completeUploadExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "files")
        shared = []
        for item in params["files"]:
            if item.get("id") not in self.file_bytes:
                raise SlackError("file_not_found")
            info = self.files[item["id"]]
            info["title"] = item.get("title") or info["name"]
            info["mimetype"] = sniff_mimetype(self.file_bytes[item["id"]])
            self.completed.add(item["id"])  # usable in image blocks now, shared in a channel or not
            shared.append(dict(info))
        if params.get("channel_id"):
            ch = self.postable(params["channel_id"])
            self._thread_exists(ch.id, params.get("thread_ts"))
            msg = self._bot_message({"text": params.get("initial_comment") or "", "thread_ts": params.get("thread_ts")})
            msg.update(files=shared, subtype="file_share", upload=True)
            self.store_message(ch.id, msg)
        return {"files": shared}

    # assistant threads -----------------------------------------------------------
    def api_assistant_threads_setStatus(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "channel_id", "thread_ts")
        self.channel(params["channel_id"])
        if "status" not in params:
            raise SlackError("invalid_arguments")
        if self.status_error:
            raise SlackError(self.status_error)
        return {}

    def api_assistant_threads_setSuggestedPrompts(self, params: dict[str, Any]) -> dict[str, Any]:
        # docs.slack.dev: channel_id and prompts (each a title and a message, at most 4) required; thread_ts
        # optional (the channel's latest message); not_agent_app when the app has no Agent feature.
        _require(params, "channel_id", "prompts")
        self.channel(params["channel_id"])
        if not self.agent_app:
            raise SlackError("not_agent_app")
        prompts = params["prompts"]
        if not isinstance(prompts, list) or not 0 < len(prompts) <= 4 or not all(
                isinstance(p, dict) and p.get("title") and p.get("message") for p in prompts):
            raise SlackError("invalid_arguments")
        if params.get("thread_ts"):
            self._assistant_thread(params["channel_id"], params["thread_ts"])
        self.suggested_prompts[params["channel_id"]] = prompts
        return {}

    def api_assistant_threads_setTitle(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "channel_id", "thread_ts", "title")
        self._assistant_thread(self.channel(params["channel_id"]).id, params["thread_ts"])
        self.titles[(params["channel_id"], params["thread_ts"])] = params["title"]
        return {}

    def _assistant_thread(self, channel: str, thread_ts: str) -> None:
        try:
            self.find_message(channel, thread_ts)
        except SlackError:
            raise SlackError("invalid_thread_ts") from None
