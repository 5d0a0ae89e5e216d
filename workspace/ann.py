"""Approximate nearest notes for large memories: an inverted file (IVF) of k-means lists over the unit vectors.

Scoring every note is one matrix-vector product: ~5 ms at 10 k notes, but ~450 ms at a million on two busy cores
(1.5 GB of float32 read per query). Past `workspace.search.EXACT_MAX` notes the vectors are grouped into about
sqrt(N) lists around k-means centroids; a query compares itself with the centroids and reads only the `probe`
nearest lists (a few percent of the notes). New notes are appended rows: every query reads them (the tail) until
they are many enough to file under their nearest lists without re-clustering (`extend`); the centroids are trained
again only when the notes have grown by half since.

The notes least like any centroid are read by every query (the spill list): routine notes cluster tightly (cosine
0.75+ to their centroid) but the unusual note someone later asks about (the fire, the stolen bike) sits at 0.3 to
0.45 from every centroid, so its list is often not among a query's nearest ones (measured on the recall bench:
without the spill list it missed the one planted note of 18 whose list ranked 39th of 54).

The lists keep their own copy of the vectors in list order (`IVF.vectors`: the spill list first, then list by
list), so a query scores each probed list as one contiguous slice. Reading the ~50 k rows of 32 lists from their
scattered places in the row-ordered matrix cost 33-50 ms at a million notes; the same rows as slices cost 6-16 ms.
The copy is derived from the matrix whenever the lists are built, extended or renumbered, and never written to
disk: nothing on disk can be stale or damaged, the store stays one vector file, and at a million notes the copy
costs ~1.5 GB of memory and ~0.6 s to make at start-up.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

TRAIN_SAMPLE = 64  # training rows per list (k-means on a sample: the centroids, not every note, need training)
ITERATIONS = 8
PROBE = 32  # lists read per query
RETRAIN_GROWTH = 1.5  # retrain when the notes have grown by this factor since the centroids were trained
TAIL_MIN = 4_096  # rows appended since the lists were filed that every query reads, before they are filed ...
TAIL_SHARE = 0.01  # ... or this share of the rows, whichever is more (10 k rows at a million: ~4 ms a query)
SPILL_SIMILARITY = 0.6  # a note less similar than this to its centroid is read by every query ...
SPILL_MAX = 0.02  # ... the least similar ones, up to this share of the notes


def nearest(rows: np.ndarray, centroids: np.ndarray, batch: int = 65_536) -> np.ndarray:
    """The list (nearest centroid by dot product) of each row, in batches so memory stays bounded."""
    out = np.empty(len(rows), dtype=np.int32)
    for s in range(0, len(rows), batch):
        out[s:s + batch] = np.argmax(rows[s:s + batch] @ centroids.T, axis=1)
    return out


def train(matrix: np.ndarray, lists: int, seed: int = 0) -> np.ndarray:
    """Spherical k-means centroids (unit rows) from a sample of the matrix."""
    rng = np.random.default_rng(seed)
    take = min(len(matrix), lists * TRAIN_SAMPLE)
    sample = matrix[np.sort(rng.choice(len(matrix), take, replace=False))]
    centroids = sample[rng.choice(take, lists, replace=False)].copy()
    for _ in range(ITERATIONS):
        assign = nearest(sample, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, sample)
        empty = ~sums.any(axis=1)
        sums[empty] = sample[rng.choice(take, int(empty.sum()), replace=False)]  # an empty list restarts elsewhere
        centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return centroids.astype(np.float32)


def similarities(matrix: np.ndarray, centroids: np.ndarray, assign: np.ndarray, batch: int = 65_536) -> np.ndarray:
    """Each row's similarity to its own centroid."""
    sims = np.empty(len(assign), dtype=np.float32)
    for s in range(0, len(assign), batch):
        sims[s:s + batch] = np.einsum("ij,ij->i", matrix[s:s + batch], centroids[assign[s:s + batch]])
    return sims


def spilled(sims: np.ndarray) -> np.ndarray:
    """The rows least like their own centroid (under SPILL_SIMILARITY, at most SPILL_MAX of them), by row number."""
    far = np.flatnonzero(sims < SPILL_SIMILARITY)
    cap = max(1, int(len(sims) * SPILL_MAX))
    if len(far) > cap:
        far = far[np.argpartition(sims[far], cap - 1)[:cap]]
    return np.sort(far).astype(np.int64)


