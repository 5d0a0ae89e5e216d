"""BM25 over an inverted index held in numpy arrays: the scores of rank_bm25's BM25Okapi (Lucene's idf), per query
term a scatter-add over the notes that contain it instead of a Python loop over every note.

rank_bm25 reads every document's term counts for every query term: about 0.2 s per term at a million notes. Here a
term's postings (which notes have it, how often) are one slice of two arrays, so a query costs what its terms' notes
cost. The arithmetic is rank_bm25's, element for element in float64, so the scores are the same numbers (the
recall tests compare them on random corpora).

Notes come and go one at a time (a camera writes a line, an edit drops one), so the index grows in place: a new
note's postings go to a small per-term tail that is merged into the arrays only when it has grown past a share of
them, and a removed note is masked. What depends on the whole corpus (N, the average length, each term's document
frequency) is kept as counts over the live notes and applied at query time, so the scores after any sequence of
adds and removes are the scores a fresh index of the live notes gives.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

K1, B = 1.5, 0.75  # BM25Okapi's defaults
MERGE_MIN = 20_000  # notes in the per-term tail before it is merged into the arrays ...
MERGE_SHARE = 0.125  # ... or this share of the notes already merged, whichever is more


def grown(arr: np.ndarray, need: int, factor: float = 2.0) -> np.ndarray:
    """`arr` with room for at least `need` rows (capacity grows by `factor`, so appending one at a time stays
    cheap; a big array grows by less, its copy and its spare room cost more)."""
    if len(arr) >= need:
        return arr
    out = np.zeros((max(need, int(factor * len(arr)), 16), *arr.shape[1:]), dtype=arr.dtype)
    out[: len(arr)] = arr
    return out


class BM25:
    """The index of a growing list of tokenised notes (row numbers never reused); `scores(terms)` is one float64
    per row, zero for removed rows."""

    def __init__(self, docs: Iterable[Sequence[str]] = ()) -> None:
        self._vocab: dict[str, int] = {}
        self._df = np.zeros(0, dtype=np.int64)  # live notes per term
        self._len = np.zeros(0, dtype=np.int64)  # per row (capacity-grown; rows past `size` unused)
        self._alive = np.zeros(0, dtype=bool)
        self.size = self.live = self._total = 0  # rows, live rows, live rows' summed length
        self._docs = np.zeros(0, dtype=np.int64)  # merged postings: term by term, each term's rows in row order
        self._tfs = np.zeros(0, dtype=np.int64)
        self._start: np.ndarray = np.zeros(1, dtype=np.int64)
        self._merged_rows = 0
        self._tail: dict[int, tuple[list[int], list[int]]] = {}  # term -> (rows, tfs) added since the merge
        self.add(docs)

    def add(self, docs: Iterable[Sequence[str]]) -> range:
        """Append notes; returns their row numbers."""
        first = self.size
        term_ids: list[int] = []
        doc_ids: list[int] = []
        tfs: list[int] = []
        lengths: list[int] = []
        vocab = self._vocab
        for n, doc in enumerate(docs, start=first):
            lengths.append(len(doc))
            counts: dict[str, int] = {}
            for term in doc:  # not Counter: its per-call Mapping check was half the build at a million notes
                counts[term] = counts.get(term, 0) + 1
            for term, tf in counts.items():
                term_ids.append(vocab.setdefault(term, len(vocab)))
                doc_ids.append(n)
                tfs.append(tf)
        self.size = first + len(lengths)
        self._len = grown(self._len, self.size)
        self._len[first:self.size] = lengths
        self._alive = grown(self._alive, self.size)
        self._alive[first:self.size] = True
        self.live += len(lengths)
        self._total += sum(lengths)
        self._df = grown(self._df, len(vocab))
        self._df[: len(vocab)] += np.bincount(np.asarray(term_ids, dtype=np.int64), minlength=len(vocab))
        if self.size - self._merged_rows > max(MERGE_MIN, int(self._merged_rows * MERGE_SHARE)):
            self._merge(term_ids, doc_ids, tfs)
        else:
            for t, d, f in zip(term_ids, doc_ids, tfs, strict=True):
                rows, fs = self._tail.setdefault(t, ([], []))
                rows.append(d)
                fs.append(f)
        return range(first, self.size)

    def remove(self, rows: Sequence[int], docs: Sequence[Sequence[str]]) -> None:
        """Drop rows (with the tokens they were added with); their postings stay until the next merge, masked."""
        for row, doc in zip(rows, docs, strict=True):
            if not self._alive[row]:
                continue
            self._alive[row] = False
            self.live -= 1
            self._total -= int(self._len[row])
            for term in set(doc):
                i = self._vocab.get(term)
                if i is not None:
                    self._df[i] -= 1

    def _merge(self, term_ids: list[int], doc_ids: list[int], tfs: list[int]) -> None:
        """One set of arrays from the merged postings, the tail and these new ones; removed rows' postings go."""
        old_terms = np.repeat(np.arange(len(self._start) - 1, dtype=np.int64), np.diff(self._start))
        tail_terms = [t for t, (rows, _) in self._tail.items() for _ in rows]
        tail_docs = [d for rows, _ in self._tail.values() for d in rows]
        tail_tfs = [f for _, fs in self._tail.values() for f in fs]
        terms = np.concatenate([old_terms, np.asarray(tail_terms + term_ids, dtype=np.int64)])
        docs = np.concatenate([self._docs, np.asarray(tail_docs + doc_ids, dtype=np.int64)])
        freqs = np.concatenate([self._tfs, np.asarray(tail_tfs + tfs, dtype=np.int64)])
        keep = self._alive[docs]
        terms, docs, freqs = terms[keep], docs[keep], freqs[keep]
        order = np.argsort(terms, kind="stable")  # by term; each term's rows stay in row order (appended so)
        self._docs, self._tfs = docs[order], freqs[order]
        self._start = np.asarray(np.searchsorted(terms[order], np.arange(len(self._vocab) + 1)), dtype=np.int64)
        self._tail, self._merged_rows = {}, self.size

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """Each row's BM25 score for the query terms (a repeated term counts again, as in rank_bm25)."""
        out = np.zeros(self.size)
        n = self.live
        avgdl = self._total / n if n else 0.0
        for term in terms:
            i = self._vocab.get(term)
            if i is None or not self._df[i]:
                continue
            docs, tf = self._postings(i)
            # rank_bm25: q_freq + k1 * (1 - b + b * doc_len / avgdl)
            norm = K1 * (1 - B + B * self._len[docs] / avgdl) if avgdl else np.full(len(docs), K1 * (1 - B))
            df = int(self._df[i])
            # Lucene's always-positive idf (as workspace/search.py gave rank_bm25): log(1 + (N - df + 0.5) / (df + 0.5))
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            out[docs] += idf * (tf * (K1 + 1) / (tf + norm))
        if self.live < self.size:
            out[~self._alive[: self.size]] = 0.0
        return out

    def _postings(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        if i + 1 < len(self._start):
            docs, tf = self._docs[self._start[i]:self._start[i + 1]], self._tfs[self._start[i]:self._start[i + 1]]
        else:
            docs = tf = np.zeros(0, dtype=np.int64)
        tail = self._tail.get(i)
        if tail is not None:
            docs = np.concatenate([docs, np.asarray(tail[0], dtype=np.int64)])
            tf = np.concatenate([tf, np.asarray(tail[1], dtype=np.int64)])
        return docs, tf

    def get_scores(self, terms: Sequence[str]) -> np.ndarray:
        """rank_bm25's name for `scores`."""
        return self.scores(terms)
