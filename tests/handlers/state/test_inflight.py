"""The in-flight turn book: what a crash leaves on disk is read back right, and resume plans never ask twice."""

from __future__ import annotations

from pathlib import Path

from bot.agent.sessions import SessionStore
from handlers.state.inflight import RESUMED, InflightBook, resume_plan
from handlers.state.threads import Conversation


def conv(ts: str) -> Conversation:
    return Conversation("T1", "C1", ts, ts, "U1")


def test_open_turns_survive_a_reload_with_their_progress_and_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "inflight.jsonl"
    book = InflightBook(path)
    book.add(conv("2.0"), "second", [{"id": "F1"}])
    book.add(conv("1.0"), "first", [])
    book.add(conv("3.0"), "third", [])
    book.started(conv("1.0"), 4)
    book.answered(conv("1.0"))
    book.started(conv("2.0"), 7)
    book.done(conv("3.0"))
    with path.open("a") as f:
        f.write('{"op": "done", "key": "C1:2.')  # the process died mid-write
    again = InflightBook(path)
    got = [(t.conv.message_ts, t.text, t.files, t.started, t.answered) for t in again.open_turns()]
    assert got == [("1.0", "first", [], 4, True), ("2.0", "second", [{"id": "F1"}], 7, False)]
    assert len(path.read_text().splitlines()) == 2  # compacted to the open turns


def test_opened_streams_are_kept_through_reloads_and_a_record_of_another_shape_is_read_without_them(
        tmp_path: Path) -> None:
    path = tmp_path / "inflight.jsonl"
    book = InflightBook(path)
    book.add(conv("1.0"), "q", [])
    book.stream_opened(conv("1.0"), "1.5")
    book.stream_opened(conv("1.0"), "1.7")  # the answer outgrew one message
    book.stream_opened(conv("8.0"), "8.5")  # not a turn of ours: not written
    with path.open("a") as f:  # an older or hand-edited record: streams of another shape
        f.write('{"op": "add", "conv": {"team": "T1", "channel": "C1", "thread_ts": "2.0", "message_ts": "2.0", '
                '"user": "U1"}, "text": "r", "files": [], "streams": "2.5"}\n')
    again = InflightBook(path)
    assert [(t.conv.message_ts, t.streams) for t in again.open_turns()] == [("1.0", ["1.5", "1.7"]), ("2.0", [])]
    assert [t.streams for t in InflightBook(path).open_turns()] == [["1.5", "1.7"], []]  # the compacted file too


def test_the_file_starts_afresh_once_no_turn_is_open(tmp_path: Path) -> None:
    book = InflightBook(tmp_path / "inflight.jsonl")
    book.add(conv("1.0"), "q", [])
    book.done(conv("1.0"))
    book.done(conv("9.0"))  # unknown keys are ignored, not written
    assert book.path.read_text() == "" and book.open_turns() == []


def test_resume_plan_asks_fresh_continues_or_posts_the_saved_answer(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.append("k", {"role": "user", "content": "earlier question"})
    store.append("k", {"role": "assistant", "content": [{"type": "text", "text": "earlier answer"}]})
    mark = store.length("k")
    assert resume_plan(store, "k", mark) == ("fresh", "")  # the crash came before the question was saved
    store.append("k", {"role": "user", "content": "how many?"})
    store.append("k", {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]})
    assert resume_plan(store, "k", mark) == ("continue", RESUMED)  # mid-tool: finish it, never re-ask
    store.append("k", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "3"}]})
    store.append("k", {"role": "assistant", "content": [{"type": "text", "text": "Three."}]})
    assert resume_plan(store, "k", mark) == ("answer", "Three.")  # saved but maybe never shown


def test_rows_are_in_the_file_as_written_and_a_fresh_start_leaves_no_gap(tmp_path: Path) -> None:
    """The book keeps its file open: each row must still be readable at once (a crash right after loses nothing),
    and rows after the file started afresh begin at its start (no hole of zeros where the old rows were)."""
    path = tmp_path / "inflight.jsonl"
    book = InflightBook(path)
    book.add(conv("1.0"), "q", [])
    assert [t.text for t in InflightBook(path).open_turns()] == ["q"]  # read by another, as after a crash
    book = InflightBook(path)
    book.stream_opened(conv("1.0"), "1.5")
    book.done(conv("1.0"))
    assert path.read_text() == ""
    book.add(conv("2.0"), "again", [])
    book.stream_opened(conv("2.0"), "2.5")
    assert path.read_text().startswith('{"op": "add"') and len(path.read_text().splitlines()) == 2
    book.close()
    assert [(t.text, t.streams) for t in InflightBook(path).open_turns()] == [("again", ["2.5"])]
    book.add(conv("3.0"), "after close", [])  # a late row (a turn cancelled at shutdown) still lands
    assert len(InflightBook(path).open_turns()) == 2
