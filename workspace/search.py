"""Hybrid recall over memory/*.md: BM25 + embeddings, recency decay, MMR; incremental index under .index/.

Up to EXACT_MAX notes every note is scored (keywords and meaning) for every query. Past it, reading every vector
costs more than a query may (~450 ms at a million notes on two busy cores), so the meaning side reads the nearest
k-means lists (workspace/ann.py) and scores exactly the union of their best notes and BM25's best notes; the
keyword side stays exact for every note (workspace/bm25.py: an inverted index, so a query costs its terms' notes).
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from workspace.ann import IVF
from workspace.atomic import write_atomic
from workspace.bm25 import BM25
from workspace.chunking import Chunk, chunk_markdown, tokenize
from workspace.embeddings import Embedder, default_embedder

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "bm25", "vector"]
META_FILE, VECTORS_FILE, LISTS_FILE = "memory_meta.json", "memory_vectors.npy", "memory_lists.npz"
# Up to this many notes recall scores every note exactly; past it, the approximate path above. 50 k notes score in
# ~25 ms; the cap is where the approximate path starts to pay.
EXACT_MAX = 50_000
CANDIDATES = 256  # notes each side (meaning, keywords) proposes on the approximate path


@dataclass(frozen=True)
class Hit:
    """One search result: the matching text, its file name, a relevance score, and the note's day if dated."""

    text: str
    source: str
    score: float
    date: str | None = None


MIN_SIMILARITY = 0.2  # MiniLM cosine below this is unrelated text; it must not outrank "no match"


