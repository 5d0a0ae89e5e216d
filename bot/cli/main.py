"""The `vision-agent` command: init, chat (REPL and one-shot), run, serve, mcp, api, inference-server."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import warnings
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from bot import process
from bot.media.redaction import install_log_redaction
from workspace import Workspace, WorkspaceError

# Settings, the runtime, the REPL and the inference server are imported by the command that needs them: they load
# pydantic, the LLM SDK or `inference` (up to seconds), and `vision-agent --help` must answer at once.
if TYPE_CHECKING:  # annotations only: never loaded at run time
    from bot.config import Settings

EXIT_USAGE = 2  # bad settings, missing key, bad arguments: the user can fix it
STANDBY_HELP = ("if another long-running vision-agent holds this workspace, wait and take over when it exits "
                "(VISION_AGENT_STANDBY=1); without it this one exits at once saying which pid holds it")


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

    run = sub.add_parser("run", help="what `make run` does: Slack bot if both Slack tokens are set, else the chat REPL")
    serve = sub.add_parser("serve", help="run the Slack bot (socket mode; needs SLACK_BOT_TOKEN and SLACK_APP_TOKEN)")
    serve.add_argument("--mcp-port", type=int, default=None, metavar="N",
                       help="also serve MCP over HTTP on port N (mcp.host; needs VISION_AGENT_MCP_TOKEN), sharing the bot's pipelines")

    mcp = sub.add_parser("mcp", help="serve the agent's tools to MCP clients (Claude Desktop/Code) over stdio, or --http")
    mcp.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio (needs VISION_AGENT_MCP_TOKEN)")
    mcp.add_argument("--host", default=None, help="address to bind with --http (default mcp.host, 127.0.0.1)")
    mcp.add_argument("--port", type=int, default=None, help="port with --http (default mcp.port, 8765)")

    api = sub.add_parser("api", help="serve the REST API under /api without Slack (needs VISION_AGENT_API_TOKEN)")
    api.add_argument("--host", default=None, help="address to bind (default api.host, 127.0.0.1)")
    api.add_argument("--port", type=int, default=None, help="port (default api.port, else 8081)")

    for long_running in (chat, run, serve, mcp, api):
        long_running.add_argument("--standby", action="store_true", help=STANDBY_HELP)

    server = sub.add_parser("inference-server", help="start a local Roboflow inference server (HTTP backend)")
    server.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    server.add_argument("--port", type=int, default=9001, help="port (default 9001)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `vision-agent` console script; returns the exit code.

    Run as the command itself (argv None), a process ends once its last line is out (bot/process.py): Ctrl-C or
    SIGTERM end it within seconds, not after the interpreter's teardown. Called with argv (tests), it returns.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    _setup_logging(args.verbose, quiet_libraries=args.command != "inference-server")
    handlers = {"init": cmd_init, "chat": cmd_chat, "run": cmd_run, "serve": cmd_serve,
                "inference-server": cmd_inference_server, "mcp": cmd_mcp, "api": cmd_api}
    if argv is None and args.command != "inference-server":  # the server is inference's own process: left as it is
        process.exit_hard = True
        process.keep_terminal()
        _line_by_line()
        # Until a command's event loop takes the signals over: SIGTERM stops start-up the way Ctrl-C does.
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        code = handlers[args.command](args)
    except KeyboardInterrupt as exc:
        why = exc.args[0] if exc.args else "Ctrl-C"
        print(file=sys.stderr)
        process.say(f"stopped ({why}) while starting.")
        code = 130 if why == "Ctrl-C" else 143
    except Exception as exc:
        if isinstance(exc, WorkspaceError):
            return _fail(str(exc), 1)
        raise
    if process.exit_hard:
        process.end_now(code)
    return code


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(process.signal_name(signum))


def _line_by_line() -> None:
    """stdout written line by line when it is a pipe or a file too (a log the console is sent to shows each line as
    it happens, not when a buffer fills or the process ends); stderr is already."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and not sys.stdout.isatty():
        try:
            reconfigure(line_buffering=True)
        except (ValueError, OSError):  # a replaced or detached stdout: leave it
            pass


_OURS = ("bot", "tools", "workspace", "handlers")
# Read by the libraries when they are imported (lazily, after this): inference logs a failed step with a
# multi-screen rich traceback on stdout (into `chat -m` output) through its own handlers, and transformers/tqdm
# draw "Loading weights" bars into the REPL, and OpenCV's FFmpeg prints a camera's dropped stream ("[http @ 0x…]
# Stream ends prematurely at …") and OpenCV its "[ WARN:0@…]" lines between the REPL's. The bot already turns those
# failures into one line (the camera's faults say a stream dropped, and when it came back); -v shows them.
QUIET_LIBRARIES = {"LOG_LEVEL": "CRITICAL", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1",
                   "TRANSFORMERS_VERBOSITY": "error", "OPENCV_FFMPEG_LOGLEVEL": "-8", "OPENCV_LOG_LEVEL": "ERROR"}


