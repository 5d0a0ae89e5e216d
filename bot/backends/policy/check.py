"""The one safety check every workflow spec passes before any backend compiles or sends it.

Block types must be on the allowlist (policy/allowlist.py) or in the operator's `inference.allowed_extra_blocks`;
an inner workflow must be inline and embedded, and its steps pass the same check; custom Python needs
`inference.allow_custom_python`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.backends.policy.allowlist import ALLOWED, INNER_WORKFLOW, REFUSED, canonical
from bot.backends.policy.sizes import check_sizes

if TYPE_CHECKING:
    from bot.config import InferenceConfig

ENABLE_CUSTOM_PYTHON_HINT = (
    "custom Python blocks run code from the spec and are disabled; to allow them set "
    "`inference: {allow_custom_python: true}` in the workspace config.yaml"
)
MALFORMED = "a workflow specification must be a JSON object with `version`, `inputs`, `steps`, `outputs`"
MAX_NESTING = 4  # inference's own default limit on inner workflow depth (WORKFLOWS_MAX_INNER_WORKFLOW_DEPTH)


def enable_hint(block_type: str) -> str:
    return f"an operator can enable it with `inference.allowed_extra_blocks: [{block_type}]` in config.yaml"


@dataclass(frozen=True)
class _Policy:
    allowed: frozenset[str]
    custom: frozenset[str]  # block types defined by the spec's own dynamic_blocks_definitions
    allow_custom_python: bool
    inner_unrestricted: bool  # the operator enabled inner_workflow: saved and remote children too


def extra_blocks(inference: InferenceConfig) -> frozenset[str]:
    return frozenset(canonical(t) for t in inference.allowed_extra_blocks)


def deliberately_refused(block_type: str, inference: InferenceConfig) -> bool:
    """A block refused on purpose (secrets, sinks, uploads, third-party APIs) that the operator has not enabled."""
    block = canonical(block_type)
    return block in REFUSED and block not in extra_blocks(inference)


def refusal(block_type: str) -> str:
    """The reason part of a refusal line: which block, why, and how an operator enables it."""
    block = canonical(block_type)
    why = REFUSED.get(block)
    if why is None:
        return (f"block {_short(block)!r}, which is not on this bot's allowlist: pick one from list_workflow_blocks, "
                f"or {enable_hint(_short(block))}")
    return f"block {block}, which {why}, so it is refused: {enable_hint(block)}"


def check_spec(spec: Any, inference: InferenceConfig, max_pixels: int | None = None,
               parameters: dict[str, Any] | None = None) -> list[str]:
    """Why the spec may not run here, one line per problem (empty = safe to compile). Looks into inner workflows.

    With max_pixels, block parameters that size images are checked too (policy/sizes.py), inputs from parameters.
    """
    if not isinstance(spec, dict):
        return [MALFORMED]
    problems: list[str] = []
    # A custom block named like a core one would not make that core block's step custom.
    custom = frozenset(t for t in _custom_block_types(spec) if canonical(t) not in ALLOWED | REFUSED.keys())
    if not inference.allow_custom_python:
        _find_custom_python(spec, "specification", problems)
    extras = extra_blocks(inference)
    policy = _Policy(ALLOWED | extras, custom, inference.allow_custom_python, INNER_WORKFLOW in extras)
    _check_steps(spec, "", policy, 0, problems)
    if max_pixels is not None:
        problems += check_sizes(spec, max_pixels, parameters)
    return problems


def _short(text: Any) -> str:
    text = str(text)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_steps(spec: dict[str, Any], prefix: str, policy: _Policy, depth: int, problems: list[str]) -> None:
    steps = spec.get("steps")
    if not isinstance(steps, list):
        return  # the compiler says what is wrong with the shape
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        name = prefix + _short(step.get("name", f"#{i + 1}"))
        kind = step.get("type")
        if not isinstance(kind, str):
            problems.append(f"step {name!r} names no block `type`: pick one from list_workflow_blocks")
            continue
        if kind in policy.custom:
            if not policy.allow_custom_python:
                continue  # the definition is reported once, with how to enable it
        elif canonical(kind) not in policy.allowed:
            problems.append(f"step {name!r} uses {refusal(kind)}")
        elif canonical(kind) == INNER_WORKFLOW:
            _check_inner(step, name, policy, depth, problems)


def _check_inner(step: dict[str, Any], name: str, policy: _Policy, depth: int, problems: list[str]) -> None:
    """An inner workflow runs its child's steps: the child must be inline (so it can be checked) and embedded."""
    definition = step.get("workflow_definition")
    if not policy.inner_unrestricted:
        if step.get("execution_mode", "embedded") != "embedded":
            problems.append(f"step {name!r} dispatches its inner workflow to another server, so it is refused: use "
                            f"execution_mode embedded, or {enable_hint(INNER_WORKFLOW)}")
            return
        if step.get("workflow_workspace_id") or step.get("workflow_id") or not isinstance(definition, dict):
            problems.append(f"step {name!r} loads a saved inner workflow this bot cannot check: put the child inline "
                            f"as workflow_definition, or {enable_hint(INNER_WORKFLOW)}")
            return
    if isinstance(definition, dict):
        if depth + 1 > MAX_NESTING:
            problems.append(f"step {name!r} nests inner workflows deeper than {MAX_NESTING}: flatten the workflow")
            return
        _check_steps(definition, f"{name}/", policy, depth + 1, problems)


def _declared_types(definitions: Any) -> list[str]:
    """The block types a dynamic_blocks_definitions list declares ("?" where one is unreadable)."""
    if not isinstance(definitions, list):
        return ["?"] if definitions else []
    manifests = [d.get("manifest") if isinstance(d, dict) else None for d in definitions]
    return [str(m.get("block_type", "?")) if isinstance(m, dict) else "?" for m in manifests]


def _custom_block_types(node: Any) -> frozenset[str]:
    """Block types declared by dynamic_blocks_definitions anywhere in the spec (inner workflows too)."""
    found: set[str] = set()
    todo = [node]
    while todo:
        item = todo.pop()
        if isinstance(item, list):
            todo.extend(item)
        elif isinstance(item, dict):
            found.update(t for t in _declared_types(item.get("dynamic_blocks_definitions")) if t != "?")
            todo.extend(item.values())
    return frozenset(found)


def _find_custom_python(node: Any, where: str, problems: list[str]) -> None:
    if isinstance(node, list):
        for i, item in enumerate(node):
            _find_custom_python(item, f"{where}[{i}]", problems)
        return
    if not isinstance(node, dict):
        return
    dynamic = node.get("dynamic_blocks_definitions")
    if dynamic:
        names = [_short(t) for t in _declared_types(dynamic)]
        problems.append(f"{where}: defines custom Python block(s) {', '.join(names) or '?'}: {ENABLE_CUSTOM_PYTHON_HINT}")
    for key, value in node.items():
        if key != "dynamic_blocks_definitions":
            _find_custom_python(value, f"{where}.{key}", problems)
