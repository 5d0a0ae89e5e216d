"""What of a final answer a stream has not shown yet, and where a full streamed message may end."""

from __future__ import annotations

from handlers.stream_text import clean_head, unshown


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