def _setup_logging(verbose: int, quiet_libraries: bool = True) -> None:
    """Our warnings always; third-party warnings, tracebacks and progress bars (inference, torch) only with -v.

    The inference server keeps inference's own error logging: there it is the only account of a failed request.
    """
    ours = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=logging.DEBUG if verbose >= 2 else logging.ERROR,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    install_log_redaction()  # every command, `serve` included: no camera password or token reaches a log line
    for name in _OURS:
        logging.getLogger(name).setLevel(ours)
    if verbose == 0:
        warnings.simplefilter("ignore")  # library deprecation notices are nothing a user can act on
        for name, value in QUIET_LIBRARIES.items() if quiet_libraries else ():
            os.environ.setdefault(name, value)  # an operator's own LOG_LEVEL still wins


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"vision-agent: {message}", file=sys.stderr)
    return code


def load_settings_or_none(args: argparse.Namespace | None = None) -> tuple[Settings | None, int]:
    """(settings, 0), or (None, exit code) after printing the one-line SettingsError; `--standby` set on them."""
    from bot.config import SettingsError, load_settings  # start-up cost (see the module top)

    try:
        settings = load_settings()
    except SettingsError as exc:
        return None, _fail(str(exc))
    if getattr(args, "standby", False):
        settings = settings.model_copy(update={"storage": settings.storage.model_copy(update={"standby": True})})
    return settings, 0


def cmd_init(args: argparse.Namespace) -> int:
    settings, rc = load_settings_or_none()
    if settings is None:
        return rc
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
    settings, rc = load_settings_or_none(args)
    if settings is None:
        return rc
    if args.message is not None:
        from bot.cli.oneshot import one_shot  # start-up cost (see the module top)

        text = sys.stdin.read() if args.message == "-" else args.message
        return one_shot(settings, text, args.image, args.session or "default")
    from bot.cli.repl import interactive  # start-up cost (see the module top)

    return interactive(settings, args.session or "default", args.image)


def _slack_ready(settings: Settings) -> bool:
    return settings.slack.bot_token is not None and settings.slack.app_token is not None


def cmd_run(args: argparse.Namespace) -> int:
    settings, rc = load_settings_or_none(args)
    if settings is None:
        return rc
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
    from bot.cli import repl  # start-up cost (see the module top)

    return repl.interactive(settings, "default")


def cmd_serve(args: argparse.Namespace) -> int:
    settings, rc = load_settings_or_none(args)
    if settings is None:
        return rc
    port = args.mcp_port or settings.mcp.serve_port
    if port is not None:
        if not 0 < port < 65536:
            return _fail(f"--mcp-port must be between 1 and 65535, got {port}")
        from bot.mcp.serve import http_refusal  # the mcp SDK: only when MCP is asked for

        if why := http_refusal(settings, settings.mcp.host):
            return _fail(why)
        settings = settings.model_copy(update={"mcp": settings.mcp.model_copy(update={"serve_port": port})})
    return _serve(settings)


ADAPTERS = "vision_agent.adapters"  # entry-point group: adapters register themselves (pyproject.toml)


def _serve(settings: Settings) -> int:
    # The core never imports an adapter (docs/architecture.md, .importlinter): the Slack adapter is found through
    # the entry point it declares, so `bot` stays free of slack_bolt and a build without it says so plainly.
    found = entry_points(group=ADAPTERS, name="slack")
    if not found:
        return _fail("the Slack adapter is not installed in this environment (entry point "
                     f"{ADAPTERS}:slack); reinstall with `make run`, or use `vision-agent chat`", 1)
    serve = next(iter(found)).load()
    return int(serve(settings))


def cmd_mcp(args: argparse.Namespace) -> int:
    if args.port is not None and not 0 < args.port < 65536:
        return _fail(f"--port must be between 1 and 65535, got {args.port}")
    settings, rc = load_settings_or_none(args)
    if settings is None:
        return rc
    from bot.mcp.serve import run_mcp  # imports the mcp SDK, uvicorn and starlette: only for this command

    return run_mcp(settings, args.http, args.host, args.port)


def cmd_api(args: argparse.Namespace) -> int:
    if args.port is not None and not 0 <= args.port < 65536:
        return _fail(f"--port must be between 0 and 65535, got {args.port}")
    settings, rc = load_settings_or_none(args)
    if settings is None:
        return rc
    from bot.api.run import run_api  # builds the runtime (pydantic, the LLM SDK): only for this command

    return run_api(settings, args.host, args.port)


def cmd_inference_server(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        return _fail(f"--port must be between 1 and 65535, got {args.port}")
    from bot.backends.http.server import main as server_main  # imports `inference`: seconds, only for this command

    return server_main(args.host, args.port)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
