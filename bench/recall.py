"""Recall over 10 000 notes: index build time, query p50/p95, and hit rate of hybrid vs BM25-only, one run; then
recall at scale: 10 k, 100 k and 1 M notes (composed from real sentences: bench/_recall_scale.py), each with its
index build time, disk size, restart, one new note, and hybrid query p50/p95 against the goal (p95 < 100 ms at 1 M).
"""

from __future__ import annotations

import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Figure, Headline  # noqa: E402

NOTES = 10_000
DAYS = 60
K = 5
QUICK_NOTES, QUICK_DAYS, QUICK_ROUNDS = 600, 6, 1  # quick: the same planted notes among 600, one timing round
SCALE = (10_000, 100_000, 1_000_000)
# new notes for the add-one-note timing: no word or meaning of any query (a door, the night, a visitor, a dog would
# put them among the answers, the newest notes of all)
VISITORS = ("a late caller", "a courier in a red cap", "a painter with a ladder", "two students", "a postman")
GOAL_MS = 100.0  # p95 of a hybrid query at 1 M notes
ADD_GOAL_MS = 1_000.0  # one new note at 1 M notes: well under a second (it was 359 s, the whole store rewritten)
# quick: 3 000 composed notes with the exact cap lowered to 1 000, so the approximate path runs too (seconds)
QUICK_SCALE, QUICK_EXACT_MAX, QUICK_SENTENCES = (3_000,), 1_000, 200

# (note as written, how someone later asks for it): no shared content words, so only meaning connects them
PARAPHRASES = [
    ("a delivery van parked by the loading bay for forty minutes", "truck waiting at the dock"),
    ("nobody wore a hard hat near the welding station", "workers without helmets by the welders"),
    ("the back entrance was left open overnight", "rear door not closed during the night"),
    ("a dog ran across the parking lot", "animal crossing the car park"),
    ("smoke was visible above the boiler room", "possible fire near the furnace"),
    ("the conveyor belt stopped for ten minutes", "production line halted briefly"),
    ("two people argued loudly at the reception desk", "dispute between visitors in the lobby"),
    ("a bicycle was stolen from the rack", "someone took a bike"),
    ("water leaked onto the warehouse floor", "puddle from a leak in storage"),
    ("the camera lens was covered with dust", "dirty camera view obscured"),
    ("a forklift drove too fast in aisle three", "speeding lift truck between shelves"),
    ("the gate barrier failed to lift for a lorry", "boom gate malfunction blocking vehicle"),
]
# exact identifiers: a sentence encoder sees 'a code', BM25 sees the one note that has it
KEYWORDS = [
    ("fault E-4471 shown on the barrier display", "E-4471"),
    ("forklift FL-2207 left without a badge scan", "FL-2207"),
    ("car with plate KX-9042 parked in the fire lane", "KX-9042"),
    ("badge 88213 used at the server room at night", "badge 88213"),
    ("pallet lot QX77-B wrapped and labelled", "QX77-B"),
    ("sensor TZ-315 reported a temperature spike", "TZ-315"),
]
# Filler notes share no word with the queries, so a hit measures the planted note, not a lucky lookalike.
OBJECTS = ["person", "cyclist", "box", "pallet", "courier", "cleaner", "manager", "technician"]
ACTIONS = ["entered", "left", "stopped", "appeared", "walked past", "was counted", "paused", "turned around"]
PLACES = ["at the north entrance", "near bay 2", "in aisle 5", "by the office", "in the yard", "at the front desk"]
CAMERAS = ["cam1", "cam2", "cam3", "cam4", "cam5", "cam6"]


def write_corpus(root: Path, rng: random.Random, notes: int = NOTES, days: int = DAYS) -> dict[str, str]:
    """~notes bullets over days daily logs; returns planted note text -> its file."""
    mem = root / "memory"
    mem.mkdir(parents=True)
    planted = {note: "" for note, _ in PARAPHRASES + KEYWORDS}
    slots = dict(zip(planted, rng.sample(range(notes), len(planted)), strict=True))
    by_index = {i: note for note, i in slots.items()}
    per_day = notes // days
    for d in range(days):
        day = f"2026-{1 + d // 28:02d}-{1 + d % 28:02d}"
        sections: dict[str, list[str]] = {}
        for j in range(per_day):
            i = d * per_day + j
            text = by_index.get(i) or f"{rng.choice(OBJECTS)} {rng.choice(ACTIONS)} {rng.choice(PLACES)}"
            if i in by_index:
                planted[text] = f"{day}.md"
            cam = rng.choice(CAMERAS)
            sections.setdefault(cam, []).append(f"- {j // 60 + 6:02d}:{j % 60:02d}:00 {text}")
        body = "\n\n".join(f"## {cam}\n" + "\n".join(lines) for cam, lines in sections.items())
        (mem / f"{day}.md").write_text(f"# Observations {day}\n\n{body}\n", encoding="utf-8")
    return planted


