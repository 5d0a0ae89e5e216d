"""The workspace on disk: created from templates, prompt files, the camera registry, skills."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from workspace import skills as _skills
from workspace.atomic import write_atomic
from workspace.markdown import Camera, parse_camera_table, parse_zone_table, strip_comments
from workspace.recipes import RecipeFiles
from workspace.skills import Skill

__all__ = ["Camera", "Workspace", "WorkspaceError", "parse_camera_table", "strip_comments"]

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).parent / "templates"
PROMPT_FILES = ("AGENTS.md", "USER.md", "CAMERAS.md")
MAX_PROMPT_FILE_BYTES = 16 * 1024  # one runaway file must not eat the context window (or the cache)
_MANIFEST = "workspace.json"  # in .state/: which template files init installed, with their hashes


class WorkspaceError(Exception):
    """The workspace cannot be created or written; str() is one line saying what to do."""


class Workspace:
    """A workspace folder (default ~/.vision_agent): plain files are the source of truth."""

    def __init__(self, root: Path, max_file_bytes: int = MAX_PROMPT_FILE_BYTES) -> None:
        self.root = Path(root).expanduser()
        self.max_file_bytes = max_file_bytes
        self._warned: set[tuple[Path, int]] = set()

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    @property
    def memory_dir(self) -> Path:
        return self.root / "memory"

    @property
    def frames_dir(self) -> Path:
        return self.root / "frames"

    @property
    def skills_dir(self) -> Path:
        return self.root / "skills"

    @property
    def state_dir(self) -> Path:
        return self.root / ".state"

    @property
    def recipes(self) -> RecipeFiles:
        """Saved setups, `recipes/NAME.json` (created on first save)."""
        return RecipeFiles(self.root / "recipes")

    @property
    def exports_dir(self) -> Path:
        return self.root / "exports"

    @property
    def active_state_path(self) -> Path:
        return self.root / "active_state.json"

    @property
    def config_path(self) -> Path:
        return self.root / "config.yaml"

    # creation -----------------------------------------------------------
    def exists(self) -> bool:
        """True once init has run here (config.yaml or AGENTS.md present)."""
        return self.config_path.is_file() or (self.root / "AGENTS.md").is_file()

    def init(self, restore: bool = False) -> list[Path]:
        """Create missing folders and template files; return what was created.

        Never touches an existing file. A template file the user deleted after an earlier init stays deleted
        unless `restore` is set (the explicit `vision-agent init` restores; start-up does not).
        """
        try:
            return self._init(restore)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot create the workspace at {self.root}: {exc.strerror or exc}; "
                "set VISION_AGENT_WORKSPACE to a writable folder"
            ) from None

    def _init(self, restore: bool) -> list[Path]:
        created: list[Path] = []
        for d in (self.root, self.sessions_dir, self.memory_dir, self.frames_dir, self.skills_dir, self.state_dir):
            if not d.is_dir():
                d.mkdir(parents=True, exist_ok=True)
                created.append(d)
        installed = self._read_manifest()
        for src in sorted(p for p in TEMPLATES.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            rel = src.relative_to(TEMPLATES).as_posix()
            dst = self.root / rel
            if dst.exists() or (rel in installed and not restore):
                continue
            data = src.read_bytes()
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)
            installed[rel] = hashlib.sha256(data).hexdigest()
            created.append(dst)
        self._write_manifest(installed)
        return created

    def _read_manifest(self) -> dict[str, str]:
        try:
            data = json.loads((self.state_dir / _MANIFEST).read_text(encoding="utf-8"))
            return dict(data.get("installed", {}))
        except (OSError, ValueError, AttributeError, RecursionError):
            return {}

    def _write_manifest(self, installed: dict[str, str]) -> None:
        path = self.state_dir / _MANIFEST
        write_atomic(path, json.dumps({"installed": installed}, indent=1, sort_keys=True))

    # reading ------------------------------------------------------------
    def read_text(self, name: str) -> str | None:
        """A workspace file's text without comments; None if missing, unreadable or over the size limit."""
        path = self.root / name
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return None
        if size > self.max_file_bytes:
            if (path, size) not in self._warned:  # once per file size, not on every turn
                self._warned.add((path, size))
                log.warning(
                    "workspace file %s skipped: %d bytes is over the %d-byte limit; shorten it "
                    "(move detail into a skill)", path, size, self.max_file_bytes,
                )
            return None
        try:
            return strip_comments(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("workspace file %s skipped: cannot read it as UTF-8 text (%s)", path, exc)
            return None

    def load_prompt_files(self) -> dict[str, str]:
        """AGENTS.md, USER.md, CAMERAS.md (in that order) for the system prompt; files with only headings and
        comments (the untouched templates) are left out."""
        out: dict[str, str] = {}
        for name in PROMPT_FILES:
            text = self.read_text(name)
            if text and any(ln.strip() and not ln.lstrip().startswith("#") for ln in text.splitlines()):
                out[name] = text
        return out

    def heartbeat_checklist(self) -> str:
        return self.read_text("HEARTBEAT.md") or ""

    def cameras(self) -> list[Camera]:
        text = self.read_text("CAMERAS.md")
        return parse_camera_table(text) if text else []

    def zones(self) -> dict[str, str]:
        """Named zones from CAMERAS.md's zones table (name -> polygon text)."""
        text = self.read_text("CAMERAS.md")
        return parse_zone_table(text) if text else {}

    def camera(self, name: str) -> Camera | None:
        """A registered camera by name (case-insensitive)."""
        wanted = name.strip().lower()
        return next((c for c in self.cameras() if c.name.lower() == wanted), None)

    # skills -------------------------------------------------------------
    def list_skills(self) -> list[Skill]:
        return _skills.discover(self.skills_dir)

    def load_skill(self, name: str) -> str | None:
        """The full SKILL.md of a skill by name (case-insensitive), or None."""
        wanted = name.strip().lower()
        for skill in self.list_skills():
            if skill.name.lower() == wanted:
                return skill.path.read_text(encoding="utf-8")
        return None

    def match_skills(self, text: str) -> list[Skill]:
        return _skills.match(self.list_skills(), text)
