"""Skills: SKILL.md instruction packs with YAML frontmatter, listed in the prompt and loaded on demand."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_WORD = re.compile(r"[a-z0-9]+")
# Words that say nothing about which skill fits: English glue plus this product's everyday vocabulary.
_STOPWORDS = frozenset(
    "a an and are as at be by can do for from how i in into is it its me my of on or our please set show that the "
    "their them then there these this to up us use using want we what when where which while who why will with "
    "you your camera cameras cam feed feeds stream streams video image images frame frames monitor monitoring "
    "watch watching detect detection detections model models check alert alerts skill skills workflow run".split()
)


@dataclass(frozen=True)
class Skill:
    """A skill: its frontmatter and where its SKILL.md lives."""

    name: str
    description: str
    path: Path
    models: tuple[str, ...] = ()
    when_to_use: str = ""
    keywords: tuple[str, ...] = field(default=(), repr=False)


def _stem(word: str) -> str:
    """Crude plural folding so 'packages' meets 'package' and 'deliveries' meets 'delivery'."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 1}


def _normalise(text: str) -> str:
    """Lower-case words joined by single spaces, for phrase matching ('hard-hat' == 'hard hat')."""
    return " ".join(_stem(w) for w in _WORD.findall(text.lower()))


def parse_skill(path: Path) -> Skill | None:
    """Read one SKILL.md; None (and a warning naming the file) if its frontmatter is missing or broken."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("skill %s skipped: cannot read it (%s)", path, exc)
        return None
    m = _FRONTMATTER.match(text)
    if not m:
        log.warning("skill %s skipped: it must start with a '---' YAML frontmatter block", path)
        return None
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as exc:
        log.warning("skill %s skipped: frontmatter is not valid YAML (%s)", path, type(exc).__name__)
        return None
    if not isinstance(meta, dict) or not meta.get("name") or not meta.get("description"):
        log.warning("skill %s skipped: frontmatter needs 'name' and 'description'", path)
        return None

    def _strs(key: str) -> tuple[str, ...]:
        val = meta.get(key) or []
        return tuple(str(v) for v in (val if isinstance(val, list) else [val]))

    return Skill(
        name=str(meta["name"]).strip(),
        description=" ".join(str(meta["description"]).split()),
        path=path,
        models=_strs("models"),
        when_to_use=" ".join(str(meta.get("when_to_use") or "").split()),
        keywords=_strs("keywords"),
    )


_CACHE: dict[Path, tuple[tuple[int, int], Skill | None]] = {}  # path -> ((mtime_ns, size), parsed)


def _cached_parse(path: Path) -> Skill | None:
    """parse_skill, re-run only when the file changed, so a broken skill warns once, not on every turn."""
    try:
        st = path.stat()
    except OSError:
        return None
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _CACHE.get(path)
    if hit is None or hit[0] != stamp:
        hit = _CACHE[path] = (stamp, parse_skill(path))
    return hit[1]


def discover(skills_dir: Path) -> list[Skill]:
    """Every valid skill under skills_dir/<name>/SKILL.md, sorted by name; duplicates keep the first."""
    if not skills_dir.is_dir():
        return []
    seen: dict[str, Skill] = {}
    for path in sorted(skills_dir.glob(f"*/{SKILL_FILE}")):
        skill = _cached_parse(path)
        if skill is None:
            continue
        if skill.name in seen:
            log.warning("skill %s skipped: name %r is already used by %s", path, skill.name, seen[skill.name].path)
            continue
        seen[skill.name] = skill
    return sorted(seen.values(), key=lambda s: s.name)


def _vocabulary(skill: Skill) -> set[str]:
    return _words(" ".join([skill.name.replace("-", " "), skill.description, *skill.keywords]))


def match(skills: list[Skill], text: str) -> list[Skill]:
    """Skills a request is about, best first.

    A skill matches when the request names it ("ppe-compliance", "the parking lot skill"), contains one of its
    keyword phrases, or shares at least two words with its description/keywords that no other skill uses.
    Shared vocabulary between skills counts for nothing, which keeps precision high.
    """
    norm = f" {_normalise(text)} "
    words = _words(text)
    vocab = {s.name: _vocabulary(s) for s in skills}
    common = {w for s in skills for w in vocab[s.name] if sum(w in v for v in vocab.values()) > 1}
    scored: list[tuple[int, Skill]] = []
    for skill in skills:
        score = 0
        if f" {_normalise(skill.name)} " in norm:
            score += 10
        score += 3 * sum(1 for k in skill.keywords if _normalise(k) and f" {_normalise(k)} " in norm)
        distinctive = (vocab[skill.name] - common) & words
        if len(distinctive) >= 2:
            score += len(distinctive)
        if score:
            scored.append((score, skill))
    scored.sort(key=lambda p: (-p[0], p[1].name))
    return [s for _, s in scored]
