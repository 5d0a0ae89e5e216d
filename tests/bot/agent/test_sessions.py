"""SessionStore: JSONL written per message, reload after restart, torn lines, merging, compaction markers."""

from __future__ import annotations

import json
import logging

from bot.agent.sessions import SUMMARY_PREFIX, SessionStore


def user(t: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": t}]}


def assistant_tool(tool_id: str) -> dict:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "think", "input": {}}]}


def result(tool_id: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}]}


def reply(t: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": t}]}


def records(store: SessionStore, key: str) -> list[dict]:
    return [json.loads(line) for line in store.path_for(key).read_text().splitlines()]


def test_each_append_is_on_disk_at_once_with_id_type_ts(tmp_path):
    store = SessionStore(tmp_path)
    store.append("cli:a", user("hi"))
    recs = records(store, "cli:a")
    assert recs[0] == {"type": "session", "key": "cli:a", "ts": recs[0]["ts"]}
    assert recs[1]["type"] == "user" and recs[1]["id"].startswith("msg_") and recs[1]["ts"].endswith("Z")
    store.append("cli:a", assistant_tool("tu_1"))
    store.append("cli:a", result("tu_1"))
    assert [r["type"] for r in records(store, "cli:a")] == ["session", "user", "assistant", "tool_result"]


def test_restarted_store_reloads_the_same_history(tmp_path):
    first = SessionStore(tmp_path)
    for m in (user("hi"), assistant_tool("tu_1"), result("tu_1"), reply("done")):
        first.append("slack:T1:C1:1700000000.0001", m)
    again = SessionStore(tmp_path)
    assert again.history("slack:T1:C1:1700000000.0001") == first.history("slack:T1:C1:1700000000.0001")
    assert len(again.history("slack:T1:C1:1700000000.0001")) == 4
    assert again.keys() == ["slack:T1:C1:1700000000.0001"]


def test_torn_last_line_is_skipped_with_a_warning_and_nothing_else_lost(tmp_path, caplog):
    store = SessionStore(tmp_path)
    store.append("k", user("one"))
    store.append("k", reply("two"))
    with store.path_for("k").open("a") as f:
        f.write('{"id": "msg_x", "type": "user", "role": "us')  # the process died mid-write
    with caplog.at_level(logging.WARNING):
        history = SessionStore(tmp_path).history("k")
    assert [m["content"][0]["text"] for m in history] == ["one", "two"]
    assert "torn" in caplog.text


def test_history_never_has_two_messages_of_one_role_in_a_row(tmp_path):
    store = SessionStore(tmp_path)
    store.append("k", user("first question (the turn then failed)"))
    store.append("k", user("second question"))
    history = store.history("k")
    assert len(history) == 1
    assert [b["text"] for b in history[0]["content"]] == ["first question (the turn then failed)", "second question"]


def test_arbitrary_keys_get_safe_distinct_files(tmp_path):
    store = SessionStore(tmp_path)
    keys = ["../../etc/passwd", "a/b", "a_b", "cron:daily report", "ü" * 300]
    paths = {store.path_for(k) for k in keys}
    assert len(paths) == len(keys)
    for p in paths:
        assert p.parent == tmp_path and "/" not in p.name and len(p.name) < 120
    store.append("../../etc/passwd", user("x"))
    assert store.path_for("../../etc/passwd").exists()


def test_lock_is_per_key(tmp_path):
    store = SessionStore(tmp_path)
    assert store.lock("a") is store.lock("a")
    assert store.lock("a") is not store.lock("b")


def test_compaction_keeps_tool_pairs_and_survives_reload(tmp_path):
    store = SessionStore(tmp_path)
    msgs = [user("q1"), assistant_tool("tu_1"), result("tu_1"), reply("a1"),
            user("q2"), assistant_tool("tu_2"), result("tu_2"), reply("a2")]
    for m in msgs:
        store.append("k", m)
    # Asking to keep from the tool_result of turn 2 (index 6) must move the cut back to the start of turn 2.
    assert store.compact("k", "User asked q1; answer a1.", keep_from_index=6)
    compacted = store.history("k")
    assert compacted[0]["content"][0]["text"] == f"{SUMMARY_PREFIX}\nUser asked q1; answer a1."
    assert compacted[0]["content"][1]["text"] == "q2"
    assert compacted[1:] == msgs[5:]
    assert SessionStore(tmp_path).history("k") == compacted
    assert SessionStore(tmp_path).full_transcript("k") == msgs  # the JSONL still holds everything
    assert records(store, "k")[-1]["type"] == "compaction"


def test_second_compaction_and_nothing_to_compact(tmp_path):
    store = SessionStore(tmp_path)
    for m in (user("q1"), reply("a1"), user("q2"), reply("a2"), user("q3"), reply("a3")):
        store.append("k", m)
    assert not store.compact("k", "nothing", keep_from_index=0)
    assert store.compact("k", "s1", keep_from_index=2)
    assert store.compact("k", "s2", keep_from_index=2)  # view: [s1+q2, a2, q3, a3] -> keep from q3
    history = SessionStore(tmp_path).history("k")
    assert [b["text"] for b in history[0]["content"]] == [f"{SUMMARY_PREFIX}\ns2", "q3"]
    assert len(history) == 2


def test_memory_holds_only_the_recently_used_sessions_and_a_forgotten_one_reads_back_the_same(tmp_path):
    """Every alert seeds a session: held forever, an hour of alerts grew the bot by ~150 MB. The cache is bounded;
    what it forgets is on disk and comes back whole (history, files, feedback, compaction)."""
    store = SessionStore(tmp_path, max_cached=5)
    store.append("slack:C1:1", user("first question"))
    store.append("slack:C1:1", assistant_tool("tu_1"))
    store.append("slack:C1:1", result("tu_1"))
    store.append("slack:C1:1", reply("an answer"))
    store.append("slack:C1:1", user("second question"))
    store.append("slack:C1:1", reply("second answer"))
    store.compact("slack:C1:1", "they asked twice", keep_from_index=2)
    store.add_files("slack:C1:1", [{"path": "/x.jpg", "media_type": "image/jpeg", "file_id": "F1", "name": "x"}])
    store.add_feedback("slack:C1:1", "good", "U1", "1.2")
    before = (store.history("slack:C1:1"), store.full_transcript("slack:C1:1"), store.files("slack:C1:1"),
              store.feedback("slack:C1:1"), store.length("slack:C1:1"))
    for n in range(2, 40):  # an hour of alerts, each seeding its own session
        store.append(f"slack:C2:{n}", user(f"alert {n}"))
    assert len(store._sessions) <= 5 and "slack:C1:1" not in store._sessions
    after = (store.history("slack:C1:1"), store.full_transcript("slack:C1:1"), store.files("slack:C1:1"),
             store.feedback("slack:C1:1"), store.length("slack:C1:1"))
    assert after == before
    store.append("slack:C1:1", user("third question"))  # appends go on after a reload, to the same file
    assert store.history("slack:C1:1")[-1]["content"][-1]["text"] == "third question"
    assert SessionStore(tmp_path).history("slack:C1:1") == store.history("slack:C1:1")


async def test_a_session_whose_turn_is_running_is_never_forgotten(tmp_path):
    """Its turn holds the lock: forgetting it would hand the next turn a second lock for the same thread."""
    store = SessionStore(tmp_path, max_cached=2)
    store.append("busy", user("q"))
    async with store.lock("busy"):
        lock = store.lock("busy")
        for n in range(10):
            store.append(f"other{n}", user("alert"))
        assert "busy" in store._sessions and store.lock("busy") is lock
    assert len(store._sessions) <= 3