class IVF:
    """The lists of the first `covered` rows of a matrix: `order` holds their row numbers, the spill list's first
    (`order[:starts[0]]`), then list by list (list c is `order[starts[c]:starts[c + 1]]`, the spilled rows not in
    it); `vectors` holds those rows' vectors in that order. Rows appended since (the tail) are read by every query
    until `extend` files them."""

    def __init__(self, centroids: np.ndarray, assign: np.ndarray, trained_on: int, sims: np.ndarray,
                 matrix: np.ndarray) -> None:
        self.centroids, self.assign, self.trained_on, self.sims = centroids, assign, trained_on, sims
        self.covered = len(assign)
        self.spill = spilled(sims)
        listed = np.ones(self.covered, dtype=bool)
        listed[self.spill] = False  # read by every query already: in no list, so no row is scored twice
        rows = np.flatnonzero(listed)
        rows = rows[np.argsort(assign[rows], kind="stable")]
        self.order = np.concatenate([self.spill, rows]).astype(np.int64)
        self.starts = len(self.spill) + np.searchsorted(assign[rows], np.arange(len(centroids) + 1))
        # np.take, not matrix[order]: 5x faster at a million rows (measured 0.6 vs 3-5 s)
        self.vectors = np.take(matrix[: self.covered], self.order, axis=0)

    @classmethod
    def build(cls, matrix: np.ndarray) -> IVF:
        """Centroids trained on `matrix` and every row filed under its nearest."""
        n = len(matrix)
        centroids = train(matrix, max(16, int(np.sqrt(n))))
        assign = nearest(matrix, centroids)
        return cls(centroids, assign, n, similarities(matrix, centroids, assign), matrix)

    def extend(self, matrix: np.ndarray) -> IVF:
        """The same centroids with the rows appended since filed under their nearest (no training)."""
        tail = matrix[self.covered:]
        assign = nearest(tail, self.centroids)
        sims = similarities(tail, self.centroids, assign)
        return IVF(self.centroids, np.concatenate([self.assign, assign]), self.trained_on,
                   np.concatenate([self.sims, sims]), matrix)

    def kept(self, rows: np.ndarray, matrix: np.ndarray) -> IVF:
        """The lists after the store kept only `rows` (old numbers) and numbered them 0.. in that order; `matrix`
        is the renumbered one. Rows the lists held keep their list, the tail's are filed now (no training)."""
        inside = rows < self.covered
        assign = np.empty(len(rows), dtype=np.int32)
        sims = np.empty(len(rows), dtype=np.float32)
        assign[inside], sims[inside] = self.assign[rows[inside]], self.sims[rows[inside]]
        if not inside.all():
            tail = matrix[~inside]
            assign[~inside] = nearest(tail, self.centroids)
            sims[~inside] = similarities(tail, self.centroids, assign[~inside])
        return IVF(self.centroids, assign, self.trained_on, sims, matrix)

    def search(self, matrix: np.ndarray, query: np.ndarray, k: int, probe: int = PROBE) -> tuple[np.ndarray, np.ndarray]:
        """(rows, similarities) of about the `k` most similar rows among the `probe` nearest lists, the spill list
        and the tail, each scored as one contiguous slice (of `vectors`, or of `matrix` for the tail)."""
        near = np.argpartition(-(self.centroids @ query), min(probe, len(self.centroids)) - 1)[:probe]
        near.sort()  # the slices in memory order: kinder to the caches
        spans = [(0, int(self.starts[0]))] + [(int(self.starts[c]), int(self.starts[c + 1])) for c in near]
        spans = [(a, b) for a, b in spans if b > a]
        rows = np.concatenate([self.order[a:b] for a, b in spans]
                              + [np.arange(self.covered, len(matrix), dtype=np.int64)])
        if not len(rows):
            return rows, np.zeros(0, dtype=np.float32)
        sims = np.concatenate([self.vectors[a:b] @ query for a, b in spans] + [matrix[self.covered:] @ query])
        if len(rows) > k:
            top = np.argpartition(-sims, k - 1)[:k]
            rows, sims = rows[top], sims[top]
        return rows, sims

    # persistence: beside the vectors, valid for the store generation (epoch) it was built in ---------------------
    def save(self, path: Path, epoch: str) -> None:
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as fh:
            np.savez(fh, centroids=self.centroids, assign=self.assign, trained_on=np.int64(self.trained_on),
                     sims=self.sims, epoch=np.array(epoch))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path, epoch: str, matrix: np.ndarray) -> IVF | None:
        """The saved lists if they were built in this store generation for at most the matrix's rows (rows are
        only appended within one, so the lists still hold); None when missing, stale or damaged (then they are
        built again: a damaged file never stops start-up). Their list-ordered vectors are taken from `matrix`."""
        try:
            with np.load(path, allow_pickle=False) as z:
                if "epoch" not in z or str(z["epoch"]) != epoch or len(z["assign"]) > len(matrix):
                    return None
                assign, sims = z["assign"].astype(np.int32), z["sims"].astype(np.float32)
                if len(sims) != len(assign) or (len(assign) and not 0 <= int(assign.min()) <= int(assign.max())
                                                < len(z["centroids"])):
                    raise ValueError("lists and centroids disagree")
                centroids = z["centroids"].astype(np.float32)
                if centroids.ndim != 2 or centroids.shape[1] != matrix.shape[1]:
                    raise ValueError("centroids of another width")
                return cls(centroids, assign, int(z["trained_on"]), sims, matrix)
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - torn zip, bad header, wrong shapes: all mean "build them again"
            log.warning("memory index lists unreadable (%s); building them again", exc)
            return None
