"""docs/search_answer.png: what `/vision search someone walking left` shows in Slack, drawn from its very blocks.

The events are the bench's labelled ones (bench/event_search.py: real footage, described and recorded as the monitor
does); the blocks are `handlers/answers/moments_blocks.moments_blocks` of the real search, drawn by
tools/render_blocks.py as the other README pictures are. Run `python -m bench._search_picture` (it fetches
opencv-doc the first time).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images" / "search_answer.png"
QUERY = "someone walking left"


def main() -> Path:
    sys.path.insert(0, str(ROOT))
    from bench.event_search import make_events
    from bot.config import load_settings
    from bot.monitoring.search.index import index_of
    from bot.monitoring.search.moments import build
    from handlers.answers.moments_blocks import moments_blocks
    from tools.render_blocks import render

    tz = load_settings({}).heartbeat.timezone
    with tempfile.TemporaryDirectory() as tmp:
        log, _ = make_events(Path(tmp))
        index = index_of(log)
        found = index.search(QUERY, 6)
        moments = build(QUERY, "", found, len(index), log.pictures, "http://127.0.0.1:8080", tz)
        files = {m.event_id: f"F{m.event_id}" for m in moments.pictures()}
        blocks = moments_blocks(moments, tz, files)
        pictures = {}
        for m in moments.pictures():
            pictures[f"F{m.event_id}"] = Path(tmp) / f"{m.event_id}.jpg"
            pictures[f"F{m.event_id}"].write_bytes(m.picture or b"")
        OUT.parent.mkdir(parents=True, exist_ok=True)
        render(blocks, pictures).save(OUT, optimize=True)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return OUT


if __name__ == "__main__":
    main()