def _top(score: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, highest first (argpartition: a full sort of a million costs ~100 ms)."""
    if k >= len(score):
        return np.argsort(-score)
    part = np.argpartition(-score, k - 1)[:k]
    return part[np.argsort(-score[part])]


class MemoryIndex:
    """Search over root/memory; re-reads only changed files and embeds only chunks it has not seen."""

    def __init__(
        self,
        root: Path,
        use_embeddings: bool = True,
        clock: Callable[[], float] = time.time,
        embedder: Embedder | None = None,
        bm25_weight: float = 0.4,
        half_life_days: float = 30.0,
        recency_weight: float = 0.3,
        mmr_lambda: float = 0.7,
    ) -> None:
        self.root = Path(root)
        self.mem_dir = self.root / "memory"
        self.index_dir = self.root / ".index"
        self._clock = clock
        self._embedder = embedder if embedder is not None else (default_embedder() if use_embeddings else None)
        self.bm25_weight, self.half_life_days = bm25_weight, half_life_days
        self.recency_weight, self.mmr_lambda = recency_weight, mmr_lambda
        self._lock = threading.RLock()
        self._files: dict[str, dict[str, Any]] = {}  # name -> {"mtime_ns", "size", "chunks": [Chunk]}
        self._vectors: dict[str, np.ndarray] = {}  # chunk key -> unit vector
        self._chunks: list[Chunk] = []
        self._bm25: Any = None
        self._matrix: np.ndarray | None = None
        self._ivf: IVF | None = None  # the matrix's k-means lists, past EXACT_MAX notes
        self._ivf_known: dict[str, int] = {}  # note key -> its list, kept across refreshes (a new note joins one)
        self._lists_dirty = False  # the lists changed since they were saved
        self._audience_codes: np.ndarray = np.zeros(0, dtype=np.int32)  # per note: index into _audiences
        self._audiences: list[str] = []
        self.exact_max = EXACT_MAX
        self.last_refresh: dict[str, int] = {"files_read": 0, "embedded": 0}
        self._recency_cache: tuple[tuple[Any, int], np.ndarray] | None = None
        self._generation = 0  # bumped whenever the chunk list is rebuilt
        self._load()

    # persistence --------------------------------------------------------
    def _load(self) -> None:
        meta_path, vec_path = self.index_dir / META_FILE, self.index_dir / VECTORS_FILE
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            self._files = {
                name: {**f, "chunks": [Chunk(**c) for c in f["chunks"]]} for name, f in meta["files"].items()
            }
            if vec_path.exists() and meta.get("model") == self._model_name():
                arr = np.load(vec_path)
                self._vectors = dict(zip(meta["vector_keys"], arr, strict=True))
        except FileNotFoundError:
            return
        except (OSError, EOFError, ValueError, KeyError, TypeError, RecursionError) as exc:  # a damaged index is
            # rebuilt from the files
            log.warning("memory index unreadable (%s); rebuilding it", exc)
            self._files, self._vectors = {}, {}

    def _save(self) -> None:
        self.index_dir.mkdir(parents=True, exist_ok=True)
        live = {c.key for c in self._chunks}
        keys = [k for k in self._vectors if k in live]
        meta = {
            "model": self._model_name(),
            "files": {
                n: {"mtime_ns": f["mtime_ns"], "size": f["size"], "chunks": [asdict(c) for c in f["chunks"]]}
                for n, f in self._files.items()
            },
            "vector_keys": keys,
        }
        if keys:
            vec_tmp = self.index_dir / (VECTORS_FILE + ".tmp")
            with open(vec_tmp, "wb") as fh:
                np.save(fh, np.stack([self._vectors[k] for k in keys]).astype(np.float32, copy=False))
            vec_tmp.replace(self.index_dir / VECTORS_FILE)  # another process may be loading the index right now
        write_atomic(self.index_dir / META_FILE, json.dumps(meta))
        if self._ivf is not None and self._lists_dirty:
            self._ivf.save(self.index_dir / LISTS_FILE, [c.key for c in self._chunks])
            self._lists_dirty = False

    def _model_name(self) -> str | None:
        return self._embedder.name if self._embedder is not None else None

    # refresh ------------------------------------------------------------
    def refresh(self) -> bool:
        """Bring the index up to date with the files; True if anything changed."""
        with self._lock:
            seen: dict[str, tuple[int, int]] = {}
            for p in self.mem_dir.glob("*.md") if self.mem_dir.is_dir() else []:
                st = p.stat()
                seen[p.name] = (st.st_mtime_ns, st.st_size)
            changed = [
                n
                for n, sig in seen.items()
                if (self._files.get(n, {}).get("mtime_ns"), self._files.get(n, {}).get("size")) != sig
            ]
            removed = [n for n in self._files if n not in seen]
            for n in removed:
                del self._files[n]
            for n in changed:
                text = (self.mem_dir / n).read_text(encoding="utf-8", errors="replace")
                self._files[n] = {"mtime_ns": seen[n][0], "size": seen[n][1], "chunks": chunk_markdown(text, n)}
            dirty = bool(changed or removed) or self._bm25 is None
            if dirty:
                self._chunks = [c for n in sorted(self._files) for c in self._files[n]["chunks"]]
                self._generation += 1
                self._bm25 = BM25(tokenize(c.context_text) for c in self._chunks) if self._chunks else None
                names: dict[str, int] = {}
                self._audience_codes = np.fromiter((names.setdefault(c.audience, len(names)) for c in self._chunks),
                                                   dtype=np.int32, count=len(self._chunks))
                self._audiences = list(names)
            embedded = self._embed_missing() if dirty or self._matrix is None else 0
            if dirty or embedded:
                self._matrix = self._build_matrix()
                self._ivf = self._build_lists()
                if changed or removed or embedded or self._lists_dirty:  # a restart with nothing new writes nothing
                    self._save()
            self.last_refresh = {"files_read": len(changed), "embedded": embedded}
            return dirty or bool(embedded)

    def _embed_missing(self) -> int:
        if self._embedder is None or not self._embedder.available():
            return 0
        todo = {c.key: c.context_text for c in self._chunks if c.key not in self._vectors}
        if not todo:
            return 0
        vecs = self._embedder.encode(list(todo.values()))
        if vecs is None:
            return 0
        self._vectors.update(zip(todo.keys(), vecs, strict=True))
        return len(todo)

    def _build_matrix(self) -> np.ndarray | None:
        if not self._chunks or any(c.key not in self._vectors for c in self._chunks):
            return None
        return np.stack([self._vectors[c.key] for c in self._chunks])

    def _build_lists(self) -> IVF | None:
        """The k-means lists of a matrix past EXACT_MAX notes: loaded if saved for these notes, else built (the
        previous lists and centroids reused where they still fit)."""
        matrix = self._matrix
        if matrix is None or len(matrix) <= self.exact_max:
            self._ivf_known = {}
            return None
        keys = [c.key for c in self._chunks]
        ivf = IVF.load(self.index_dir / LISTS_FILE, keys) if self._ivf is None else None
        if ivf is None:
            ivf = IVF.build(matrix, keys, self._ivf, self._ivf_known)
            self._lists_dirty = True
        self._ivf_known = dict(zip(keys, ivf.assign.tolist(), strict=True))
        return ivf

    @property
    def embeddings_ready(self) -> bool:
        return self._matrix is not None

    # search -------------------------------------------------------------
    def search(self, query: str, max_results: int = 5, mode: Mode = "hybrid",
               visible: Callable[[str], bool] | None = None) -> list[Hit]:
        """Best notes for the query: weighted BM25 + cosine, decayed by age, diversified with MMR.

        visible: which audiences the asker may read; other notes score zero, so they are never returned.
        """
        self.refresh()
        with self._lock:
            chunks, bm25, matrix, gen, ivf = self._chunks, self._bm25, self._matrix, self._generation, self._ivf
            codes, audiences = self._audience_codes, self._audiences
        if not chunks:
            return []
        kw: np.ndarray = np.zeros(len(chunks))
        if mode != "vector" or matrix is None:  # no vectors: keywords are all there is
            terms = tokenize(query)
            if terms and bm25 is not None:
                raw = np.asarray(bm25.get_scores(terms), dtype=np.float64)
                kw = raw / raw.max() if raw.max() > 0 else kw
        embed = mode != "bm25" and matrix is not None and self._embedder is not None
        query_vecs = self._embedder.encode([query]) if embed and self._embedder is not None else None
        if mode == "bm25" or matrix is None or query_vecs is None:
            score = kw
        elif ivf is None:
            sims: np.ndarray = matrix @ query_vecs[0]
            vec = np.where(sims >= MIN_SIMILARITY, sims, 0.0)
            score = vec if mode == "vector" else self.bm25_weight * kw + (1 - self.bm25_weight) * vec
        else:
            score = self._approximate(matrix, ivf, query_vecs[0], kw, mode)
        score = score * self._recency(chunks, gen)
        if visible is not None:
            score = score * np.array([1.0 if visible(a) else 0.0 for a in audiences])[codes]
        return self._mmr(chunks, score, matrix, max_results)

    def _approximate(self, matrix: np.ndarray, ivf: IVF, query: np.ndarray, kw: np.ndarray, mode: Mode) -> np.ndarray:
        """The exact path's scores for the notes that can rank: the nearest lists' best notes and BM25's best notes
        get their cosine; every other note keeps its keyword part only (its cosine counts as under MIN_SIMILARITY)."""
        rows, _ = ivf.search(matrix, query, CANDIDATES)
        if mode != "vector":
            best = _top(kw, CANDIDATES)
            rows = np.union1d(rows, best[kw[best] > 0])
        sims = matrix[rows] @ query
        vec = np.where(sims >= MIN_SIMILARITY, sims, 0.0)
        score = np.zeros(len(kw)) if mode == "vector" else self.bm25_weight * kw
        score[rows] += vec if mode == "vector" else (1 - self.bm25_weight) * vec
        return score

    def _recency(self, chunks: list[Chunk], gen: int) -> np.ndarray:
        """Dated notes lose up to recency_weight of their score, half of it every half_life_days."""
        today = datetime.fromtimestamp(self._clock()).date()
        if self._recency_cache is not None and self._recency_cache[0] == (today, gen):
            return self._recency_cache[1]  # the same chunk list on the same day: reuse, it is per query otherwise
        factors: dict[str | None, float] = {None: 1.0}  # KNOWLEDGE.md and other undated notes are evergreen
        for day in {c.date for c in chunks} - {None}:
            try:
                age = max(0, (today - datetime.strptime(str(day), "%Y-%m-%d").date()).days)
            except ValueError:
                age = 0
            factors[day] = (1 - self.recency_weight) + self.recency_weight * 0.5 ** (age / self.half_life_days)
        # one factor per day, looked up per note (a million notes share a few thousand days)
        out = np.fromiter((factors[c.date] for c in chunks), dtype=np.float64, count=len(chunks))
        self._recency_cache = ((today, gen), out)
        return out

    def _mmr(self, chunks: list[Chunk], score: np.ndarray, matrix: np.ndarray | None, k: int) -> list[Hit]:
        """Maximal marginal relevance: each pick trades relevance against similarity to the ones already picked."""
        order = np.argsort(-score) if len(score) <= self.exact_max else _top(score, max(4 * k, 20))
        pool = [int(i) for i in order[: max(4 * k, 20)] if score[i] > 0]
        if not pool:
            return []
        top = float(score[pool[0]])
        tokens = {i: set(tokenize(chunks[i].context_text)) for i in pool} if matrix is None else {}
        picked: list[int] = []
        while pool and len(picked) < k:
            best, best_val = pool[0], -math.inf
            for i in pool:
                sim = max((self._sim(i, j, matrix, tokens) for j in picked), default=0.0)
                val = self.mmr_lambda * score[i] / top - (1 - self.mmr_lambda) * sim
                if val > best_val:
                    best, best_val = i, val
            picked.append(best)
            pool.remove(best)
        return [
            Hit(chunks[i].context_text, chunks[i].source, round(float(score[i]), 4), chunks[i].date) for i in picked
        ]

    @staticmethod
    def _sim(i: int, j: int, matrix: np.ndarray | None, tokens: dict[int, set[str]]) -> float:
        if matrix is not None:
            return float(matrix[i] @ matrix[j])
        a, b = tokens[i], tokens[j]
        return len(a & b) / len(a | b) if a and b else 0.0
