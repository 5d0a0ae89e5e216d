"""What of a final answer a stream has not shown yet, and where a full streamed message may end."""

from __future__ import annotations

from handlers.answers.stream_text import clean_head, for_slack, markdown_pieces, unshown
from handlers.transport.mrkdwn import escape


def test_the_rest_of_the_answer_follows_what_streamed_whatever_the_whitespace() -> None:
    assert unshown("still fine", "still ") == "fine"  # the held-back word, without a second space
    assert unshown("One.\n\nTwo.", "One.\n") == "\nTwo."  # the paragraph break is completed, not doubled
    assert unshown("One.\nTwo.", "One.Two") == "."  # text blocks joined by a newline in the final text
    assert unshown("all of it", "") == "all of it" and unshown("done", "done") == ""


def test_a_note_in_front_goes_after_and_a_different_attempt_gets_the_whole_answer() -> None:
    assert unshown("(Your message was cut.)\n\nHello world", "Hello ") == "world\n\n(Your message was cut.)"
    assert unshown("The door is clear.", "Something else ") == "\n\nThe door is clear."


def test_a_full_message_ends_on_a_paragraph_then_a_line_then_a_word() -> None:
    text = "a" * 60 + "\n\n" + "b" * 30 + "\n" + "c" * 30
    assert clean_head(text, 100) == "a" * 60
    assert clean_head("x" * 60 + " " + "y" * 80, 100) == "x" * 60
    assert clean_head("z" * 300, 100) == "z" * 100


def test_broadcasts_written_by_the_model_never_notify_a_channel() -> None:
    hostile = "Done. <!channel> <!here|here> <!everyone> <!subteam^S0123> @channel @here @everyone, thanks <@U0HUMAN>"
    safe = for_slack(hostile)
    for ping in ("<!channel>", "<!here", "<!everyone>", "<!subteam", "@channel", "@here", "@everyone"):
        assert ping not in safe
    assert "<@U0HUMAN>" in safe and safe.replace("\u2060", "") == hostile  # readable, same words
    posted = escape(hostile)  # the mrkdwn path (alerts, notes) escapes them as text
    assert "<!channel>" not in posted and "&lt;!channel&gt;" in posted and "<@U0HUMAN>" in posted


def test_long_markdown_is_cut_on_boundaries_and_a_cut_code_block_is_closed_and_reopened() -> None:
    prose = "\n\n".join(f"Paragraph {i}. " + "word " * 300 for i in range(20))
    pieces = markdown_pieces(prose, limit=4000)
    assert len(pieces) > 1 and all(len(p) <= 4000 for p in pieces)
    assert all(p.endswith("word ") or p.endswith("word") for p in pieces[:-1])  # never mid-word
    assert " ".join("".join(pieces).split()) == " ".join(prose.split())
    code = "Here:\n```\n" + "\n".join(f"line {i} = {i * i}" for i in range(600)) + "\n```\nDone."
    parts = markdown_pieces(code, limit=3000)
    assert len(parts) > 1 and all(len(p) <= 3000 and p.count("```") % 2 == 0 for p in parts)
    assert parts[1].startswith("```\n") and parts[-1].endswith("Done.")

