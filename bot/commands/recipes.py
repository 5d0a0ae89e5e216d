"""`/vision recipes` and `/vision recipe save|run|export|delete`: saved setups, replayed without the model."""

from __future__ import annotations

from bot.commands.context import CommandContext, CommandReply, fail
from bot.objects.recipe import RecipeRun
from bot.objects.refusal import parse
from bot.rights import CONTROLLED, RECIPES, refusal
from bot.services import Recipes, need

USAGE = ("Usage: `/vision recipe save NAME [description…]` | `recipe run NAME [key=value …]` | "
         "`recipe export NAME` | `recipe delete NAME` · `/vision recipes` lists them")
# What each sub-command changes, for the one allowlist check (the list only reads; export writes exports/NAME.py,
# as the export_script tool does).
CHANGES = {"save": RECIPES, "delete": RECIPES, "export": RECIPES, "run": CONTROLLED}


def _service(ctx: CommandContext) -> Recipes:
    return need(ctx.services.recipes, "recipes")


async def list_recipes(tokens: list[str], ctx: CommandContext) -> CommandReply:
    lines = _service(ctx).lines(ctx.requester)  # those this place may see
    if not lines:
        return CommandReply("No recipes yet. Set something up, then `/vision recipe save NAME` (or ask me to save it).")
    return CommandReply("*Recipes*\n" + "\n".join(lines))


async def recipe(tokens: list[str], ctx: CommandContext) -> CommandReply:
    if len(tokens) < 2:
        return fail(USAGE)
    sub, name, rest = tokens[0].lower(), tokens[1], tokens[2:]
    if sub not in ("save", "run", "export", "delete"):
        return fail(USAGE)
    if sub in CHANGES and (why := refusal(ctx.settings, ctx.requester, CHANGES[sub])):
        return fail(why)
    service = _service(ctx)
    if sub == "save":
        return CommandReply(service.save(name, " ".join(rest), ctx.session_key, ctx.requester))
    if sub == "run":
        return await _run(service, name, rest, ctx)
    if sub == "delete":
        gone = service.delete(name, ctx.requester)  # its owner or an operator (ValueError otherwise)
        return CommandReply(f"Deleted recipe *{name}*." if gone else f"No recipe {name!r}.", ok=gone)
    path = service.export(name, ctx.requester)
    return CommandReply(f"Exported *{name}* as a standalone script: `{path}` (needs only `pip install inference`; "
                        f"`python {path.name} --help` lists its options).", file=path.read_bytes(), file_name=path.name)


async def _run(service: Recipes, name: str, rest: list[str], ctx: CommandContext) -> CommandReply:
    values: dict[str, str] = {}
    for tok in rest:
        key, eq, val = tok.partition("=")
        if not eq or not key:
            return fail(f"`{tok}`: parameters are key=value, e.g. source=cam2 fps=5.")
        values[key.lower()] = val
    spec = parse(RecipeRun, {"name": name, "parameters": values})  # the one model, as run_recipe takes it
    ok, text = await service.run(spec.name, values, ctx.requester, ctx.services, ctx.session_key or "")
    return CommandReply(text, ok=ok)
