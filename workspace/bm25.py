"""BM25 over an inverted index held in numpy arrays: the scores of rank_bm25's BM25Okapi (Lucene's idf), per query
term a scatter-add over the notes that contain it instead of a Python loop over every note.

rank_bm25 reads every document's term counts for every query term: about 0.2 s per term at a million notes. Here a
term's postings (which notes have it, how often) are one slice of two arrays, so a query costs what its terms' notes
cost. The arithmetic is rank_bm25's, element for element in float64, so the scores are the same numbers (the
recall tests compare them on random corpora).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

K1, B = 1.5, 0.75  # BM25Okapi's defaults


class BM25:
    """The index of one list of tokenised notes; `scores(terms)` is one float64 per note."""

    def __init__(self, docs: Iterable[Sequence[str]]) -> None:
        vocab: dict[str, int] = {}
        term_ids: list[int] = []
        doc_ids: list[int] = []
        tfs: list[int] = []
        lengths: list[int] = []
        for n, doc in enumerate(docs):
            lengths.append(len(doc))
            counts: dict[str, int] = {}
            for term in doc:  # not Counter: its per-call Mapping check was half the build at a million notes
                counts[term] = counts.get(term, 0) + 1
            for term, tf in counts.items():
                term_ids.append(vocab.setdefault(term, len(vocab)))
                doc_ids.append(n)
                tfs.append(tf)
        self.size = len(lengths)
        doc_len = np.asarray(lengths, dtype=np.int64)
        avgdl = int(doc_len.sum()) / self.size if self.size else 0.0
        # rank_bm25: q_freq + k1 * (1 - b + b * doc_len / avgdl); the second term depends on the note only.
        self._norm = K1 * (1 - B + B * doc_len / avgdl) if avgdl else np.full(self.size, K1 * (1 - B))
        terms = np.asarray(term_ids, dtype=np.int64)
        order = np.argsort(terms, kind="stable")  # postings by term, each term's notes in note order
        self._docs = np.asarray(doc_ids, dtype=np.int64)[order]
        self._tfs = np.asarray(tfs, dtype=np.int64)[order]
        self._start = np.searchsorted(terms[order], np.arange(len(vocab) + 1))
        df = np.diff(self._start)
        n = self.size
        # Lucene's always-positive idf (as workspace/search.py gave rank_bm25): log(1 + (N - df + 0.5) / (df + 0.5))
        self._idf = {t: math.log(1 + (n - int(df[i]) + 0.5) / (int(df[i]) + 0.5)) for t, i in vocab.items()}
        self._vocab = vocab

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """Each note's BM25 score for the query terms (a repeated term counts again, as in rank_bm25)."""
        out = np.zeros(self.size)
        for term in terms:
            i = self._vocab.get(term)
            if i is None:
                continue
            lo, hi = self._start[i], self._start[i + 1]
            docs, tf = self._docs[lo:hi], self._tfs[lo:hi]
            out[docs] += self._idf[term] * (tf * (K1 + 1) / (tf + self._norm[docs]))
        return out

    def get_scores(self, terms: Sequence[str]) -> np.ndarray:
        """rank_bm25's name for `scores`."""
        return self.scores(terms)