def measure(index, mode: str, queries: list[tuple[str, str]], rounds: int = 3) -> tuple[float, float, float]:
    """(hit rate @K, p50 ms, p95 ms) for one search mode."""
    times, hits = [], 0
    for r in range(rounds):
        for note, query in queries:
            t = time.perf_counter()
            found = index.search(query, max_results=K, mode=mode)
            times.append((time.perf_counter() - t) * 1000)
            if r == 0:
                hits += any(note in h.text for h in found)
    times.sort()
    return hits / len(queries), statistics.median(times), times[int(0.95 * (len(times) - 1))]


def main(quick: bool = False) -> Headline:
    """Full: 10 000 notes over 60 days, three timing rounds. Quick: 600 notes over 6 days, one round (same model,
    same index, same planted notes and queries)."""
    from workspace.embeddings import default_embedder
    from workspace.search import MemoryIndex

    notes, days, rounds = (QUICK_NOTES, QUICK_DAYS, QUICK_ROUNDS) if quick else (NOTES, DAYS, 3)
    rates: dict[str, dict[str, float]] = {}
    root = Path(tempfile.mkdtemp(prefix="recall-bench-"))
    try:
        write_corpus(root, random.Random(11), notes, days)
        t = time.perf_counter()
        embedder = default_embedder()
        embedder.available()
        load_s = time.perf_counter() - t
        t = time.perf_counter()
        index = MemoryIndex(root, embedder=embedder)
        index.refresh()
        build_s = time.perf_counter() - t
        chunks = index.last_refresh["embedded"]
        print(
            f"corpus: {chunks} notes in {days} daily logs; model load {load_s:.1f} s; full index build {build_s:.1f} s"
        )

        with open(root / "memory" / f"2026-01-0{1}.md", "a", encoding="utf-8") as fh:
            fh.write("- 23:59:00 a late visitor rang the bell\n")
        t = time.perf_counter()
        index.refresh()
        print(
            f"incremental refresh after one new note: {(time.perf_counter() - t) * 1000:.0f} ms, "
            f"re-embedded {index.last_refresh['embedded']} note(s)"
        )
        t = time.perf_counter()
        reopened = MemoryIndex(root, embedder=embedder)
        reopened.refresh()
        print(
            f"reopen from .index/ (a restart): {(time.perf_counter() - t):.2f} s, "
            f"re-embedded {reopened.last_refresh['embedded']}"
        )

        print(f"\n{'queries':<14}{'mode':<8}{'hit@5':>7}{'p50 ms':>9}{'p95 ms':>9}")
        for label, queries in (("paraphrase", PARAPHRASES), ("exact keyword", KEYWORDS)):
            rows = {m: measure(reopened, m, queries, rounds) for m in ("bm25", "vector", "hybrid")}
            rates[label] = {m: row[0] for m, row in rows.items()}
            for mode, (rate, p50, p95) in rows.items():
                print(f"{label:<14}{mode:<8}{rate:>7.0%}{p50:>9.1f}{p95:>9.1f}")
            h, b = rows["hybrid"], rows["bm25"]
            print(f"{'':<14}hybrid/bm25: hit rate {h[0] - b[0]:+.0%}, p95 latency x{h[2] / b[2]:.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    para, key = rates["paraphrase"], rates["exact keyword"]
    big = at_scale(quick)
    at = f"at {big['notes']:,} notes"
    return Headline(figure=f"hybrid hit@{K}: paraphrase {para['hybrid']:.0%} (bm25 {para['bm25']:.0%}), "
                           f"exact keyword {key['hybrid']:.0%} (vector {key['vector']:.0%}); "
                           f"p95 {big['p95']:.0f} ms {at}",
                    goal=f"p95 < {GOAL_MS:.0f} ms at 1,000,000 notes",
                    met=None if quick else big["p95"] < GOAL_MS,
                    more=(Figure("index alone", f"p95 {big['index_p95']:.0f} ms {at}", f"< {GOAL_MS:.0f} ms",
                                 None if quick else big["index_p95"] < GOAL_MS),
                          Figure("adding one note", f"{big['add_ms']:.0f} ms {at}", f"< {ADD_GOAL_MS:,.0f} ms",
                                 None if quick else big["add_ms"] < ADD_GOAL_MS),
                          Figure("build, disk", f"{big['build_s']:.0f} s, {big['disk_mb']:,.0f} MB {at}",
                                 "printed")))


def at_scale(quick: bool) -> dict[str, float]:
    """Build, restart, new notes one at a time and hybrid queries at each size; the largest size, its p95 ms with
    the query's embedding and without, its median add-one-note ms, build s and disk MB."""
    from bench._recall_scale import ComposedEmbedder, details, disk_mb, sentences, write_memory
    from workspace.embeddings import default_embedder
    from workspace.search import EXACT_MAX, MemoryIndex

    sizes, exact_max = (QUICK_SCALE, QUICK_EXACT_MAX) if quick else (SCALE, EXACT_MAX)
    t = time.perf_counter()
    base = sentences(QUICK_SENTENCES if quick else None)
    embedder = ComposedEmbedder(default_embedder(), base)
    print(f"\nat scale: notes composed from {len(base)} real sentences and {len(details())} real details (all "
          f"embedded, {time.perf_counter() - t:.0f} s), each note's vector their sum plus noise; exact scoring up to "
          f"{exact_max:,} notes, k-means lists past it")
    queries = PARAPHRASES + KEYWORDS
    enc = []
    for _ in range(1 if quick else 3):
        for _, q in queries:
            t = time.perf_counter()
            embedder.encode([q])
            enc.append((time.perf_counter() - t) * 1000)
    enc.sort()
    print(f"embedding one query alone (part of every hybrid query below): p50 {statistics.median(enc):.1f} ms, "
          f"p95 {enc[int(0.95 * (len(enc) - 1))]:.1f} ms")
    print(f"{'notes':>10}{'build s':>9}{'disk MB':>9}{'restart s':>10}{'+1 note ms':>11}{'max ms':>9}{'hit@5':>7}"
          f"{'exact':>7}"
          f"{'p50 ms':>8}{'p95 ms':>8}{'index p95':>10}  path")
    print(f"{'':>10}(p50/p95: a hybrid query as the agent runs it, its embedding included; index p95: the same query "
          f"with its vector known, i.e. what the memory's size costs; +1 note: median and max of {len(VISITORS)} new "
          "notes added one at a time, each embedded by the real model and appended to the store)")
    big: dict[str, float] = {}
    for n in sizes:
        root = Path(tempfile.mkdtemp(prefix="recall-scale-"))
        try:
            write_memory(root, n, [note for note, _ in queries], base)
            t = time.perf_counter()
            index = MemoryIndex(root, embedder=embedder)
            index.exact_max = exact_max
            index.refresh()
            build_s = time.perf_counter() - t
            last = sorted((root / "memory").glob("*.md"))[-1]
            adds = []  # this size's
            for i, visitor in enumerate(VISITORS):  # one new note at a time, as a camera or the agent writes them
                with open(last, "a", encoding="utf-8") as fh:
                    fh.write(f"- 23:5{i}:00 {visitor} rang the bell\n")
                t = time.perf_counter()
                index.refresh()
                adds.append((time.perf_counter() - t) * 1000)
            path = "approximate" if index._ivf is not None else "exact"
            del index
            t = time.perf_counter()
            reopened = MemoryIndex(root, embedder=embedder)
            reopened.exact_max = exact_max
            reopened.refresh()
            restart_s = time.perf_counter() - t
            rate, p50, p95 = measure(reopened, "hybrid", queries, 1 if quick else 3)
            known = {q: embedder.encode([q]) for _, q in queries}
            embedder.remembered = {q: v[0] for q, v in known.items() if v is not None}
            index_p95 = measure(reopened, "hybrid", queries, 1 if quick else 3)[2]
            embedder.remembered = {}
            reopened.exact_max = 10**12  # the same notes scored exactly: what the approximate path may have missed
            exact_rate = measure(reopened, "hybrid", queries, 1)[0]
            disk = disk_mb(root / ".index")
            big = {"notes": n, "p95": p95, "index_p95": index_p95, "add_ms": statistics.median(adds),
                   "build_s": build_s, "disk_mb": disk}
            print(f"{n:>10,}{build_s:>9.1f}{disk:>9.0f}{restart_s:>10.1f}"
                  f"{statistics.median(adds):>11.0f}{max(adds):>9.0f}"
                  f"{rate:>7.0%}{exact_rate:>7.0%}{p50:>8.1f}{p95:>8.1f}{index_p95:>10.1f}  {path}", flush=True)
            del reopened
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return big


if __name__ == "__main__":
    if "--scale" in sys.argv[1:]:  # the at-scale table alone
        at_scale(quick="--quick" in sys.argv[1:])
    else:
        main(quick="--quick" in sys.argv[1:])
