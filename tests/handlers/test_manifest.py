"""manifest.yml asks for exactly the scopes and events the handlers use, with socket mode and /vision."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

# Web API method (as called on the SDK client) -> the bot scope Slack requires for it.
METHOD_SCOPES = {
    "chat_postMessage": "chat:write",
    "chat_update": "chat:write",  # alerts updated in place by their summary
    "chat_postEphemeral": "chat:write",  # a file's final totals to the person whose `/vision start` ran it
    "chat_delete": "chat:write",  # the Stop line of a running turn, removed when the turn ends
    "chat_startStream": "chat:write",  # streamed answers (handlers/answers/stream.py), docs.slack.dev: chat:write
    "chat_appendStream": "chat:write",
    "chat_stopStream": "chat:write",
    "assistant_threads_setStatus": "chat:write",  # accepted with chat:write since 2026-03
    "assistant_threads_setSuggestedPrompts": "assistant:write",
    "assistant_threads_setTitle": "assistant:write",  # and the app must have the Agent feature
    "reactions_add": "reactions:write",
    "reactions_remove": "reactions:write",
    "files_upload_v2": "files:write",
    "files_info": "files:read",
    "users_info": "users:read",  # display names, so the model reads who wrote what (handlers/transport/people.py)
    "conversations_replies": "channels:history",  # a thread's earlier messages (groups:/im:history elsewhere)
    "conversations_open": "im:write",  # a watch's answer to its asker's DM when the channel refuses the post
    "auth_test": None,  # no scope
    "chat_getPermalink": None,  # a digest's links to the alert messages: docs.slack.dev, no scope required
    "apps_connections_open": None,  # the app-level token's connections:write, not a bot scope
    "is_connected": None,  # the socket client, not a Web API method
    "send_socket_mode_response": None,  # an ack over the socket, not a Web API method
    "send_dict": None,  # a POST to a response_url (respond()), no scope
}
EVENT_SCOPES = {
    "app_mention": "app_mentions:read",
    "message.channels": "channels:history",
    "message.groups": "groups:history",
    "message.im": "im:history",
    "app_home_opened": None,  # no scope: the agent's Messages tab opened (suggested prompts)
}


def manifest() -> dict:
    return yaml.safe_load((ROOT / "manifest.yml").read_text())


def methods_called() -> set[str]:
    src = "\n".join(p.read_text() for p in (ROOT / "handlers").rglob("*.py"))
    direct = {m.replace(".", "_") for m in re.findall(r"api_call\(\s*\"([\w.]+)\"", src)}  # methods by name
    called = set(re.findall(r"client\.([a-z]+_[A-Za-z0-9_]+)\(", src)) | set(re.findall(r"\(client\.(reactions_\w+)", src))
    return (called - {"api_call"}) | direct


def test_every_called_method_has_a_known_scope() -> None:
    unknown = methods_called() - set(METHOD_SCOPES)
    assert not unknown, f"add these methods' scopes to METHOD_SCOPES and manifest.yml: {sorted(unknown)}"


def test_bot_scopes_are_exactly_what_the_code_uses() -> None:
    m = manifest()
    events = set(m["settings"]["event_subscriptions"]["bot_events"])
    needed = ({METHOD_SCOPES[x] for x in methods_called()} | {EVENT_SCOPES[e] for e in events}) - {None}
    needed |= {"files:read"}  # url_private downloads (handlers/transport/files.py) need it, with no SDK method call
    needed |= {"commands"} if m["features"]["slash_commands"] else set()
    assert set(m["oauth_config"]["scopes"]["bot"]) == needed


def test_socket_mode_events_command_and_interactivity() -> None:
    m = manifest()
    assert m["settings"]["socket_mode_enabled"] is True and m["settings"]["interactivity"]["is_enabled"] is True
    assert set(m["settings"]["event_subscriptions"]["bot_events"]) == set(EVENT_SCOPES)
    assert [c["command"] for c in m["features"]["slash_commands"]] == ["/vision"]
    assert "url" not in m["features"]["slash_commands"][0]  # socket mode: no request URL
    assert m["features"]["app_home"]["messages_tab_enabled"] is True  # people can DM the bot
    assert m["features"]["agent_view"]["agent_description"]  # Slack's Agent messaging experience
    assert len(m["display_information"]["long_description"]) >= 175  # Slack rejects shorter ones


def test_procfile_runs_the_bot() -> None:
    assert (ROOT / "Procfile").read_text().strip() == "worker: vision-agent serve"
