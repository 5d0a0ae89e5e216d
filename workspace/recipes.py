"""Recipe files: `WORKSPACE/recipes/NAME.json`, one saved setup each (the bot's recipes package owns their meaning)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from workspace.atomic import write_atomic
from workspace.chunking import SITE, may_see

log = logging.getLogger(__name__)

# Lower-case words joined by - or _: a name can never leave the folder (no /, no .., no dot files).
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,47}$")
NAME_RULE = "a recipe name is 1-48 lower-case letters, digits, - or _ (e.g. door-count)"


def check_name(name: str) -> str:
    """The name, lower-cased; ValueError (one line) for a name that is not a plain file name."""
    clean = (name or "").strip().lower()
    if not NAME.match(clean):
        raise ValueError(f"{name!r} is not a recipe name: {NAME_RULE}.")
    return clean


class RecipeFiles:
    """The recipes folder: read, write (atomically), list. The content is a dict; nothing here interprets it."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def path(self, name: str) -> Path:
        return self.folder / f"{check_name(name)}.json"

    def load(self, name: str) -> dict[str, Any] | None:
        """The recipe, or None when there is none by that name (a broken file is logged and treated as none)."""
        path = self.path(name)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError) as exc:
            log.warning("recipe %s cannot be read: %s", path.name, exc)
            return None
        return data if isinstance(data, dict) else None

    def save(self, name: str, data: dict[str, Any]) -> Path:
        """Write the whole recipe at once: a crash mid-write leaves the old file, never half a recipe."""
        path = self.path(name)
        write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False))
        return path

    def delete(self, name: str) -> bool:
        try:
            self.path(name).unlink()
        except FileNotFoundError:
            return False
        return True

    def names(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(p.stem for p in self.folder.glob("*.json") if NAME.match(p.stem))

    def listing(self, viewer: str | None = None) -> list[tuple[str, str]]:
        """(name, description) of every readable recipe `viewer` may see (an audience: `workspace.memory.may_see`;
        None: all), by name: the agent's turn context lists them. One line each, at most 200 characters."""
        out = []
        for name in self.names():
            data = self.load(name)
            if data is None or (viewer is not None and not visible(viewer, data)):
                continue
            desc = " ".join(str(data.get("description") or "").split())
            out.append((name, desc[:200]))
        return out


def visible(viewer: str, data: dict[str, Any]) -> bool:
    """A recipe's audience is where it was saved (metadata.audience); one saved before audiences existed is the
    site's, like an untagged memory note."""
    meta = data.get("metadata")
    audience = meta.get("audience") if isinstance(meta, dict) else None
    return may_see(viewer, audience if isinstance(audience, str) else SITE)
