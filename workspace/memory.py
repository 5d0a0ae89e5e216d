"""Persistent memory on disk: daily observation logs by camera, KNOWLEDGE.md, and search over both."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from workspace.atomic import write_atomic
from workspace.chunking import OPERATOR, SITE, author_of, may_see, split_audience
from workspace.search import Hit, MemoryIndex

log = logging.getLogger(__name__)

KNOWLEDGE_FILE = "KNOWLEDGE.md"
GENERAL_SECTION = "general"
_DAY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_CATEGORIES = ("observation", "knowledge", "preference")
# Audiences (where a note came from, so who may read it): SITE (what the process saw on its cameras, and untagged
# notes), OPERATOR (the CLI, REST, MCP), "public:C", "private:C", "dm:U". The bot maps an asker to one
# (bot.rights.audience); the workspace imports nothing of the bot, so they are plain strings here.
__all__ = ["OPERATOR", "SITE", "MemoryStore", "may_see"]


class MemoryStore:
    """Files under root/memory are the source of truth; the search index under root/.index is derived."""

    def __init__(
        self,
        root: Path,
        timezone: str = "UTC",
        clock: Callable[[], float] = time.time,
        use_embeddings: bool = True,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.root = Path(root)
        # Every note passes through it before it is written, every hit before it is returned: the bot's credential
        # redactor, injected because the workspace imports nothing of the bot.
        self._redact = redact or (lambda text: text)
        self.dir = self.root / "memory"
        self._tz = ZoneInfo(timezone)
        self._clock = clock
        self._lock = threading.Lock()  # the monitor thread and tool calls append concurrently
        self._use_embeddings = use_embeddings
        self._index: MemoryIndex | None = None

    # writing ------------------------------------------------------------
    def now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), self._tz)

    def today(self) -> str:
        return self.now().strftime("%Y-%m-%d")

    def store(self, content: str, category: str = "observation", camera_id: str | None = None,
              audience: str = SITE, author: str | None = None) -> Path:
        """Append a note: observations to memory/YYYY-MM-DD.md under their camera, the rest to KNOWLEDGE.md.

        audience: where the note came from (see `may_see`); it is written as the bullet's first tag, with its
        `author` (a Slack user: `[for dm:U1 by U1]`), which the caps on notes a day count (`written_today`).
        """
        if category not in _CATEGORIES:
            raise ValueError(f"unknown memory category {category!r}; use one of {', '.join(_CATEGORIES)}")
        text = self._redact(" ".join(content.split()))  # one bullet = one line: chunking and reading stay simple
        if not text:
            raise ValueError("nothing to remember: the content is empty")
        if audience != SITE or author:
            text = f"[for {audience}{' by ' + author if author else ''}] {text}"
        now = self.now()
        with self._lock:
            self.dir.mkdir(parents=True, exist_ok=True)
            if category == "observation":
                path = self.dir / f"{now:%Y-%m-%d}.md"
                header = f"# Observations {now:%Y-%m-%d}\n"
                # The camera becomes a heading: one line, or a line break in it would add a bullet of its own,
                # untagged, so the site's (everyone's) whatever the note's audience.
                section = " ".join((camera_id or "").split())[:80] or GENERAL_SECTION
                bullet = f"- {now:%H:%M:%S} {text}"
            else:
                path = self.dir / KNOWLEDGE_FILE
                header = "# Knowledge\n"
                section = "Preferences" if category == "preference" else "Facts"
                bullet = f"- {now:%Y-%m-%d} {text}"
            existing = path.read_text(encoding="utf-8") if path.exists() else header
            # atomic: a concurrent search reads the old or the new file, never a truncated one (the temp file ends
            # in .tmp, never .md, so the search index does not pick up a half-written copy)
            write_atomic(path, _insert_under(existing, section, bullet))
        return path

    def written_today(self) -> list[str | None]:
        """The author of every note people wrote today (a Slack user; None: the operator's), for the caps."""
        today = self.today()
        out: list[str | None] = []
        for path, dated in ((self.dir / f"{today}.md", False), (self.dir / KNOWLEDGE_FILE, True)):
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except OSError:
                continue
            for line in lines:
                if not line.startswith("- ") or (dated and not line[2:].startswith(today)):
                    continue
                body = line[2:]
                if split_audience(body)[0] != SITE:
                    out.append(author_of(body))
        return out

    # reading ------------------------------------------------------------
    def day_files(self) -> list[Path]:
        """Daily logs, oldest first."""
        if not self.dir.is_dir():
            return []
        return sorted(p for p in self.dir.glob("*.md") if _DAY_RE.match(p.stem))

    def get_daily_observations(self, date: str | None = None, camera: str | None = None,
                               viewer: str = OPERATOR) -> str:
        """The day's log (default today), or only one camera's section of it, as `viewer` may see it; '' if none."""
        day = date or self.today()
        path = self.dir / f"{day}.md"
        if not path.exists():
            return ""
        text = _visible_lines(path.read_text(encoding="utf-8"), viewer)
        if camera is None:
            return text
        return "\n".join(_section_lines(text, camera))

    def observations_by_camera(self, date: str | None = None, viewer: str = OPERATOR) -> dict[str, list[str]]:
        """Bullets of a day's log grouped by camera section (those `viewer` may see)."""
        text = self.get_daily_observations(date, viewer=viewer)
        out: dict[str, list[str]] = {}
        cam = GENERAL_SECTION
        for line in text.splitlines():
            if line.startswith("## "):
                cam = line[3:].strip()
            elif line.startswith("- "):
                out.setdefault(cam, []).append(line[2:])
        return out

    # search -------------------------------------------------------------
    def search(self, query: str, max_results: int = 5, viewer: str = OPERATOR) -> list[Hit]:
        """Hybrid (BM25 + embeddings) search over memory/*.md, only notes `viewer` may see (`may_see`);
        keyword-only if the model cannot load."""
        with self._lock:
            if self._index is None:
                self._index = MemoryIndex(self.root, use_embeddings=self._use_embeddings, clock=self._clock)
            index = self._index
        # Files written before redaction existed, or edited by hand, may still hold a credential.
        hits = index.search(query, max_results=max_results, visible=lambda audience: may_see(viewer, audience))
        return [replace(h, text=self._redact(h.text)) for h in hits]


def _visible_lines(text: str, viewer: str) -> str:
    """The file without the bullets (and their continuation lines) `viewer` may not see; tags are dropped. A camera's
    heading shows only above a bullet `viewer` sees: its name came from the note's writer too."""
    out: list[str] = []
    hidden = False
    heading: str | None = None
    for line in text.splitlines():
        if line.startswith("- "):
            audience, body = split_audience(line[2:])
            hidden = not may_see(viewer, audience)
            line = "- " + body
            if not hidden and heading is not None:
                out.append(heading)
                heading = None
        elif line.startswith("## "):
            heading, hidden = line, False
            continue
        elif line.startswith("#") or not line.strip():
            hidden = False
        if not hidden:
            out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _insert_under(text: str, section: str, bullet: str) -> str:
    """Put the bullet at the end of '## section', creating the section at the end if missing."""
    lines = text.rstrip("\n").split("\n")
    heading = f"## {section}"
    try:
        start = lines.index(heading)
    except ValueError:
        return "\n".join(lines) + f"\n\n{heading}\n{bullet}\n"
    end = start + 1
    while end < len(lines) and not lines[end].startswith("## "):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():  # keep the blank line before the next heading
        end -= 1
    lines.insert(end, bullet)
    return "\n".join(lines) + "\n"


def _section_lines(text: str, section: str) -> list[str]:
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("## "):
            inside = line[3:].strip() == section
        if inside:
            out.append(line)
    return out
