"""Search over the memory files (keyword first version; hybrid BM25 + embeddings follows)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Callable

from workspace.memory import Hit

_TOKEN = re.compile(r"[a-z0-9]+")
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class MemoryIndex:
    """Keyword search over memory/*.md bullets and paragraphs."""

    def __init__(self, root: Path, use_embeddings: bool = True, clock: Callable[[], float] = time.time) -> None:
        self.root = Path(root)
        self._clock = clock

    def search(self, query: str, max_results: int = 5) -> list[Hit]:
        q = set(tokenize(query))
        hits: list[Hit] = []
        mem = self.root / "memory"
        for path in sorted(mem.glob("*.md")) if mem.is_dir() else []:
            m = _DATE.match(path.name)
            for line in path.read_text(encoding="utf-8").splitlines():
                if not line.strip() or line.startswith("#"):
                    continue
                score = len(q & set(tokenize(line)))
                if score:
                    hits.append(Hit(line.strip(), path.name, float(score), m.group(1) if m else None))
        hits.sort(key=lambda h: -h.score)
        return hits[:max_results]
