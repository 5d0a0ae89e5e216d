"""A long text's result is worked out once (per what else it depends on); a short one each time."""

from __future__ import annotations

from bot.long_texts import LONG, once_per_long_text


def test_a_long_text_is_worked_out_once_per_key_and_a_short_one_each_time() -> None:
    calls: list[str] = []
    key = ["a"]

    @once_per_long_text(key=lambda: key[0])
    def shout(text: str) -> str:
        calls.append(text)
        return text.upper() + key[0]

    long, short = "x" * LONG, "y" * (LONG - 1)
    assert [shout(long), shout(long)] == ["X" * LONG + "a"] * 2 and calls == [long]
    assert [shout(short), shout(short)] == ["Y" * (LONG - 1) + "a"] * 2 and calls == [long, short, short]
    key[0] = "b"  # what it depends on changed (a secret added): worked out again
    assert shout(long) == "X" * LONG + "b" and calls == [long, short, short, long]


def test_without_a_key_a_long_text_is_remembered_as_it_is() -> None:
    calls: list[str] = []

    @once_per_long_text()
    def size(text: str) -> int:
        calls.append(text)
        return len(text)

    text = "z" * (2 * LONG)
    assert [size(text), size(text), size(text + "!")] == [2 * LONG, 2 * LONG, 2 * LONG + 1]
    assert calls == [text, text + "!"]
