"""Memories of 10 k to 1 M notes for the recall bench, and an embedder that does not embed each of them.

Embedding a million notes with MiniLM on two shared cores takes hours, so the notes are synthesised: a few
thousand real sentences (subject x action x place, each embedded by the real model) and a few hundred real details
(embedded too); each note is one sentence plus one detail at its own time, and its vector is the unit sum of the
sentence's vector, a third of the detail's and small Gaussian noise (sigma 0.02 per dimension), so no two notes are
the same point and neighbourhoods have the shape real notes give them. The planted notes and every query are
embedded by the real model, as in the product.
"""

from __future__ import annotations

import random
import re
from datetime import date, timedelta
from pathlib import Path

import numpy as np

from workspace.embeddings import Embedder

# Nothing here says what a query asks (the bench's queries are about vans at docks, helmets, doors, bikes, fire...),
# so a hit measures the planted note, not a lookalike; a million of these still crowd the neighbourhoods.
SUBJECTS = ["a person", "a nurse", "a courier", "a cleaner", "a manager", "a technician", "a visitor", "a guard",
            "a student", "two workers", "a group of people", "a child", "a tourist", "an elderly man", "a woman",
            "a man", "a team", "a photographer", "a painter", "a contractor"]
ACTIONS = ["entered", "left", "stopped", "appeared", "walked past", "waited", "turned around", "ran", "paused",
           "unloaded boxes", "looked around", "used a phone", "carried a ladder", "read a sign", "sat down"]
PLACES = ["at the north entrance", "near bay 2", "in aisle 5", "by the office", "in the yard", "at the front desk",
          "near the vending machine", "by the fence", "by the notice board", "near the garden", "near the stairs",
          "by the canteen"]
COLOURS = ["red", "blue", "green", "yellow", "black", "white", "grey", "orange", "brown", "purple"]
ITEMS = ["jacket", "scarf", "backpack", "hat", "vest", "bag", "box", "umbrella", "trolley", "coat"]
CAMERAS = [f"cam{i}" for i in range(1, 9)]
PER_DAY = 1_000  # notes a day: a million notes is about three years of a busy site
FIRST_DAY = date(2023, 6, 1)
_NOTE = re.compile(r"^cam\d+: \d\d:\d\d:\d\d (.+), with an? (\w+) (\w+)$")


def sentences(limit: int | None = None) -> list[str]:
    out = [f"{s} {a} {p}" for s in SUBJECTS for a in ACTIONS for p in PLACES]
    return out[:limit] if limit else out


def details() -> list[str]:
    return [f"{c} {i}" for c in COLOURS for i in ITEMS]


class ComposedEmbedder(Embedder):
    """The real model for what it has not composed (planted notes, queries); composed notes by their parts."""

    def __init__(self, real: Embedder, base: list[str], seed: int = 3) -> None:
        super().__init__(real.model_dir)
        self.real, self.name = real, real.name  # the index keys its vectors by the model's name
        self._base = {s: i for i, s in enumerate(base)}
        self._detail = {d: i for i, d in enumerate(details())}
        self._base_vecs = real.encode(base)
        self._detail_vecs = real.encode(details())
        self._rng = np.random.default_rng(seed)
        self.remembered: dict[str, np.ndarray] = {}  # texts answered from memory (to time the index alone)

    def available(self) -> bool:
        return self.real.available()

    def encode(self, texts: list[str]) -> np.ndarray | None:
        if len(texts) == 1 and texts[0] in self.remembered:
            return self.remembered[texts[0]][None, :]
        if self._base_vecs is None or self._detail_vecs is None:
            return None
        parts = [(m and self._base.get(m[1]), m and self._detail.get(f"{m[2]} {m[3]}"))
                 for m in map(_NOTE.match, texts)]
        composed = np.array([b is not None and d is not None for b, d in parts], dtype=bool)
        out = np.empty((len(texts), self._base_vecs.shape[1]), dtype=np.float32)
        if composed.any():
            b = np.array([p[0] for p, c in zip(parts, composed, strict=True) if c])
            d = np.array([p[1] for p, c in zip(parts, composed, strict=True) if c])
            v = self._base_vecs[b] + self._detail_vecs[d] / 3
            v += self._rng.normal(0, 0.02, v.shape).astype(np.float32)
            out[composed] = v / np.linalg.norm(v, axis=1, keepdims=True)
        rest = [t for t, c in zip(texts, composed, strict=True) if not c]
        if rest:
            real = self.real.encode(rest)
            if real is None:
                return None
            out[~composed] = real
        return out


def write_memory(root: Path, notes: int, planted: list[str], base: list[str], seed: int = 11) -> None:
    """`notes` notes, PER_DAY a day ending yesterday-ish, the planted ones among them at random places."""
    rng = random.Random(seed)
    mem = root / "memory"
    mem.mkdir(parents=True, exist_ok=True)
    slots = dict(zip(rng.sample(range(notes), len(planted)), planted, strict=True))
    det = details()
    days = -(-notes // PER_DAY)
    n = 0
    for d in range(days):
        day = FIRST_DAY + timedelta(days=d)
        by_cam: dict[str, list[str]] = {}
        for j in range(min(PER_DAY, notes - n)):
            stamp = f"{6 + j * 16 // PER_DAY:02d}:{(j * 7) % 60:02d}:{j % 60:02d}"
            text = slots.get(n) or f"{rng.choice(base)}, with a {rng.choice(det)}"
            by_cam.setdefault(rng.choice(CAMERAS), []).append(f"- {stamp} {text}")
            n += 1
        body = "\n\n".join(f"## {cam}\n" + "\n".join(lines) for cam, lines in sorted(by_cam.items()))
        (mem / f"{day.isoformat()}.md").write_text(f"# Observations {day.isoformat()}\n\n{body}\n", encoding="utf-8")


def disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6
