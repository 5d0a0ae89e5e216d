"""Hybrid recall over memory/*.md: BM25 + embeddings, recency decay, MMR; incremental index under .index/.

Up to EXACT_MAX notes every note is scored (keywords and meaning) for every query. Past it, reading every vector
costs more than a query may (~450 ms at a million notes on two busy cores), so the meaning side reads the nearest
k-means lists (workspace/ann.py) and scores exactly the union of their best notes and BM25's best notes; the
keyword side stays exact for every note (workspace/bm25.py: an inverted index, so a query costs its terms' notes).

Notes are rows that are only appended (workspace/index_store.py: a log and a vector file under .index/): a changed
memory file keeps the rows of the chunks it still has, adds rows for its new ones and drops the rest, so one new
note costs one row and one log line whatever the memory's size. Dropped rows are masked until they are a quarter of
the rows; then the store is written afresh.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from workspace.ann import IVF, RETRAIN_GROWTH, TAIL_MIN, TAIL_SHARE
from workspace.bm25 import BM25, grown
from workspace.chunking import Chunk, chunk_markdown, tokenize
from workspace.embeddings import Embedder, default_embedder
from workspace.index_store import Change, Store

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "bm25", "vector"]
LISTS_FILE = "memory_lists.npz"
META_FILE, VECTORS_FILE = "memory_meta.json", "memory_vectors.npy"  # the store before workspace/index_store.py
COMPACT_SHARE, COMPACT_MIN = 0.25, 1_000  # the store is written afresh when dropped rows pass both
# Up to this many notes recall scores every note exactly; past it, the approximate path above. 50 k notes score in
# ~25 ms; the cap is where the approximate path starts to pay.
EXACT_MAX = 50_000
TIES_MAX = 4_096  # notes tied at the cut of the best ones put in text order (more: row order decides)
CANDIDATES = 256  # notes each side (meaning, keywords) proposes on the approximate path


@dataclass(frozen=True)
class Hit:
    """One search result: the matching text, its file name, a relevance score, and the note's day if dated."""

    text: str
    source: str
    score: float
    date: str | None = None


MIN_SIMILARITY = 0.2  # MiniLM cosine below this is unrelated text; it must not outrank "no match"


