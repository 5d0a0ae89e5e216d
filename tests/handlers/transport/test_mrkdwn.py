"""Markdown → Slack mrkdwn, and splitting long answers to Slack's limits without breaking code blocks."""

from __future__ import annotations

from handlers.answers.stream_text import for_slack
from handlers.transport.mrkdwn import MAX_MENTIONS, SECTION_LIMIT, escape, split_text, to_mrkdwn


def test_bold_headings_links_and_bullets_become_mrkdwn() -> None:
    md = "## Summary\nFound **3 faces** and *one* cat, see [the docs](https://x.io/a?b=1).\n- first\n* second"
    assert to_mrkdwn(md) == ("*Summary*\nFound *3 faces* and _one_ cat, see <https://x.io/a?b=1|the docs>.\n"
                             "• first\n• second")


def test_code_is_kept_verbatim_but_escaped() -> None:
    md = "Run `a <b>` then:\n```python\nif a < b and **c**:\n    pass\n```"
    out = to_mrkdwn(md)
    assert "`a &lt;b&gt;`" in out
    assert "```\nif a &lt; b and **c**:\n    pass\n```" in out  # no bold inside code, language tag dropped


def test_escaping_keeps_slack_references() -> None:
    assert escape("5 > 3 & <@U1> in <#C1|general> <https://x.io|x>") == (
        "5 &gt; 3 &amp; <@U1> in <#C1|general> <https://x.io|x>")


def test_tables_become_monospace_blocks() -> None:
    out = to_mrkdwn("| cam | people |\n|---|---|\n| lobby | 2 |")
    assert out == "```\n| cam | people |\n| lobby | 2 |\n```"


def test_long_answer_splits_on_paragraphs_within_limits() -> None:
    paras = [f"Paragraph {i}. " + "word " * 150 for i in range(40)]
    sections = split_text(to_mrkdwn("\n\n".join(paras)))
    assert all(len(s) <= SECTION_LIMIT for s in sections) and len(sections) > 1
    assert all(s.startswith("Paragraph") for s in sections)  # cut between paragraphs, not inside one
    assert "".join(sections).count("Paragraph") == 40


def test_split_code_block_is_closed_and_reopened() -> None:
    code = "```\n" + "\n".join(f"line {i} " + "x" * 40 for i in range(300)) + "\n```"
    pieces = split_text(to_mrkdwn(code))
    assert len(pieces) > 1 and all(len(p) <= SECTION_LIMIT for p in pieces)
    assert all(p.startswith("```") and p.endswith("```") for p in pieces)


def test_one_huge_line_is_hard_wrapped() -> None:
    pieces = split_text("y" * 7000)
    assert [len(p) for p in pieces] == [2994, 2994, 1012]


def test_the_adapters_own_lines_keep_every_mention_the_model_text_is_limited() -> None:
    allowed = ", ".join(f"<@U0BOSS{i}>" for i in range(5))
    line = escape(f"Only {allowed} may change pipelines; ask one of them.")
    assert all(f"<@U0BOSS{i}>" in line for i in range(5))  # a refusal names every allowed user, live
    said = for_slack(f"Paging {allowed}.")
    assert [f"<@U0BOSS{i}>" in said for i in range(5)].count(True) == MAX_MENTIONS
