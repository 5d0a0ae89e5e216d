"""docs/search_answer.png: what `/vision search someone walking left` shows in Slack, drawn from its very blocks.

The events are the bench's labelled ones (bench/event_search.py: real footage, described and recorded as the monitor
does); the blocks are `handlers/answers/moments_blocks.moments_blocks` of the real search; this draws them the way
Slack lays them out (a bold title, the table block with its header row, the image blocks with their titles, the
context line), simply, with PIL. Run `python -m bench._search_picture` (it fetches opencv-doc the first time).
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "search_answer.png"
QUERY = "someone walking left"
WIDTH, PAD, ROW = 1100, 16, 30
INK, GREY, LINE, LINK, HEAD = (29, 28, 29), (97, 96, 97), (221, 221, 221), (18, 100, 163), (248, 248, 248)


def _font(size: int, bold: bool = False) -> Any:
    for name in ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf", "LiberationSans-Regular.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default()


def _cell_text(cell: dict[str, Any]) -> tuple[str, bool]:
    """A table cell's text and whether it is a link (rich_text with a link element)."""
    if cell["type"] == "raw_text":
        return cell["text"], False
    el = cell["elements"][0]["elements"][0]
    return el.get("text") or el.get("url", ""), el.get("type") == "link"


def _fit(draw: ImageDraw.ImageDraw, text: str, font: Any, width: int) -> str:
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "…", font=font) > width:
        text = text[:-1]
    return text + "…"


def render(blocks: list[dict[str, Any]], pictures: dict[str, bytes]) -> Image.Image:
    """The blocks as Slack shows them: section (bold), table, images (titled), context."""
    body, bold, small = _font(15), _font(15, bold=True), _font(13)
    canvas = Image.new("RGB", (WIDTH, 2400), "white")
    draw = ImageDraw.Draw(canvas)
    draw.text((PAD, PAD), "Vision Agent  APP", font=bold, fill=INK)
    y = PAD + 28
    widths = [40, 190, 110, 620, 80]
    images = [b for b in blocks if b["type"] == "image"]
    for block in blocks:
        if block["type"] == "section":
            draw.text((PAD, y), block["text"]["text"].strip("*"), font=bold, fill=INK)
            y += ROW
        elif block["type"] == "table":
            x0 = PAD
            for r, row in enumerate(block["rows"]):
                if r == 0:
                    draw.rectangle((x0, y, x0 + sum(widths), y + ROW), fill=HEAD)
                x = x0
                for cell, w in zip(row, widths, strict=False):
                    text, link = _cell_text(cell)
                    font = bold if r == 0 else body
                    draw.text((x + 8, y + 7), _fit(draw, text, font, w - 14), font=font, fill=LINK if link else INK)
                    x += w
                draw.rectangle((x0, y, x0 + sum(widths), y + ROW), outline=LINE)
                for cx in [x0 + sum(widths[:i]) for i in range(1, len(widths))]:
                    draw.line((cx, y, cx, y + ROW), fill=LINE)
                y += ROW
            y += PAD
            if images:  # Slack stacks image blocks; drawn side by side here to keep the picture short
                x = PAD
                tallest = 0
                for img_block in images:
                    pic = Image.open(io.BytesIO(pictures[img_block["slack_file"]["id"]])).convert("RGB")
                    pic.thumbnail((230, 300))
                    draw.text((x, y), _fit(draw, img_block["title"]["text"], small, 340), font=small, fill=GREY)
                    canvas.paste(pic, (x, y + 20))
                    x += max(pic.width, 240) + 110
                    tallest = max(tallest, pic.height + 28)
                y += tallest + PAD
        elif block["type"] == "context":
            text = block["elements"][0]["text"]
            draw.text((PAD, y), _fit(draw, text, small, WIDTH - 2 * PAD), font=small, fill=GREY)
            y += ROW
    return canvas.crop((0, 0, WIDTH, y + PAD))


def main() -> Path:
    sys.path.insert(0, str(ROOT))
    from bench.event_search import make_events
    from bot.config import load_settings
    from bot.monitoring.search.index import index_of
    from bot.monitoring.search.moments import build
    from handlers.answers.moments_blocks import moments_blocks

    tz = load_settings({}).heartbeat.timezone
    with tempfile.TemporaryDirectory() as tmp:
        log, _ = make_events(Path(tmp))
        index = index_of(log)
        found = index.search(QUERY, 6)
        moments = build(QUERY, "", found, len(index), log.pictures, "http://127.0.0.1:8080", tz)
        files = {m.event_id: f"F{m.event_id}" for m in moments.pictures()}
        blocks = moments_blocks(moments, tz, files)
        pictures = {f"F{m.event_id}": m.picture or b"" for m in moments.pictures()}
        render(blocks, pictures).save(OUT, optimize=True)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return OUT


if __name__ == "__main__":
    main()
