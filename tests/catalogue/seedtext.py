"""Helpers to check catalogue citations against the seed texts.

The seed texts (``shared/seeds/*.txt``) were extracted from the papers' PDFs:
one paragraph per line, figures missing.  A citation names a 1-based line
(``seed_line``), the ordinal of the sentence within that line (``sentence``)
and an exact substring (``quote``).  These helpers split a line into
sentences and read the numbers a quote states, so the tests can check that
every catalogued number really stands in the text.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def seeds_dir() -> Path:
    """Where the seed texts are: ``$FABRICREPRO_SEEDS`` or ``<repo>/../shared/seeds``."""
    env = os.environ.get("FABRICREPRO_SEEDS")
    return Path(env) if env else REPO.parent / "shared" / "seeds"


def seed_lines(name: str) -> list[str]:
    """The lines of seed file ``name`` (index 0 is line 1), without newlines."""
    return (seeds_dir() / name).read_text(encoding="utf-8").split("\n")


def sources_dir() -> Path:
    """Where the texts of papers without a seed are (``paper.sources``): ``$FABRICREPRO_SOURCES`` or
    ``<repo>/../shared/sources``."""
    env = os.environ.get("FABRICREPRO_SOURCES")
    return Path(env) if env else REPO.parent / "shared" / "sources"


def source_lines(folder: str, name: str) -> list[str]:
    """The lines of file ``name`` of ``sources_dir()/folder`` (index 0 is line 1), without newlines; a file
    that is not there has none (the citation's line is then reported outside it)."""
    path = sources_dir() / folder / name
    return path.read_text(encoding="utf-8").split("\n") if path.is_file() else []


# Abbreviations after which a period never ends a sentence in these texts.
_NO_BREAK_AFTER = re.compile(
    r"(?:\bFigs?|\be\.g|\bi\.e|\bet al|\bvs|\bOpt|\bcf|\bSec|\bNo|\bEq|\bapprox)\.$"
)
# A caption label ("Fig. 3.", "Figure 2:") opens its caption sentence.
_CAPTION_LABEL = re.compile(r"^\s*(?:Figs?\.|Figure|Table|TABLE)\s+[0-9IVX]+[a-z]?[.:]$")
_CANDIDATE = re.compile(r"[.!?](?=\s+[A-Z0-9(\[*\"'“$<_`•-])")


def sentence_spans(line: str) -> list[tuple[int, int]]:
    """Split one seed line into sentences; return their ``(start, end)`` offsets.

    A sentence ends at ``.``, ``!`` or ``?`` followed by white space and a
    character that can start a sentence, unless the period closes a known
    abbreviation (``Fig.``, ``e.g.``, ``et al.``, ``Opt.`` ...) or a caption
    label (``Fig. 3.`` opens the caption's first sentence).  Decimal
    points (``2.9 KB``, ``v0.6.1``) never split because no space follows them.
    """
    spans, start = [], 0
    for m in _CANDIDATE.finditer(line):
        end = m.end()
        if _NO_BREAK_AFTER.search(line[start:end]) or _CAPTION_LABEL.match(line[start:end]):
            continue
        spans.append((start, end))
        start = end
        while start < len(line) and line[start].isspace():
            start += 1
    if start < len(line) and line[start:].strip():
        spans.append((start, len(line)))
    return spans


def sentence_of(line: str, quote: str) -> list[int]:
    """1-based ordinals of the sentences of ``line`` that wholly contain ``quote``."""
    spans = sentence_spans(line)
    found = []
    pos = line.find(quote)
    while pos >= 0:
        for i, (s, e) in enumerate(spans, 1):
            if s <= pos and pos + len(quote) <= e:
                found.append(i)
        pos = line.find(quote, pos + 1)
    return found


# Numbers as the papers print them: 3185, 3,200, 21,719, 2.8, 8.4k, 50k, 0.4.
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(k\b)?")

# Numbers written in words in the quotes we catalogue.
WORDS = {
    "a third": 1 / 3,
    "half a second": 0.5,
    "ten thousand": 10000.0,
    "twice": 2.0,
    "double": 2.0,
    "triple": 3.0,
}


def numbers_in(text: str) -> list[float]:
    """Every number ``text`` states, normalized: ``"21,719"`` -> 21719, ``"8.4k"`` -> 8400."""
    out = []
    for m in _NUMBER.finditer(text):
        value = float(m.group(1).replace(",", ""))
        if m.group(2):
            value *= 1000
        out.append(value)
    for phrase, value in WORDS.items():
        if phrase in text.lower():
            out.append(value)
    return out


def states_number(text: str, value: float, rel: float = 1e-9) -> bool:
    """True if ``text`` states ``value`` (after normalizing the formatting)."""
    return any(abs(n - value) <= rel * max(1.0, abs(value)) for n in numbers_in(text))