_blas: Any = None  # threadpoolctl's controller, found once (looking the libraries up costs milliseconds)


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread for a query: its products here are small, and on cores shared with the
    pipelines two BLAS threads waited on each other (2 threads were 3x slower than 1 at load 12)."""
    global _blas
    if _blas is None:
        try:
            from threadpoolctl import ThreadpoolController  # comes with scikit-learn (sentence-transformers')
            _blas = ThreadpoolController()
        except Exception:  # noqa: BLE001 - not installed or no BLAS found: the query runs as numpy set it up
            _blas = False
    if _blas is False:
        yield
        return
    with _blas.limit(limits=1, user_api="blas"):
        yield


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
        self._store = Store(self.index_dir, self._model_name())
        self._files: dict[str, dict[str, Any]] = {}  # name -> {"mtime_ns", "size", "rows": [row]}
        self._generation = 0  # bumped whenever the rows are numbered afresh
        self._reset([], [], [], None)
        self.exact_max = EXACT_MAX
        self.last_refresh: dict[str, int] = {"files_read": 0, "embedded": 0}
        self._recency_cache: tuple[tuple[Any, ...], np.ndarray] | None = None
        self._lists_saved: IVF | None = None  # the lists saved for the rows loaded, until they are used
        self._load()

    def _reset(self, chunks: list[Chunk], alive: list[bool], embedded: list[bool], vectors: np.ndarray | None) -> None:
        """The in-memory index of these rows (dropped ones included, masked)."""
        self._chunks: list[Chunk] = []
        self._alive = np.zeros(0, dtype=bool)
        self._embedded = np.zeros(0, dtype=bool)  # per row: its vector is in _buf
        self._buf: np.ndarray | None = None  # (capacity, width) float32; rows past len(_chunks) unused
        self._bm25: Any = BM25()
        self._dead = 0
        self._audience_index: dict[str, int] = {}
        self._audience_codes = np.zeros(0, dtype=np.int32)  # per row: index into _audiences
        self._audiences: list[str] = []
        self._day_index: dict[str | None, int] = {}
        self._day_codes = np.zeros(0, dtype=np.int32)  # per row: index into _days
        self._days: list[str | None] = []
        self._ivf: IVF | None = None  # the matrix's k-means lists, past EXACT_MAX notes
        self._matrix: np.ndarray | None = None
        self._generation += 1
        self._append_rows(chunks, alive)
        if vectors is not None:
            self._buf = vectors
            self._embedded = grown(self._embedded, len(chunks))
            self._embedded[: len(chunks)] = embedded
        self._matrix = self._matrix_view()

    def _append_rows(self, chunks: list[Chunk], alive: list[bool] | None = None) -> None:
        if not chunks:
            return
        first, n = len(self._chunks), len(self._chunks) + len(chunks)
        live = alive if alive is not None else [True] * len(chunks)
        self._chunks.extend(chunks)
        self._alive = grown(self._alive, n)
        self._alive[first:n] = live
        self._embedded = grown(self._embedded, n)
        self._embedded[first:n] = False
        rows = self._bm25.add(tokenize(c.context_text) if a else [] for c, a in zip(chunks, live, strict=True))
        dead = [r for r, a in zip(rows, live, strict=True) if not a]
        self._bm25.remove(dead, [[]] * len(dead))
        self._dead += len(dead)
        aud, days = self._audience_index, self._day_index
        self._audience_codes = grown(self._audience_codes, n)
        self._audience_codes[first:n] = [aud.setdefault(c.audience, len(aud)) for c in chunks]
        self._day_codes = grown(self._day_codes, n)
        self._day_codes[first:n] = [days.setdefault(c.date, len(days)) for c in chunks]
        self._audiences, self._days = list(aud), list(days)

    def _matrix_view(self) -> np.ndarray | None:
        """Every row's vector, if every live row has one (else the meaning side waits: keywords only)."""
        n = len(self._chunks)
        if self._buf is None or not n or bool((self._alive[:n] & ~self._embedded[:n]).any()):
            return None
        return self._buf[:n]

    # persistence --------------------------------------------------------
    def _load(self) -> None:
        try:
            loaded = self._store.load()
        except (OSError, ValueError) as exc:  # a vector file that cannot be read: built again from the notes
            log.warning("memory index vectors unreadable (%s); rebuilding them from the notes", exc)
            loaded = None
        if loaded is not None:
            self._files = loaded.files
            self._reset(loaded.chunks, loaded.alive, loaded.embedded, loaded.vectors)
            if self._matrix is not None:  # read now: the rows they cover are the ones just loaded
                self._lists_saved = IVF.load(self.index_dir / LISTS_FILE, self._store.epoch, self._matrix)
            return
        self._load_old_format()

    def _load_old_format(self) -> None:
        """The store before the log (one JSON of every chunk, one .npy of every vector): read, then written as a
        log so the next change appends."""
        meta_path, vec_path = self.index_dir / META_FILE, self.index_dir / VECTORS_FILE
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            files = {name: [Chunk(**c) for c in f["chunks"]] for name, f in meta["files"].items()}
            signatures = {name: (int(f["mtime_ns"]), int(f["size"])) for name, f in meta["files"].items()}
            vectors: dict[str, np.ndarray] = {}
            if vec_path.exists() and meta.get("model") == self._model_name():
                vectors = dict(zip(meta["vector_keys"], np.load(vec_path), strict=True))
        except FileNotFoundError:
            return
        except (OSError, EOFError, ValueError, KeyError, TypeError, RecursionError) as exc:  # a damaged index is
            # rebuilt from the files
            log.warning("memory index unreadable (%s); rebuilding it", exc)
            return
        chunks = [c for name in sorted(files) for c in files[name]]
        embedded = [c.key in vectors for c in chunks]
        matrix = None
        if any(embedded):
            width = len(next(iter(vectors.values())))
            matrix = np.stack([vectors.get(c.key, np.zeros(width, np.float32)) for c in chunks]).astype(np.float32)
        at = 0
        for name in sorted(files):
            self._files[name] = {"mtime_ns": signatures[name][0], "size": signatures[name][1],
                                 "rows": list(range(at, at + len(files[name])))}
            at += len(files[name])
        self._reset(chunks, [True] * len(chunks), embedded, matrix)
        try:
            self._store.rewrite(self._files, self._chunks, embedded, matrix)
            meta_path.unlink()
        except OSError as exc:  # a read-only .index/: the index works from memory, written on the next change
            log.warning("memory index could not be written (%s)", exc)

    def _rewrite(self) -> None:
        """Write the store afresh with only its live rows, numbered file by file (the dropped rows go)."""
        self._lists_saved = None  # numbered for the store being replaced
        order = np.asarray([r for name in sorted(self._files) for r in sorted(self._files[name]["rows"])],
                           dtype=np.int64)
        if len(order) == len(self._chunks) and np.array_equal(order, np.arange(len(order))):
            # rows already live and file by file (a first build): written as they are, nothing renumbered
            vectors = self._buf[: len(order)] if self._buf is not None else None
            self._store.rewrite(self._files, self._chunks, self._embedded[: len(order)].tolist(), vectors)
            if self._ivf is not None:
                self._ivf.save(self.index_dir / LISTS_FILE, self._store.epoch)
            (self.index_dir / META_FILE).unlink(missing_ok=True)
            return
        chunks = [self._chunks[r] for r in order.tolist()]
        embedded = self._embedded[order].tolist()
        vectors = self._buf[order] if self._buf is not None else None
        files, at = {}, 0
        for name in sorted(self._files):
            f = self._files[name]
            files[name] = {"mtime_ns": f["mtime_ns"], "size": f["size"], "rows": list(range(at, at + len(f["rows"])))}
            at += len(f["rows"])
        ivf = self._ivf
        self._files = files
        self._reset(chunks, [True] * len(chunks), embedded, vectors)
        self._store.rewrite(self._files, self._chunks, embedded, vectors)
        if ivf is not None and self._matrix is not None:
            self._ivf = ivf.kept(order, self._matrix)
            self._ivf.save(self.index_dir / LISTS_FILE, self._store.epoch)
        (self.index_dir / META_FILE).unlink(missing_ok=True)

    def _model_name(self) -> str | None:
        return self._embedder.name if self._embedder is not None else None

    # refresh ------------------------------------------------------------
    def refresh(self) -> bool:
        """Bring the index up to date with the files; True if anything changed."""
        with self._lock:
            seen: dict[str, tuple[int, int]] = {}
            if self.mem_dir.is_dir():  # scandir, not glob: every query starts here (a thousand files: ~2 vs ~15 ms)
                with os.scandir(self.mem_dir) as entries:
                    for e in entries:
                        if e.name.endswith(".md") and e.is_file():
                            st = e.stat()
                            seen[e.name] = (st.st_mtime_ns, st.st_size)
            changed = sorted(  # in name order: a first build's rows are then file by file, as a rewrite numbers them
                n
                for n, sig in seen.items()
                if (self._files.get(n, {}).get("mtime_ns"), self._files.get(n, {}).get("size")) != sig
            )
            gone = [n for n in self._files if n not in seen]
            changes = [Change(n, None, None, [], self._files.pop(n)["rows"]) for n in gone]
            for n in changed:
                text = (self.mem_dir / n).read_text(encoding="utf-8", errors="replace")
                changes.append(self._changed(n, seen[n], chunk_markdown(text, n)))
            first = len(self._chunks)
            dropped = [r for ch in changes for r in ch.drop]
            if dropped:
                self._alive[dropped] = False
                self._bm25.remove(dropped, [tokenize(self._chunks[r].context_text) for r in dropped])
                self._dead += len(dropped)
            at = first
            for ch in changes:
                if ch.mtime_ns is not None:
                    self._files[ch.name]["rows"] += range(at, at + len(ch.add))
                at += len(ch.add)
            self._append_rows([c for ch in changes for c in ch.add])
            embedded, late = self._embed_missing(first)
            if changes or late:
                self._generation += 1
                self._matrix = self._matrix_view()
                flags = self._embedded[first:len(self._chunks)].tolist()
                block = self._buf[first:len(self._chunks)] if self._buf is not None else None
                width = self._buf.shape[1] if self._buf is not None else None
                try:
                    if not self._store.append(changes, block, flags, width, late):
                        self._rewrite()  # a new store, or another process wrote to this one: ours in full
                    elif self._dead > max(COMPACT_MIN, COMPACT_SHARE * len(self._chunks)):
                        self._rewrite()
                except OSError as exc:  # a full disk: the index serves from memory, written in full next time
                    log.warning("memory index could not be written (%s); it is kept in memory", exc)
                    self._store.epoch = ""
            self._update_lists()
            self.last_refresh = {"files_read": len(changed), "embedded": embedded}
            return bool(changes or late)

    def _changed(self, name: str, sig: tuple[int, int], chunks: list[Chunk]) -> Change:
        """A file's new chunks against its rows: an unchanged chunk keeps its row, the rest are added/dropped."""
        old: dict[Chunk, list[int]] = {}
        for r in self._files.get(name, {}).get("rows", []):
            old.setdefault(self._chunks[r], []).append(r)
        kept: list[int] = []
        added: list[Chunk] = []
        for c in chunks:
            rows = old.get(c)
            if rows:
                kept.append(rows.pop())
            else:
                added.append(c)
        self._files[name] = {"mtime_ns": sig[0], "size": sig[1], "rows": kept}  # its added rows: see refresh
        return Change(name, sig[0], sig[1], added, [r for rows in old.values() for r in rows])

    def _embed_missing(self, first: int) -> tuple[int, dict[int, np.ndarray]]:
        """Vectors for the rows from `first` on and for earlier live rows still without one (the model was missing
        then): (how many embedded, the earlier rows' vectors)."""
        n = len(self._chunks)
        todo = np.flatnonzero(self._alive[:n] & ~self._embedded[:n])
        if not len(todo) or self._embedder is None or not self._embedder.available():
            return 0, {}
        texts = list(dict.fromkeys(self._chunks[r].context_text for r in todo.tolist()))
        vecs = self._embedder.encode(texts)
        if vecs is None:
            return 0, {}
        by_text = dict(zip(texts, vecs, strict=True))
        if self._buf is None:
            self._buf = np.zeros((0, vecs.shape[1]), dtype=np.float32)
        if len(self._buf) < n:  # an eighth spare: the next notes land without copying every vector
            self._buf = grown(self._buf, n + n // 8 + 64, factor=1.125)
        late: dict[int, np.ndarray] = {}
        for r in todo.tolist():
            self._buf[r] = by_text[self._chunks[r].context_text]
            if r < first:
                late[r] = self._buf[r]
        self._embedded[todo] = True
        return len(texts), late

    def _update_lists(self) -> None:
        """The k-means lists of a matrix past EXACT_MAX rows: read back once if saved for this store, rows
        appended since filed under their nearest list when the tail is long, trained anew when the rows have grown
        by half."""
        matrix = self._matrix
        if matrix is None or len(matrix) <= self.exact_max:
            self._ivf = None
            return
        n, ivf = len(matrix), self._ivf
        if ivf is None:
            ivf, self._lists_saved = self._lists_saved, None
        if ivf is None or n > ivf.trained_on * RETRAIN_GROWTH:
            ivf = IVF.build(matrix)
        elif n - ivf.covered > max(TAIL_MIN, int(TAIL_SHARE * n)):
            ivf = ivf.extend(matrix)
        if ivf is not self._ivf and ivf is not None and self._store.epoch:
            try:
                ivf.save(self.index_dir / LISTS_FILE, self._store.epoch)
            except OSError as exc:
                log.warning("memory index lists could not be written (%s)", exc)
        self._ivf = ivf

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
        embed = mode != "bm25" and self._matrix is not None and self._embedder is not None
        query_vecs = self._embedder.encode([query]) if embed and self._embedder is not None else None
        with self._lock, _one_blas_thread():  # the rows may grow under a query otherwise
            chunks, bm25, matrix, ivf = self._chunks, self._bm25, self._matrix, self._ivf
            n = len(chunks)
            if not n or self._dead >= n:
                return []
            if matrix is not None and len(matrix) != n:
                matrix = None
            kw: np.ndarray = np.zeros(n)
            if mode != "vector" or matrix is None:  # no vectors: keywords are all there is
                terms = tokenize(query)
                if terms and bm25 is not None:
                    raw = np.asarray(bm25.get_scores(terms), dtype=np.float64)
                    top = raw.max()
                    kw = raw / top if top > 0 else kw
            support: np.ndarray | None = None  # the rows that may score above 0 (None: any)
            if mode == "bm25" or matrix is None or query_vecs is None:
                score = kw
            elif ivf is None:
                sims: np.ndarray = matrix @ query_vecs[0]
                vec = np.where(sims >= MIN_SIMILARITY, sims, 0.0)
                score = vec if mode == "vector" else self.bm25_weight * kw + (1 - self.bm25_weight) * vec
            else:
                support, part = self._approximate(matrix, ivf, query_vecs[0], kw, mode)
            # recency, dropped notes and audiences: on every row, or past the exact cap on the rows that can score
            # only (each pass over a million rows costs ms)
            at: slice | np.ndarray = slice(0, n) if support is None else support
            scored = (score if support is None else part) * self._recency(n)[at]
            if self._dead:
                scored[~self._alive[at]] = 0.0
            if visible is not None:
                scored = scored * np.array([1.0 if visible(a) else 0.0 for a in self._audiences])[
                    self._audience_codes[at]]
            if support is not None:
                score = np.zeros(n)
                score[support] = scored
            else:
                score = scored
            return self._mmr(chunks, score, matrix, max_results, support)

    def _approximate(self, matrix: np.ndarray, ivf: IVF, query: np.ndarray, kw: np.ndarray,
                     mode: Mode) -> tuple[np.ndarray, np.ndarray]:
        """The exact path's scores for the notes that can rank, as (rows in order, their scores); every other note
        scores 0. The nearest lists' best notes and BM25's best notes get their cosine; the other notes with a query
        word keep their keyword part only (their cosine counts as under MIN_SIMILARITY)."""
        rows, _ = ivf.search(matrix, query, CANDIDATES)
        hit = np.flatnonzero(kw) if mode != "vector" else np.zeros(0, dtype=np.int64)  # usually far fewer than N
        rows = np.union1d(rows, hit[_top(kw[hit], CANDIDATES)])
        sims = matrix[rows] @ query
        vec = np.where(sims >= MIN_SIMILARITY, sims, 0.0)
        support = np.union1d(rows, hit)
        part = np.zeros(len(support)) if mode == "vector" else self.bm25_weight * kw[support]
        part[np.searchsorted(support, rows)] += vec if mode == "vector" else (1 - self.bm25_weight) * vec
        return support, part

    def _recency(self, n: int) -> np.ndarray:
        """Dated notes lose up to recency_weight of their score, half of it every half_life_days."""
        today = datetime.fromtimestamp(self._clock()).date()
        key = (today, self._generation, n)
        if self._recency_cache is not None and self._recency_cache[0] == key:
            return self._recency_cache[1]  # the same rows on the same day: reuse, it is per query otherwise
        factors = np.ones(len(self._days))  # KNOWLEDGE.md and other undated notes are evergreen
        for i, day in enumerate(self._days):
            if day is None:
                continue
            try:
                age = max(0, (today - datetime.strptime(str(day), "%Y-%m-%d").date()).days)
            except ValueError:
                age = 0
            factors[i] = (1 - self.recency_weight) + self.recency_weight * 0.5 ** (age / self.half_life_days)
        out = factors[self._day_codes[:n]]  # one factor per day, looked up per row (a million share a few thousand)
        self._recency_cache = (key, out)
        return out

    def _mmr(self, chunks: list[Chunk], score: np.ndarray, matrix: np.ndarray | None, k: int,
             support: np.ndarray | None = None) -> list[Hit]:
        """Maximal marginal relevance: each pick trades relevance against similarity to the ones already picked."""
        pool = self._best(chunks, score, max(4 * k, 20), support)
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
    def _best(chunks: list[Chunk], score: np.ndarray, want: int, support: np.ndarray | None = None) -> list[int]:
        """The `want` best-scoring rows (score > 0), equal scores in file and text order rather than row order, so
        the answer does not depend on the order the notes reached the index in. `support`: the sorted rows outside
        which every score is 0 (read instead of every row)."""
        rows = np.arange(len(score)) if support is None else support
        cand = rows[score[rows] > 0]
        if len(cand) > want:
            part = cand[np.argpartition(-score[cand], want - 1)[:want]]
            floor = score[part].min()
            ties = rows[score[rows] == floor]
            cand = np.union1d(part[score[part] > floor], ties) if len(ties) <= TIES_MAX else part
        return sorted(cand.tolist(), key=lambda i: (-score[i], chunks[i].source, chunks[i].text))[:want]

    @staticmethod
    def _sim(i: int, j: int, matrix: np.ndarray | None, tokens: dict[int, set[str]]) -> float:
        if matrix is not None:
            return float(matrix[i] @ matrix[j])
        a, b = tokens[i], tokens[j]
        return len(a & b) / len(a | b) if a and b else 0.0
