"""A picture of a Slack message from its Block Kit blocks, for the docs: sections (mrkdwn, *bold* kept bold), an image
(a file given for its `slack_file`), context, buttons and a table, drawn with PIL in Slack's light theme. Not Slack's
renderer: close enough to show what a person sees, from the very blocks the bot sends.

`python bench/_doc_pictures.py` draws the README's pictures (docs/images/) with it, from blocks the bot's own code
builds.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from PIL import Image, ImageChops, ImageDraw, ImageFont

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
WIDTH, PAD, LINE = 1100, 24, 24
INK, GREY, LINK, BORDER, BUTTON = (29, 28, 29), (97, 96, 97), (18, 100, 163), (221, 221, 221), (255, 255, 255)
EMOJI = {":white_check_mark:": "✔", ":x:": "✘", ":grey_question:": "?", ":rotating_light:": "⚠",
         ":no_entry_sign:": "⊘", ":memo:": "✎", ":hourglass:": "⌛"}
SHOWN = {":white_check_mark:": (0, 122, 90), ":x:": (224, 30, 90), ":rotating_light:": (224, 30, 90),
         ":no_entry_sign:": (224, 30, 90)}


def _font(bold: bool = False, size: int = 17) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    path = FONT_DIR / ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf")
    return ImageFont.truetype(str(path), size) if path.exists() else ImageFont.load_default()


def _plain(text: str) -> str:
    """mrkdwn as it reads: entities, <@U1> and <#C1|name> as names, backticks dropped."""
    text = re.sub(r"<@(\w+)>", r"@\1", text)
    text = re.sub(r"<#\w+\|([^>]+)>", r"#\1", text)
    text = re.sub(r"<(https?://[^|>]+)\|([^>]+)>", r"\2", text)
    return text.replace("`", "").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


class Canvas:
    """A growing white page; each block draws below the last."""

    def __init__(self) -> None:
        self.image = Image.new("RGB", (WIDTH, 4000), "white")
        self.draw = ImageDraw.Draw(self.image)
        self.y = PAD

    def words(self, text: str, size: int = 17, colour: tuple[int, int, int] = INK, x0: int = PAD + 56) -> None:
        """Wrapped mrkdwn: *bold* runs bold, a leading emoji code drawn in its colour."""
        for para in _plain(text).split("\n"):
            x: float = x0
            for token in re.split(r"(\*[^*]+\*|:[a-z_]+:|\s+)", para):
                if not token:
                    continue
                bold = token.startswith("*") and token.endswith("*") and len(token) > 2
                shown = EMOJI.get(token, token.strip("*") if bold else token)
                font = _font(bold or token in EMOJI, size)
                fill = SHOWN.get(token, colour)
                for piece in re.split(r"(\s+)", shown) if bold else [shown]:
                    w = self.draw.textlength(piece, font=font)
                    if x + w > WIDTH - PAD and not piece.isspace():
                        x, self.y = x0, self.y + LINE
                    if not (piece.isspace() and x == x0):
                        self.draw.text((x, self.y), piece, font=font, fill=fill)
                        x += w
            self.y += LINE + 4

    def picture(self, path: Path, alt: str) -> None:
        if path.exists():
            with Image.open(path) as opened:
                im = opened.convert("RGB")
                im.thumbnail((520, 360))
                self.image.paste(im, (PAD + 56, self.y))
                self.y += im.height + 10
        else:
            self.words(f"[{alt}]", colour=GREY)

    def buttons(self, labels: list[tuple[str, bool]]) -> None:
        x = PAD + 56
        for label, danger in labels:
            font = _font(True, 15)
            w = int(self.draw.textlength(label, font=font)) + 28
            self.draw.rounded_rectangle((x, self.y, x + w, self.y + 34), 6, fill=BUTTON, outline=BORDER, width=2)
            self.draw.text((x + 14, self.y + 8), label, font=font, fill=(224, 30, 90) if danger else INK)
            x += w + 10
        self.y += 46

    def table(self, rows: list[list[str]]) -> None:
        font, head = _font(size=14), _font(True, 14)
        cols = len(rows[0])
        widths = [max(self.draw.textlength(r[i], font=head if j == 0 else font) for j, r in enumerate(rows)) + 16
                  for i in range(cols)]
        wrap = cols - 1  # the last column wraps into what is left
        widths[wrap] = max(200, WIDTH * 2 - PAD * 2 - 56 - sum(widths[:wrap]))
        x0 = PAD + 56
        for j, row in enumerate(rows):
            lines = _wrap(self.draw, row[wrap], font, widths[wrap] - 16)
            height = 10 + 20 * max(1, len(lines))
            x: float = x0
            for i, cell in enumerate(row):
                self.draw.rectangle((x, self.y, x + widths[i], self.y + height), outline=BORDER,
                                    fill=(248, 248, 248) if j == 0 else "white")
                texts = lines if i == wrap else [cell]
                for k, t in enumerate(texts):
                    self.draw.text((x + 8, self.y + 5 + 20 * k), t, font=head if j == 0 else font, fill=INK)
                x += widths[i]
            self.y += height
        self.y += 12

    def done(self) -> Image.Image:
        """The page cut to what was drawn (at least WIDTH wide)."""
        drawn = ImageChops.difference(self.image, Image.new("RGB", self.image.size, "white")).getbbox()
        right = max(WIDTH, drawn[2] + PAD) if drawn else WIDTH
        return self.image.crop((0, 0, right, self.y + PAD))


