"""Turn inference / workflow exceptions into one-line BackendErrors a user (or the model) can act on."""

from __future__ import annotations

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
    return " ".join(str(msg).split())[:400]


def workflow_problems(exc: BaseException) -> list[str]:
    """Readable problems of a spec that failed to compile (one per block error when the engine lists them)."""
    problems = []
    for be in getattr(exc, "blocks_errors", None) or []:
        where = getattr(be, "block_id", None) or getattr(be, "block_type", None) or "workflow"
        prop = getattr(be, "property_name", None)
        details = getattr(be, "property_details", None) or ""
        problems.append(f"{where}{'.' + prop if prop else ''}: {details}".strip())
    return problems or [public_message(exc)]


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
    return BackendError(f"{what} failed: {public_message(exc)}")
