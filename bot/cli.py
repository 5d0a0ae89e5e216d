"""The `vision-agent` command: init, chat (REPL and one-shot), run, serve, inference-server."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

# Nothing heavy is imported at module level: `vision-agent --help` must answer in well under a second.

EXIT_USAGE = 2  # bad settings, missing key, bad arguments: the user can fix it


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vision-agent",
        description="Watch cameras and analyse images by chatting with Claude, powered by Roboflow Inference.",
        epilog="Settings come from environment variables and WORKSPACE/config.yaml (see README.md).",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("init", help="create the workspace (AGENTS.md, CAMERAS.md, skills, config.yaml, ...)")

    chat = sub.add_parser("chat", help="chat in the terminal (REPL), or one message with -m")
    chat.add_argument("-m", "--message", metavar="TEXT", help="send one message, print the reply, exit ('-' reads stdin)")
    chat.add_argument("--image", metavar="PATH", action="append", default=[], help="attach an image (repeatable; in the REPL: to the first message)")
    chat.add_argument("--session", metavar="NAME", default=None, help="session to continue (default: 'default')")

    sub.add_parser("run", help="what `make run` does: Slack bot if both Slack tokens are set, else the chat REPL")
    sub.add_parser("serve", help="run the Slack bot (socket mode; needs SLACK_BOT_TOKEN and SLACK_APP_TOKEN)")

    server = sub.add_parser("inference-server", help="start a local Roboflow inference server (HTTP backend)")
    server.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    server.add_argument("--port", type=int, default=9001, help="port (default 9001)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `vision-agent` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    _setup_logging(args.verbose)
    handlers = {"init": cmd_init, "chat": cmd_chat, "run": cmd_run, "serve": cmd_serve,
                "inference-server": cmd_inference_server}
    try:
        return handlers[args.command](args)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except Exception as exc:
        from workspace import WorkspaceError

        if isinstance(exc, WorkspaceError):
            return _fail(str(exc), 1)
        raise


_OURS = ("bot", "tools", "workspace", "handlers")


def _setup_logging(verbose: int) -> None:
    """Our warnings always; third-party warnings and deprecation chatter (inference, torch) only with -v."""
    ours = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=logging.DEBUG if verbose >= 2 else logging.ERROR,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for name in _OURS:
        logging.getLogger(name).setLevel(ours)
    if verbose == 0:
        import os
        import warnings

        warnings.simplefilter("ignore")  # library deprecation notices are nothing a user can act on
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"vision-agent: {message}", file=sys.stderr)
    return code


def load_settings_or_none() -> tuple[Any, int]:
    """(settings, 0), or (None, exit code) after printing the one-line SettingsError."""
    from bot.config import SettingsError, load_settings

    try:
        return load_settings(), 0
    except SettingsError as exc:
        return None, _fail(str(exc))


def cmd_init(args: argparse.Namespace) -> int:
    settings, rc = load_settings_or_none()
    if settings is None:
        return rc
    from workspace import Workspace

    ws = Workspace(settings.workspace)
    created = ws.init(restore=True)
    if not created:
        print(f"Workspace {ws.root} is complete; nothing to create (your edits are kept).")
        return 0
    print(f"Workspace {ws.root}:")
    for path in (p for p in created if p != ws.root):
        print(f"  created {path.relative_to(ws.root)}{'/' if path.is_dir() else ''}")
    print("Next: list your cameras in CAMERAS.md, describe the site in AGENTS.md, then `vision-agent chat`.")
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    settings, rc = load_settings_or_none()
    if settings is None:
        return rc
    if args.message is not None:
        from bot.oneshot import one_shot

        text = sys.stdin.read() if args.message == "-" else args.message
        return one_shot(settings, text, args.image, args.session or "default")
    from bot.repl import interactive

    return interactive(settings, args.session or "default", args.image)


def _slack_ready(settings: Any) -> bool:
    return settings.slack.bot_token is not None and settings.slack.app_token is not None


def cmd_run(args: argparse.Namespace) -> int:
    settings, rc = load_settings_or_none()
    if settings is None:
        return rc
    from workspace import Workspace

    ws = Workspace(settings.workspace)
    if not ws.exists():
        ws.init()
        print(f"Created the workspace at {ws.root} (edit CAMERAS.md and AGENTS.md there).", file=sys.stderr)
    if _slack_ready(settings):
        return _serve(settings)
    if settings.slack.bot_token or settings.slack.app_token:
        missing = "SLACK_APP_TOKEN" if settings.slack.bot_token else "SLACK_BOT_TOKEN"
        print(f"{missing} is not set, so the Slack bot cannot start; starting the terminal chat instead.",
              file=sys.stderr)
    from bot import repl

    return repl.interactive(settings, "default")


def cmd_serve(args: argparse.Namespace) -> int:
    settings, rc = load_settings_or_none()
    if settings is None:
        return rc
    return _serve(settings)


def _serve(settings: Any) -> int:
    if not _module_exists("handlers.app"):
        return _fail("the Slack adapter (handlers.app) is not part of this build; use `vision-agent chat`", 1)
    from handlers.app import serve

    return serve(settings)


def cmd_inference_server(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        return _fail(f"--port must be between 1 and 65535, got {args.port}")
    if not _module_exists("bot.backends.server"):
        return _fail("the local inference server (bot.backends.server) is not part of this build", 1)
    from bot.backends.server import main as server_main

    return server_main(args.host, args.port)


def _module_exists(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
