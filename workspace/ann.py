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

The lists keep their own copy of the vectors in list order (`Segment`), so a query scores each probed list as
contiguous slices. Reading the ~50 k rows of 32 lists from their scattered places in the row-ordered matrix cost
33-50 ms at a million notes; the same rows as slices cost 6-16 ms.
The copy is derived from the matrix whenever the lists are built, extended or renumbered, and never written to
disk: nothing on disk can be stale or damaged, the store stays one vector file, and at a million notes the copy
costs ~1.5 GB of memory and ~0.6 s to make at start-up.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
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
SEGMENTS_MAX = 8  # extends that copy only their new rows, before the lists are copied afresh as one ...
RESTACK_SHARE = 0.1  # ... or once the rows filed since the last full copy are this share of the rows


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


@dataclass(frozen=True)
class Segment:
    """Rows filed under the lists at one time, list by list: list c's rows are `order[starts[c]:starts[c + 1]]`,
    their vectors the same slice of `vectors` (a copy in that order)."""

    order: np.ndarray
    starts: np.ndarray
    vectors: np.ndarray

    @classmethod
    def of(cls, matrix: np.ndarray, assign: np.ndarray, rows: np.ndarray, lists: int) -> Segment:
        rows = rows[np.argsort(assign[rows], kind="stable")].astype(np.int64)
        # np.take, not matrix[rows]: 5x faster at a million rows (measured 0.6 vs 3-5 s)
        return cls(rows, np.searchsorted(assign[rows], np.arange(lists + 1)), np.take(matrix, rows, axis=0))


class IVF:
    """The lists of the first `covered` rows of a matrix, in segments (`Segment`): the first made when the lists
    were built (or renumbered), one more each time `extend` filed the rows appended since. The spilled rows are in
    no list: they have their own block (`spill`, `spill_vectors`), so no row is scored twice. Rows appended since
    the last extend (the tail) are read by every query until `extend` files them.

    Extending copies only the new rows (a new segment) until the segments are SEGMENTS_MAX or the rows filed since
    the first segment pass RESTACK_SHARE of the rows; then the lists are copied afresh into one segment. (Copying
    all of them at every extend cost 0.7-4.8 s at a million rows, once every ~10 k new notes, under the index's
    lock; a segment of 10 k rows costs milliseconds, and a query reads each probed list's slice in every segment.)"""

    segments: list[Segment]
    copied: int
    spill: np.ndarray
    spill_vectors: np.ndarray

    def __init__(self, centroids: np.ndarray, assign: np.ndarray, trained_on: int, sims: np.ndarray,
                 matrix: np.ndarray, base: IVF | None = None) -> None:
        self.centroids, self.assign, self.trained_on, self.sims = centroids, assign, trained_on, sims
        self.covered = len(assign)
        lists, matrix = len(centroids), matrix[: self.covered]
        if base is not None and len(base.segments) < SEGMENTS_MAX and \
                self.covered - base.copied <= RESTACK_SHARE * self.covered:
            new = np.arange(base.covered, self.covered, dtype=np.int64)
            far = new[spilled(sims[base.covered:])]  # the new rows' own least-like ones, at most SPILL_MAX of them
            self.spill = np.concatenate([base.spill, far])
            self.spill_vectors = np.concatenate([base.spill_vectors, np.take(matrix, far, axis=0)])
            self.segments = [*base.segments, Segment.of(matrix, assign, np.setdiff1d(new, far), lists)]
            self.copied = base.copied
            return
        self.spill = spilled(sims)
        self.spill_vectors = np.take(matrix, self.spill, axis=0)
        listed = np.ones(self.covered, dtype=bool)
        listed[self.spill] = False
        self.segments = [Segment.of(matrix, assign, np.flatnonzero(listed), lists)]
        self.copied = self.covered  # rows copied into the first segment

    @property
    def order(self) -> np.ndarray:
        """Every covered row once, as the lists hold them: the spilled ones, then segment by segment."""
        return np.concatenate([self.spill, *(s.order for s in self.segments)])

    @property
    def vectors(self) -> np.ndarray:
        """The lists' copy of the vectors of `order`, in that order."""
        return np.concatenate([self.spill_vectors, *(s.vectors for s in self.segments)])

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
                   np.concatenate([self.sims, sims]), matrix, base=self)

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
        and the tail, each scored as contiguous slices (of the lists' copy, or of `matrix` for the tail)."""
        near = np.argpartition(-(self.centroids @ query), min(probe, len(self.centroids)) - 1)[:probe]
        near.sort()  # the slices in memory order: kinder to the caches
        spans = [(seg, int(seg.starts[c]), int(seg.starts[c + 1])) for seg in self.segments for c in near]
        spans = [(seg, a, b) for seg, a, b in spans if b > a]
        rows = np.concatenate([self.spill, *(seg.order[a:b] for seg, a, b in spans),
                               np.arange(self.covered, len(matrix), dtype=np.int64)])
        if not len(rows):
            return rows, np.zeros(0, dtype=np.float32)
        sims = np.concatenate([self.spill_vectors @ query, *(seg.vectors[a:b] @ query for seg, a, b in spans),
                               matrix[self.covered:] @ query])
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
