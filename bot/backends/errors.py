"""Turn inference / workflow exceptions into one-line BackendErrors a user (or the model) can act on."""

from __future__ import annotations

import re
from typing import Any

from bot.backends.base import BackendError

OFFLINE_HINT = "check network / ROBOFLOW_API_KEY, or use builtin/faces, builtin/people or builtin/motion"


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[Any] = [exc]
    while todo:
        e = todo.pop(0)
        if not isinstance(e, BaseException) or any(e is s for s in seen):
            continue
        seen.append(e)
        todo.extend([getattr(e, "inner_error", None), e.__cause__, e.__context__])
    return seen


def _names(exc: BaseException) -> set[str]:
    return {type(e).__name__ for e in _chain(exc)} | {c.__name__ for e in _chain(exc) for c in type(e).__mro__}


def public_message(exc: BaseException) -> str:
    msg = getattr(exc, "public_message", None) or str(exc) or type(exc).__name__
    return " ".join(str(msg).split())[:2000]


_UNKNOWN_TAG = re.compile(r"Input tag '([^']+)' found using 'type' does not match any of the expected tags")


def shorten_problem(text: str) -> str:
    """One compile problem, short enough for a prompt (the engine lists all ~400 block types on a bad `type`)."""
    m = _UNKNOWN_TAG.search(text)
    if m:
        prefix = text[: m.start()].strip()
        return f"{prefix} unknown block type {m.group(1)!r}: pick one from list_workflow_blocks".strip()
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def problems_from_block_errors(message: str, blocks_errors: list[Any] | None) -> list[str]:
    """Problems from a compile error's message and its per-block errors (objects or the server's dicts)."""
    problems = []
    for be in blocks_errors or []:
        get = be.get if isinstance(be, dict) else lambda k, _be=be: getattr(_be, k, None)
        where = get("block_id") or get("block_type") or "workflow"
        prop = get("property_name")
        details = get("property_details") or message
        problems.append(shorten_problem(f"step {where}{'.' + prop if prop else ''}: {details}"))
    return problems or [shorten_problem(message)]


def workflow_problems(exc: BaseException) -> list[str]:
    """Readable problems of a spec that failed to compile (one per block error when the engine lists them)."""
    return problems_from_block_errors(public_message(exc), getattr(exc, "blocks_errors", None))


def translate(exc: BaseException, what: str) -> BackendError:
    """A BackendError for exc raised while running `what` (e.g. "model coco/3" or "the workflow")."""
    if isinstance(exc, BackendError):
        return exc
    names = _names(exc)
    if names & {"RoboflowAPIConnectionError", "RoboflowAPITimeoutError", "ConnectionError", "Timeout"}:
        return BackendError(f"could not reach Roboflow to load {what}: {OFFLINE_HINT}")
    if names & {"MissingApiKeyError", "RoboflowAPINotAuthorizedError", "RoboflowAPIForbiddenError"}:
        return BackendError(f"Roboflow refused access to {what}: set ROBOFLOW_API_KEY to a key of that workspace")
    if "RoboflowAPINotNotFoundError" in names or "InvalidModelIDError" in names:
        return BackendError(f"{what} was not found on Roboflow: check the id (workspace/project/version)")
    if "WorkflowCompilerError" in names:
        return BackendError(f"the workflow is invalid: {'; '.join(workflow_problems(exc))[:600]}")
    return BackendError(f"{what} failed: {shorten_problem(public_message(exc))}")
