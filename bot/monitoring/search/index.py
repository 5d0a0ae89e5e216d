"""Events ranked by words and meaning: the recall's hybrid search (BM25 + MiniLM embeddings, workspace/search.py's
weights and similarity floor) over each event's words, with time and camera filters.

The index follows the event log: on a search it reads the log only when the file changed, adds the new events,
and embeds only words it has not embedded before (an event's `seen` repeats a lot: "person (small, 80 px tall,
left, walking right)"), so a search over 100 k events does not embed 100 k sentences. A tier-2 summary's words
(a heartbeat reply, the model's look at an alert) are added to the events it is `about`.
"""

from __future__ import annotations

import math
import re
import threading
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from bot.monitoring.search.describe import meaning as words_meaning
from workspace.chunking import tokenize
from workspace.embeddings import Embedder, default_embedder
from workspace.search import MIN_SIMILARITY

CHECKED_EVENT = "alert_checked"  # events_log.CHECKED (the search sits below the event log: it cannot import it)


class EventLog(Protocol):
    """What the index reads of bot.monitoring.events_log.EventLog (which keeps the pictures of this package, so it is
    named here by what it does: an import would be a ring)."""

    path: Path

    def tail(self, offset: int) -> tuple[list[dict[str, Any]], int] | None: ...

BM25_WEIGHT = 0.4  # workspace/search.py MemoryIndex's: keywords 0.4, meaning 0.6
K1, B = 1.5, 0.75  # rank_bm25's BM25Okapi defaults
SAME_MOMENT_SECONDS = 10.0  # one camera's events with the same words this close are one moment in an answer
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_RULE_WORDS = {"class_appears": "appears", "count_over": "count over", "line_crossed": "line crossed",
               "time_in_zone": "stays in zone", "near": "near", "then": "then", "heartbeat": "summary"}


@dataclass
class Doc:
    """One event as the index holds it."""

    event: dict[str, Any]
    tokens: Counter[str]
    length: int
    base: str  # the words embedded: what was seen, without numbers
    extra: list[str] = field(default_factory=list)  # the model's words about it (summaries)

    @property
    def meaning(self) -> str:
        return " ".join([self.base, *self.extra]).strip()


@dataclass(frozen=True)
class Found:
    """One event an answer shows, with its score (0..1: keyword and meaning similarity, weighted)."""

    event: dict[str, Any]
    score: float


def words_of(ev: dict[str, Any]) -> tuple[str, str]:
    """(the event's keyword text, its text for meaning)."""
    rule = str(ev.get("rule") or ev.get("event_type") or "")
    kind = rule.split(":", 1)[0].split(">", 1)[0]
    seen, text = str(ev.get("seen") or ""), str(ev.get("text") or "")
    keywords = " ".join(x for x in (str(ev.get("camera") or ""), _RULE_WORDS.get(kind, kind.replace("_", " ")),
                                     rule.partition(":")[2], text, seen, str(ev.get("summary") or "")) if x)
    meaning = words_meaning(seen) if seen else _DIGITS.sub("", text)
    return keywords, " ".join(meaning.split())