def _cell_text(cell: dict[str, Any]) -> str:
    """A table cell as it reads: a raw_text's text, a rich_text's words and links' labels."""
    if cell.get("type") == "rich_text":
        return "".join(str(el.get("text") or el.get("url") or "") for section in cell.get("elements", [])
                       for el in section.get("elements", []))
    return str(cell.get("text", ""))


def _wrap(draw: ImageDraw.ImageDraw, text: str, font: Any, width: float) -> list[str]:
    lines, line = [], ""
    for word in text.split(" "):
        trial = f"{line} {word}".strip()
        if draw.textlength(trial, font=font) > width and line:
            lines.append(line)
            line = word
        else:
            line = trial
    return [*lines, line]


def render(blocks: list[dict[str, Any]], images: dict[str, Path] | None = None, who: str = "Vision Agent",
           when: str = "14:03") -> Image.Image:
    """The message's picture: the app's name and time, then every block in order."""
    page = Canvas()
    page.image = page.image.resize((WIDTH * 2, 4000))  # room for a wide table; cropped to what is drawn
    page.draw = ImageDraw.Draw(page.image)
    page.draw.rounded_rectangle((PAD, page.y, PAD + 40, page.y + 40), 8, fill=(74, 21, 75))
    page.draw.text((PAD + 9, page.y + 8), "VA", font=_font(True, 18), fill="white")
    page.draw.text((PAD + 56, page.y), who, font=_font(True, 17), fill=INK)
    page.draw.text((PAD + 56 + page.draw.textlength(who, font=_font(True, 17)) + 8, page.y + 2), f"APP  {when}",
                   font=_font(size=13), fill=GREY)
    page.y += LINE + 6
    for b in blocks:
        kind = b.get("type")
        if kind == "section":
            page.words(b["text"]["text"])
        elif kind == "image":
            page.picture((images or {}).get(b.get("slack_file", {}).get("id", ""), Path("-")), b.get("alt_text", ""))
        elif kind == "context":
            page.words(" ".join(e.get("text", "") for e in b.get("elements", [])), size=14, colour=GREY)
        elif kind == "actions":
            page.buttons([(e["text"]["text"], e.get("style") == "danger") for e in b.get("elements", [])])
        elif kind == "table":
            page.table([[_cell_text(c) for c in row] for row in b["rows"]])
    return page.done()
