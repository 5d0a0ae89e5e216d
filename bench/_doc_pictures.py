"""The README's pictures of Slack answers (docs/images/), drawn by tools/render_blocks.py from blocks the bot's own
code builds: a verified alert (handlers/alerts/blocks.py) and the `/vision cameras` table (its rows as a live run on
loopback cameras of real footage gave them, tests/handlers/listeners/test_cameras_live.py, with the light builtin/people
will report). `python bench/_doc_pictures.py`."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.render_blocks import render  # noqa: E402


def main() -> None:
    from handlers.alerts.blocks import alert_blocks
    from handlers.state.alert_book import PostedAlert
    from handlers.transport.tables import table_block

    root = Path(__file__).resolve().parents[1]
    out = root / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    frame = root / "tests" / "fixtures" / "data" / "street.jpg"
    posted = PostedAlert("a1", "C0ALERTS", "1.0", "yard", "count_over:person>5", "9 people in view, over 5",
                         {"person": 9}, 1_780_000_000.0, "p_yard", "F1",
                         check="✓ seen: nine people walking across the yard — all upright and moving, none a shadow "
                               "or a reflection", marked=None)
    render(alert_blocks(posted), {"F1": frame}).save(out / "verified_alert.png")
    rows = [["Camera", "Pipeline", "State", "Resolution", "FPS asked / delivered", "Person height", "Light", "Motion",
             "Last frame", "Can count"],
            ["street", "street", "running", "384×288", "5 / 4.9", "50 px", "ok (luma 118)", "moving", "0 s", "yes"],
            ["lobby", "lobby", "running", "640×360", "10 / 9.7", "31 px", "ok (luma 121)", "moving", "0 s",
             "no — people here are about 31 px tall and builtin/people finds people from about 60 px — use the main "
             "stream (a higher resolution) or a Roboflow model"],
            ["garden", "garden", "running", "1280×720", "5 / 5.0", "—", "too dark (luma 9)", "moving", "0 s",
             "no — the light is too poor to find people (the picture is too dark: mean brightness 9 of 255); things "
             "shaped like people moved for 5 min mostly unseen (a person found on 4% of them) — an IR illuminator "
             "or more light, the main stream (less noise) or a Roboflow model would help"],
            ["frozen", "frozen", "running", "384×288", "5 / 4.8", "89 px", "ok (luma 96)", "frozen", "0 s",
             "no — the picture is frozen: the camera or its encoder hung: restart the camera"],
            ["yard", "yard", "running", "384×288", "5 / 5.0", "—", "black or covered", "still", "0 s",
             "no — the picture is black or covered: check the lens is not covered and the camera has light (or its "
             "IR on)"],
            ["away", "away", "error", "—", "5 / —", "—", "—", "—", "—",
             "no — the pipeline failed (cannot open video source camera \"away\": check the path/URL, camera power "
             "and credentials): check the source, then restart it"],
            ["spare", "—", "not running", "—", "—", "—", "—", "—", "—", "not yet — start it: `/vision start spare`"]]
    head = {"type": "section", "text": {"type": "mrkdwn", "text": "Cameras (1 of 7 can count; lobby: no — people here "
                                        "are about 31 px tall …; not running: spare):"}}
    render([head, table_block(rows)]).save(out / "cameras_table.png")
    print(f"wrote {out / 'verified_alert.png'} and {out / 'cameras_table.png'}")


if __name__ == "__main__":
    main()
