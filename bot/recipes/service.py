"""RecipeService: record turns, save the last one as a recipe, replay it (no model), export it; what tools and
`/vision recipe` share."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolContext, ToolResult
from bot.agent.turn_events import FinishedTurn
from bot.events import EventType
from bot.media.cameras import camera_name_for, find_camera, named_zones
from bot.media.redaction import redact
from bot.objects.caps import cap_refusal
from bot.objects.owner import Owner, change_refusal
from bot.objects.recipe import DESCRIPTION_MAX, RecipeSpec
from bot.objects.refusal import parse
from bot.objects.text import one_line
from bot.pipelines.naming import default_name
from bot.recipes import model
from bot.recipes.export import script_for
from bot.recipes.replay import FIRST_RESULT_TIMEOUT, replay
from bot.recipes.trajectories import TrajectoryLog, scrub
from bot.recipes.validators import why_invalid
from bot.rights import CONTROLLED, Requester, audience
from bot.services import Services
from bot.storage import records
from workspace.atomic import write_atomic
from workspace.chunking import SITE
from workspace.recipes import check_name, visible

if TYPE_CHECKING:
    from bot.config import Settings
    from workspace import Workspace

RECIPE_TOOLS = ("save_recipe", "run_recipe", "export_script")  # never recorded as a setup themselves
NOTHING_YET = ("Nothing to save yet: no turn in this conversation has set something up (a pipeline started) and "
               "ended well. Set it up first, then save it.")
SECRET = ("The setup's source holds a password or token; add the camera to CAMERAS.md, set it up by the camera's "
          "name, then save again.")


def _calls(steps: Sequence[tuple[Any, ToolResult]]) -> list[dict[str, Any]]:
    """(ToolCall, ToolResult) pairs as the trajectory stores them."""
    return [{"tool": c.name, "input": c.input, "result": r.text, "is_error": r.is_error} for c, r in steps]


def _has_secret(value: Any) -> bool:
    text = json.dumps(value, ensure_ascii=False)
    return redact(text) != text or "***" in text


class RecipeService:
    """Recipes of one workspace, replayed through the same tool registry the agent uses.

    It hears of finished turns through the agent's turn-end hook (`on_turn_end`); a replay runs with the services
    of whoever asks for it (a tool's or a command's), like any tool call.
    """

    def __init__(self, workspace: Workspace, settings: Settings, registry: ToolRegistry,
                 clock: Callable[[], datetime] = datetime.now,
                 first_result_timeout: float = FIRST_RESULT_TIMEOUT) -> None:
        self.workspace, self.settings, self.registry = workspace, settings, registry
        self.files = workspace.recipes
        self.trajectories = TrajectoryLog(workspace.sessions_dir / "trajectories")
        self._clock, self.timeout = clock, first_result_timeout
        self._set_aside()

    def _set_aside(self) -> None:
        """Recipe files of another shape (not JSON, no steps list, no metadata) go beside the folder's others, kept
        whole in `recipes.set-aside.jsonl` with one note for the operator, instead of failing every listing."""
        bad: list[tuple[Path, str]] = []
        for path in sorted(self.files.folder.glob("*.json")) if self.files.folder.is_dir() else []:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if not _recipe_shaped(data):
                    raise ValueError("not a recipe: it needs a list of steps (each a tool and its input), a "
                                     "metadata object and, if any, a parameters object")
            except (OSError, ValueError, RecursionError) as exc:  # nested past Python's limit: damaged too
                bad.append((path, " ".join(str(exc).split())[:200]))
        if bad and records.keep(self.files.folder / "recipes", "recipes",
                                [({"file": p.name, "text": _read(p)}, why) for p, why in bad]):
            for path, _ in bad:  # kept first: nothing is lost if the set-aside file cannot be written
                path.unlink(missing_ok=True)

    # record -------------------------------------------------------------
    def on_turn_end(self, turn: FinishedTurn) -> None:
        """The agent's turn-end hook: a conversation turn that used tools and ended with a reply may be a setup."""
        if turn.heartbeat or not turn.steps or turn.final.type is EventType.ERROR:
            return
        self.record(turn.session_key, turn.requester, turn.steps, turn.final.data.get("text", ""))

    def record(self, key: str, who: Requester, steps: Sequence[tuple[Any, ToolResult]], answer: str) -> bool:
        """Keep a turn that changed something and ended with a reply; True when it was kept."""
        calls = _calls(steps)
        if not any(self._changed(c) for c in calls):
            return False
        self.trajectories.record(key, who.user_id, who.channel_id, calls, answer)
        return True

    def _changed(self, call: dict[str, Any]) -> bool:
        tool = self.registry.get(call["tool"])
        return bool(tool and tool.changes == CONTROLLED and not call["is_error"] and call["tool"] not in RECIPE_TOOLS)

    # save ---------------------------------------------------------------
    def save(self, name: str, description: str, session_key: str | None, who: Requester,
             current: Sequence[tuple[Any, ToolResult]] | None = None) -> str:
        """Save the session's last recorded setup (Slack slash commands: the channel's) as recipes/NAME.json.

        current: the calls of the turn asking to save, when that same turn set something up ("count the door and
        save it as door-count"); it has not ended yet, so it is not in the log.
        """
        spec = parse(RecipeSpec, {"name": name, "description": description})  # the one model, as every door
        name = spec.name
        old = self.files.load(name)
        owner = Owner.of(who)
        if old is not None and (why := change_refusal(self.settings, _owner(old), who, f"recipe {name!r}")):
            raise ValueError(why)
        if old is None and (why := cap_refusal(self.settings, "recipe", self._owners(), owner.user)):
            raise ValueError(why)
        traj = self._latest(session_key, who, current or [])
        if traj is None:
            raise ValueError(NOTHING_YET)
        steps, params = model.parameterize(traj["calls"])
        if not steps:
            raise ValueError(f"The last setup ({', '.join(c['tool'] for c in traj['calls'])}) has no step a recipe "
                             f"can replay (replayed: {', '.join(model.REPLAYABLE)}).")
        cameras = self._camera_names(params)
        if _has_secret([steps, params]):
            raise ValueError(SECRET)
        answer = str(traj.get("answer") or "")
        # With no description the model's answer stands in for it: one line, bounded, like a person's (it is shown
        # to every later turn that may see the recipe, quoted as data)
        said = spec.description or one_line(answer[:DESCRIPTION_MAX * 2], DESCRIPTION_MAX * 2)[:DESCRIPTION_MAX]
        keeper = owner if old is None or _owner(old).user in (None, who.user_id) else _owner(old)
        recipe = model.new_recipe(name, said, steps, params,
                                  created_by="operator" if keeper.user is None else keeper.user,
                                  session=str(traj.get("session") or ""), answer=redact(answer)[:1000],
                                  now=self._clock())
        # a member's recipe is seen where they saved it; the operator's setups are the site's, everyone's to run
        recipe["metadata"].update(camera_params=cameras, owner=keeper.model_dump(),
                                  audience=keeper.audience if keeper.member else SITE)
        replaced = old is not None
        self.files.save(name, recipe)
        skipped = sorted({c["tool"] for c in traj["calls"] if self._changed(c) and c["tool"] not in model.REPLAYABLE})
        note = f" Not replayed: {', '.join(skipped)}." if skipped else ""
        shown = " ".join(f"{k}={v}" for k, v in params.items() if not isinstance(v, (dict, list)))
        return (f"{'Replaced' if replaced else 'Saved'} recipe *{name}* ({len(steps)} step{'s' * (len(steps) != 1)}; "
                f"defaults: {shown}).{note} Run it with `/vision recipe run {name} [key=value …]`.")

    def _latest(self, session_key: str | None, who: Requester,
                current: Sequence[tuple[Any, ToolResult]]) -> dict | None:
        calls = _calls(current)
        if any(self._changed(c) for c in calls):
            return {"calls": scrub(calls), "answer": "", "session": session_key}
        if session_key:
            return self.trajectories.last(session_key)
        return self.trajectories.last_in_channel(who.channel_id) if who.channel_id else None

    def _camera_names(self, params: dict[str, Any]) -> list[str]:
        """Sources become camera names (never URLs); a URL with a secret and no camera is refused."""
        found = []
        for key in [k for k in params if k.rstrip("_0123456789") == "source"]:
            value = str(params[key])
            url = find_camera(self.workspace, self.settings, value)
            if url is not None:
                params[key] = camera_name_for(self.workspace, self.settings, url) or value
                found.append(key)
            elif _has_secret(value):
                raise ValueError(SECRET)
        return found

    # run ----------------------------------------------------------------
    async def run(self, name: str, raw: dict[str, str], who: Requester, services: Services,
                  session_key: str = "") -> tuple[bool, str]:
        """Replay NAME with `key=value` overrides, no model; (ok, one message) and the metadata updated.

        services: the asker's (the tool's or command's context): the replayed tools run with them."""
        recipe = self.load(name, who)
        meta = recipe["metadata"]
        reason = meta.get("invalid") or why_invalid(recipe, self._clock())
        if reason:
            return False, (f"Recipe *{recipe['name']}* is invalid: {reason}. Set it up again and save it under the "
                           "same name to replace it (`/vision recipe save NAME`).")
        values = dict(recipe["parameters"])
        for key, text in raw.items():
            if key not in values:
                takes = ", ".join(values) or "none"
                raise ValueError(f"unknown parameter {key}=; recipe {recipe['name']} takes {takes}.")
            values[key] = model.coerce(key, text, values[key])
        self._free_names(recipe, values, set(raw), services, Owner.of(who).user)
        ctx = ToolContext(self.settings, session_key, [], services, who)
        outcome = await replay(recipe, values, self.registry, ctx, self.timeout)
        # Read again: another replay of this recipe may have ended meanwhile (no await from here to the save).
        recipe = self.load(name)
        meta = recipe["metadata"]
        model.record_run(recipe, self._clock(), outcome.failed_step, redact(outcome.error)[:300])
        meta["invalid"] = why_invalid(recipe, self._clock())
        self.files.save(recipe["name"], recipe)
        head = f"Recipe *{recipe['name']}* {'replayed' if outcome.ok else 'failed'} (no model calls)"
        tail = f"\nThe recipe is now invalid: {meta['invalid']}." if meta["invalid"] else ""
        return outcome.ok, head + ":\n" + "\n".join(redact(line) for line in outcome.lines) + tail

    def _free_names(self, recipe: dict[str, Any], values: dict[str, Any], given: set[str], services: Services,
                    owner: str | None = None) -> None:
        """Pipelines not named by the user are named like `/vision start` names them: after the new source, or the
        recorded name while that one is not running (`door-2` while `door` still counts)."""
        pipelines = services.pipelines
        for step in recipe["steps"]:
            name_key, source_key = (model.hole(step["input"].get(k)) for k in ("name", "source"))
            if pipelines is None or name_key is None or name_key in given:
                continue
            source = str(values.get(source_key) or "") if source_key else ""
            camera = source if source_key in given and find_camera(self.workspace, self.settings, source) else None
            base = camera or (None if source_key in given else str(values[name_key]))
            values[name_key] = default_name(source, base, pipelines, owner)

    # read ---------------------------------------------------------------
    def load(self, name: str, who: Requester | None = None) -> dict[str, Any]:
        """The recipe; LookupError when there is none by that name, or `who` may not see it (one saved in a DM or a
        private channel is seen there only, as its listing in the turn context is)."""
        recipe = self.files.load(check_name(name))
        if recipe is None or not isinstance(recipe.get("steps"), list) or not isinstance(recipe.get("metadata"), dict) \
                or (who is not None and not visible(audience(who), recipe)):
            raise LookupError(f"No recipe {name!r}; `/vision recipes` lists them.")
        recipe.setdefault("parameters", {})
        recipe["name"] = check_name(name)
        for step in recipe["steps"]:  # saved when the tool's arguments had other names: read by their one names
            if isinstance(step, dict) and isinstance(step.get("input"), dict):
                step["input"] = model.canonical(str(step.get("tool")), step["input"])
        return recipe

    def lines(self, who: Requester | None = None) -> list[str]:
        """One line per recipe `who` may see: name, description, parameters, track record, validity."""
        out = []
        for name in self.files.names():
            try:
                r = self.load(name, who)
            except LookupError:
                continue
            m = r["metadata"]
            state = f"invalid: {m['invalid']}" if m.get("invalid") else (why_invalid(r, self._clock()) or "valid")
            used = f", last used {m['last_used']}" if m.get("last_used") else ""
            out.append(f"• *{name}* — {r.get('description') or '(no description)'} · parameters: "
                       f"{', '.join(r['parameters']) or 'none'} · {m.get('successes', 0)} ok / "
                       f"{m.get('failures', 0)} failed{used} · {state}")
        return out

    def export(self, name: str, who: Requester | None = None) -> Path:
        """Write the recipe's standalone script to exports/NAME.py; its path."""
        recipe = self.load(name, who)
        text = script_for(recipe, named_zones(self.workspace, self.settings), self._clock())
        folder = self.workspace.exports_dir
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{recipe['name']}.py"
        write_atomic(path, text)
        return path

    def delete(self, name: str, who: Requester) -> bool:
        """Delete a recipe as `who` may (its owner or an operator); False when there is none by that name."""
        name = check_name(name)
        old = self.files.load(name)
        if old is None:
            return False
        if why := change_refusal(self.settings, _owner(old), who, f"recipe {name!r}"):
            raise ValueError(why)
        return self.files.delete(name)

    def _owners(self) -> list[str | None]:
        return [_owner(r).user for n in self.files.names() if (r := self.files.load(n)) is not None]


def _recipe_shaped(data: Any) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("metadata"), dict)
            and isinstance(data.get("parameters", {}), dict) and isinstance(data.get("steps"), list)
            and all(isinstance(st, dict) and isinstance(st.get("tool"), str) and isinstance(st.get("input", {}), dict)
                    for st in data["steps"]))


def _read(path: Path) -> str:
    try:
        return path.read_bytes()[:100_000].decode("utf-8", "replace")
    except OSError:
        return ""


def _owner(recipe: dict[str, Any]) -> Owner:
    """Who saved a recipe (metadata.owner; one saved before owners were kept: its created_by, a Slack id or the
    operator)."""
    found = recipe.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    try:
        if isinstance(meta.get("owner"), dict):
            return Owner.model_validate(meta["owner"])
    except ValueError:
        pass
    made = meta.get("created_by")
    return Owner(user=made, place="private") if isinstance(made, str) and made not in ("operator", "unknown") \
        else Owner()
