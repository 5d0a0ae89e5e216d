"""Recipe tools: save the last setup that worked, replay one without composing again, export it as a script."""

from __future__ import annotations

from pydantic import Field

from bot.agent.registry import ToolRegistry
from bot.agent.tools import ToolArgs, ToolContext, ToolResult
from bot.objects.recipe import RecipeRun, RecipeSpec
from bot.rights import RECIPES
from bot.services import need


class ExportArgs(ToolArgs):
    name: str = Field(description="The recipe to export")


async def save_recipe(args: RecipeSpec, ctx: ToolContext) -> ToolResult:
    try:
        recipes = need(ctx.services.recipes, "recipes")
        text = recipes.save(args.name, args.description, ctx.session_key, ctx.requester, ctx.turn)
    except (ValueError, LookupError) as exc:
        return ToolResult.error(str(exc))
    return ToolResult(text=text)


async def run_recipe(args: RecipeRun, ctx: ToolContext) -> ToolResult:
    raw = {k: "" if v is None else str(v) for k, v in args.parameters.items()}
    try:
        recipes = need(ctx.services.recipes, "recipes")
        ok, text = await recipes.run(args.name, raw, ctx.requester, ctx.services, ctx.session_key)
    except (ValueError, LookupError) as exc:
        return ToolResult.error(str(exc))
    if not ok:
        return ToolResult.error(text + "\nFix the cause, or compose the setup yourself instead.")
    return ToolResult(text=text + "\nVerify the outcome with get_pipeline_results before telling the user it works.")


async def export_script(args: ExportArgs, ctx: ToolContext) -> ToolResult:
    try:
        path = need(ctx.services.recipes, "recipes").export(args.name, ctx.requester)
    except (ValueError, LookupError) as exc:
        return ToolResult.error(str(exc))
    return ToolResult(text=f"Exported recipe {args.name} as a standalone script: {path} (needs only `pip install "
                      f"inference`; run `python {path.name} --help` for its options). In Slack, "
                      f"`/vision recipe export {args.name}` posts the file.")


def register(reg: ToolRegistry) -> None:
    reg.register_operation("save_recipe", save_recipe)
    reg.register_operation("run_recipe", run_recipe)
    # It writes exports/NAME.py into the workspace: a file on disk, so the allowlists and read-only MCP apply.
    reg.register("export_script", "Export a saved recipe as a standalone Python script (inference only) under "
                 "exports/.", ExportArgs, export_script, changes=RECIPES)
