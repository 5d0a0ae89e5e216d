"""Approximate nearest notes for large memories: an inverted file (IVF) of k-means lists over the unit vectors.

Scoring every note is one matrix-vector product: ~5 ms at 10 k notes, but ~450 ms at a million on two busy cores
(1.5 GB of float32 read per query). Past `workspace.search.EXACT_MAX` notes the vectors are grouped into about
sqrt(N) lists around k-means centroids; a query compares itself with the centroids and reads only the `probe`
nearest lists (a few percent of the notes). The lists are kept per note key, so a new note joins its nearest list
without re-clustering; the centroids are trained again only when the notes have grown by half since.

The notes least like any centroid are read by every query (the spill list): routine notes cluster tightly (cosine
0.75+ to their centroid) but the unusual note someone later asks about (the fire, the stolen bike) sits at 0.3 to
0.45 from every centroid, so its list is often not among a query's nearest ones (measured on the recall bench:
without the spill list it missed the one planted note of 18 whose list ranked 39th of 54).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

TRAIN_SAMPLE = 64  # training rows per list (k-means on a sample: the centroids, not every note, need training)
ITERATIONS = 8
PROBE = 32  # lists read per query
RETRAIN_GROWTH = 1.5  # retrain when the notes have grown by this factor since the centroids were trained
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


def spilled(matrix: np.ndarray, centroids: np.ndarray, assign: np.ndarray, batch: int = 65_536) -> np.ndarray:
    """The rows least like their own centroid (under SPILL_SIMILARITY, at most SPILL_MAX of them), by row number."""
    sims = np.empty(len(matrix), dtype=np.float32)
    for s in range(0, len(matrix), batch):
        sims[s:s + batch] = np.einsum("ij,ij->i", matrix[s:s + batch], centroids[assign[s:s + batch]])
    far = np.flatnonzero(sims < SPILL_SIMILARITY)
    cap = max(1, int(len(matrix) * SPILL_MAX))
    if len(far) > cap:
        far = far[np.argpartition(sims[far], cap - 1)[:cap]]
    return np.sort(far).astype(np.int64)


class IVF:
    """The lists of one matrix: `order` holds the row numbers list by list, `starts` where each list begins."""

    def __init__(self, centroids: np.ndarray, assign: np.ndarray, trained_on: int, spill: np.ndarray) -> None:
        self.centroids, self.assign, self.trained_on, self.spill = centroids, assign, trained_on, spill
        self.order = np.argsort(assign, kind="stable")
        self.starts = np.searchsorted(assign[self.order], np.arange(len(centroids) + 1))

    @classmethod
    def build(cls, matrix: np.ndarray, keys: list[str], previous: IVF | None = None,
              known: dict[str, int] | None = None) -> IVF:
        """Lists for `matrix` (rows in `keys` order): the previous centroids and each known key's list where they
        still fit, else trained anew."""
        n = len(matrix)
        if previous is not None and known is not None and n <= previous.trained_on * RETRAIN_GROWTH:
            assign = np.fromiter((known.get(k, -1) for k in keys), dtype=np.int32, count=n)
            new = np.flatnonzero(assign < 0)
            if len(new):
                assign[new] = nearest(matrix[new], previous.centroids)
            return cls(previous.centroids, assign, previous.trained_on, spilled(matrix, previous.centroids, assign))
        lists = max(16, int(np.sqrt(n)))
        centroids = train(matrix, lists)
        assign = nearest(matrix, centroids)
        return cls(centroids, assign, n, spilled(matrix, centroids, assign))

    def search(self, matrix: np.ndarray, query: np.ndarray, k: int, probe: int = PROBE) -> tuple[np.ndarray, np.ndarray]:
        """(rows, similarities) of about the `k` most similar rows among the `probe` nearest lists."""
        near = np.argpartition(-(self.centroids @ query), min(probe, len(self.centroids)) - 1)[:probe]
        rows = np.concatenate([self.spill, *(self.order[self.starts[c]:self.starts[c + 1]] for c in near)])
        rows = np.unique(rows)  # sorted: reading the matrix in row order is kinder to the page cache
        if not len(rows):
            return rows, np.zeros(0, dtype=np.float32)
        sims = matrix[rows] @ query
        if len(rows) > k:
            top = np.argpartition(-sims, k - 1)[:k]
            rows, sims = rows[top], sims[top]
        return rows, sims

    # persistence: beside the vectors, checked against the keys it was built for ---------------------------------
    @staticmethod
    def digest(keys: list[str]) -> str:
        h = hashlib.sha1()
        for k in keys:
            h.update(k.encode("ascii", "replace"))
        return h.hexdigest()

    def save(self, path: Path, keys: list[str]) -> None:
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as fh:
            np.savez(fh, centroids=self.centroids, assign=self.assign, trained_on=np.int64(self.trained_on),
                     spill=self.spill, digest=np.array(self.digest(keys)))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path, keys: list[str]) -> IVF | None:
        """The saved lists if they were built for exactly these keys; None when missing, stale or damaged (then
        they are built again: a damaged file never stops start-up)."""
        try:
            with np.load(path, allow_pickle=False) as z:
                if str(z["digest"]) != cls.digest(keys) or len(z["assign"]) != len(keys):
                    return None
                return cls(z["centroids"], z["assign"].astype(np.int32), int(z["trained_on"]),
                           z["spill"].astype(np.int64))
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - torn zip, bad header, wrong shapes: all mean "build them again"
            log.warning("memory index lists unreadable (%s); building them again", exc)
            return None
