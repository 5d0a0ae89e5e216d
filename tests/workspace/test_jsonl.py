"""The one JSON-lines reader: what a crash or another writer leaves in a file is skipped, the rest read in order."""

from __future__ import annotations

from pathlib import Path

from workspace.jsonl import numbered_records, read_jsonl


def test_torn_and_foreign_lines_are_skipped_and_named_blank_lines_are_not(tmp_path: Path) -> None:
    text = '{"a": 1}\n\n[1, 2]\n{"b": 2}\n"text"\n{"c": 3, "d": "cut sh'
    skipped: list[int] = []
    assert list(numbered_records(text, skipped.append)) == [(1, {"a": 1}), (4, {"b": 2})]
    assert skipped == [3, 5, 6]


def test_a_file_is_read_in_order_and_a_missing_or_undecodable_one_does_not_raise(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    assert read_jsonl(path) == []
    path.write_bytes(b'{"n": 1}\n{"n": "\xff"}\n{"n": 3')
    assert read_jsonl(path) == [{"n": 1}, {"n": "\ufffd"}]
    assert read_jsonl(tmp_path) == []  # a folder cannot be read as a file