class EventIndex:
    """Hybrid search over one event log (`EventLog`); safe to share between threads."""

    def __init__(self, log: EventLog, embedder: Embedder | None = None, use_embeddings: bool = True,
                 bm25_weight: float = BM25_WEIGHT) -> None:
        self._log = weakref.ref(log)  # held weakly: index_of keeps one index per live log
        self._embedder = embedder if embedder is not None else (default_embedder() if use_embeddings else None)
        self.bm25_weight = bm25_weight
        self._lock = threading.RLock()
        self._offset = 0  # how far into the log file this index has read
        self._inode: int | None = None  # ... of which file
        self._lens: np.ndarray = np.zeros(0)
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # term -> (doc indexes, counts), made on use
        self._docs: list[Doc] = []
        self._by_alert: dict[str, int] = {}  # alert id -> doc index (a summary names alerts by id)
        self._last_id = ""
        self._df: Counter[str] = Counter()
        self._post: dict[str, list[int]] = {}  # term -> doc indexes (ascending)
        self._tfs: dict[str, list[int]] = {}  # term -> its count in each of those docs
        self._total_len = 0
        self._times: np.ndarray = np.zeros(0)
        self._vectors: dict[str, np.ndarray] = {}  # meaning text -> unit vector
        self._rows: np.ndarray = np.zeros(0, dtype=np.int64)  # doc -> row of _matrix
        self._matrix: np.ndarray | None = None
        self.embedded_last = 0  # texts embedded by the last refresh (benches report it)

    @property
    def log(self) -> EventLog:
        log = self._log()
        if log is None:
            raise LookupError("the event log of this index is gone")
        return log

    # following the log --------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Take in what the log gained since the last look (only the new lines are read); a trimmed log is indexed
        anew."""
        with self._lock:
            log = self.log
            try:
                inode = log.path.stat().st_ino  # a trim writes a new file in its place (os.replace)
            except OSError:
                inode = None
            got = log.tail(self._offset) if inode == self._inode else None
            self._inode = inode
            if got is None:  # trimmed or replaced: all of it again
                self._reset()
                got = log.tail(0) or ([], 0)
            events, self._offset = got
            if not events and self._docs:
                self.embedded_last = 0
                return
            self._add(sorted((e for e in events if str(e["id"]) > self._last_id), key=lambda e: str(e["id"])))
            self._times = np.array([d.event["time"] for d in self._docs], dtype=np.float64)
            self._lens = np.array([d.length for d in self._docs], dtype=np.float64)
            self._arrays.clear()
            self.embedded_last = self._embed() if events or self._matrix is None else 0

    def _reset(self) -> None:
        self._docs, self._by_alert, self._last_id, self._offset = [], {}, "", 0
        self._df, self._post, self._tfs, self._total_len = Counter(), {}, {}, 0

    def _add(self, events: list[dict[str, Any]]) -> None:
        touched = False
        for ev in events:
            self._last_id = max(self._last_id, str(ev["id"]))
            about = ev.get("about")
            if isinstance(about, list) and ev.get("summary"):
                for alert_id in about:  # the model's words join the events they are about
                    i = self._by_alert.get(str(alert_id))
                    if i is not None:
                        self._docs[i].extra.append(str(ev["summary"]))
                        touched = True
            if ev.get("event_type") == CHECKED_EVENT:
                continue  # the model's look: words of the alert it is about, not a moment of its own
            keywords, meaning = words_of(ev)
            tokens = Counter(tokenize(keywords))
            n = len(self._docs)
            self._docs.append(Doc(ev, tokens, sum(tokens.values()), meaning))
            if ev.get("alert_id"):
                self._by_alert[str(ev["alert_id"])] = n
            self._count(n, tokens)
        if touched:
            self._recount()

    def _count(self, n: int, tokens: Counter[str]) -> None:
        self._total_len += sum(tokens.values())
        for term, count in tokens.items():
            self._df[term] += 1
            self._post.setdefault(term, []).append(n)
            self._tfs.setdefault(term, []).append(count)

    def _recount(self) -> None:
        """Summaries changed some events' words: count every event's words again (summaries are rare)."""
        self._df, self._post, self._tfs, self._total_len = Counter(), {}, {}, 0
        for n, doc in enumerate(self._docs):
            keywords, _ = words_of(doc.event)
            doc.tokens = Counter(tokenize(" ".join([keywords, *doc.extra])))
            doc.length = sum(doc.tokens.values())
            self._count(n, doc.tokens)

    def _embed(self) -> int:
        """Vectors for meaning texts not embedded yet; the doc -> row map. How many texts were embedded."""
        if self._embedder is None or not self._embedder.available() or not self._docs:
            self._matrix = None
            return 0
        todo = list(dict.fromkeys(d.meaning for d in self._docs if d.meaning and d.meaning not in self._vectors))
        if todo:
            vecs = self._embedder.encode(todo)
            if vecs is None:
                self._matrix = None
                return 0
            self._vectors.update(zip(todo, vecs, strict=True))
        texts = list(self._vectors)
        row = {t: i for i, t in enumerate(texts)}
        dim = next(iter(self._vectors.values())).shape[0] if texts else 1
        self._matrix = np.vstack([np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, dim)),
                                  np.zeros((1, dim), dtype=np.float32)])  # the last row: no words, no meaning
        self._rows = np.array([row.get(d.meaning, len(texts)) for d in self._docs], dtype=np.int64)
        return len(todo)

    # searching ----------------------------------------------------------------------------------------------------
    def search(self, query: str, limit: int = 10, since: float | None = None, until: float | None = None,
               camera: str | None = None, keep: Callable[[dict[str, Any]], bool] | None = None) -> list[Found]:
        """The best `limit` events for the words, newest first among equals; one per moment (`SAME_MOMENT_SECONDS`)."""
        self.refresh()
        with self._lock:
            docs = self._docs
            if not docs:
                return []
            times = self._times
            mask = (times >= (-np.inf if since is None else since)) & (times < (np.inf if until is None else until))
            if camera is not None or keep is not None:
                mask &= np.array([(camera is None or str(d.event.get("camera", "")).lower() == camera.lower())
                                  and (keep is None or keep(d.event)) for d in docs], dtype=bool)
            kw = self._bm25(tokenize(query))
            score = kw
            if self._matrix is not None and self._embedder is not None and query.strip():
                qv = self._embedder.encode([query])
                if qv is not None:
                    sims = (self._matrix @ qv[0])[self._rows]
                    vec = np.where(sims >= MIN_SIMILARITY, sims, 0.0)
                    score = self.bm25_weight * kw + (1 - self.bm25_weight) * vec
            score = np.where(mask, score, 0.0)
            hits = np.flatnonzero(score > 0)
            order = hits[np.lexsort((-times[hits], -np.round(score[hits], 6)))][: limit * 20]
            return self._moments([Found(docs[i].event, round(float(score[i]), 4)) for i in order], limit)

    def _bm25(self, terms: list[str]) -> np.ndarray:
        """Okapi BM25 with Lucene's always-positive idf (as the recall's), scaled so the best event scores 1."""
        n = len(self._docs)
        out = np.zeros(n)
        if not terms or not n:
            return out
        avg = self._total_len / n or 1.0
        for term in set(terms):
            if term not in self._post:
                continue
            if term not in self._arrays:
                self._arrays[term] = (np.asarray(self._post[term], dtype=np.int64),
                                      np.asarray(self._tfs[term], dtype=np.float64))
            idx, tf = self._arrays[term]
            df = self._df[term]
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            out[idx] += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * self._lens[idx] / avg))
        top = out.max()
        return out / top if top > 0 else out

    @staticmethod
    def _moments(found: list[Found], limit: int) -> list[Found]:
        picked: list[Found] = []
        for f in found:
            if len(picked) >= limit:
                break
            ev = f.event
            if any(p.event.get("camera") == ev.get("camera") and p.event.get("seen") == ev.get("seen")
                   and ev.get("seen") and abs(p.event["time"] - ev["time"]) < SAME_MOMENT_SECONDS for p in picked):
                continue
            picked.append(f)
        return picked

    def cameras(self) -> list[str]:
        """The cameras the log has events from, most events first."""
        self.refresh()
        with self._lock:
            return [c for c, _ in Counter(str(d.event.get("camera") or "") for d in self._docs).most_common() if c]

    def count(self, since: float | None = None, until: float | None = None, camera: str | None = None) -> int:
        """How many events a search with these filters looks at."""
        with self._lock:
            times = self._times
            mask = (times >= (-np.inf if since is None else since)) & (times < (np.inf if until is None else until))
            if camera is None:
                return int(mask.sum())
            return sum(1 for d, m in zip(self._docs, mask, strict=True)
                       if m and str(d.event.get("camera", "")).lower() == camera.lower())

    def __len__(self) -> int:
        with self._lock:
            return len(self._docs)


_indexes: weakref.WeakKeyDictionary[EventLog, EventIndex] = weakref.WeakKeyDictionary()
_indexes_lock = threading.Lock()


def index_of(log: EventLog) -> EventIndex:
    """The one index of this event log in this process (its embeddings are kept between searches)."""
    with _indexes_lock:
        found = _indexes.get(log)
        if found is None:
            found = _indexes[log] = EventIndex(log)
        return found
