"""Checks of the paper catalogue (``papers/*.yaml``), as plain functions.

Each ``*_problems`` function takes one loaded catalogue document and returns a
list of human-readable problems (empty when the check passes).  The tests run
them on the real catalogue and on deliberately broken copies, so that every
check is shown to be able to fail.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import yaml
from jsonschema import Draft202012Validator

from harness.catalogue import catalogue_schema
from seedtext import REPO, WORDS, numbers_in, seed_lines, seeds_dir, sentence_of, source_lines

PAPERS = REPO / "papers"
PAPER_IDS = ("fastfabric", "validation-opt", "fujitsu-api", "bftsmart-orderer", "fabric-x")


def catalogue_files() -> list[Path]:
    """Every catalogue file, sorted."""
    return sorted(PAPERS.glob("*.yaml"))


def load(path: Path) -> dict:
    """Load one catalogue file (anchors resolved by PyYAML)."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def validator() -> Draft202012Validator:
    """papers/schema.json as the harness applies it: with the discovered systems and drivers filled in."""
    schema = catalogue_schema(PAPERS)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_errors(doc: Any) -> list[str]:
    """Schema violations as ``"<json path>: <message>"``, path like ``experiments/0/runnable``."""
    errs = sorted(validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errs]


def citations(node: Any, path: str = "") -> Iterator[tuple[str, dict]]:
    """Every citation object (a mapping with ``quote`` and ``seed_line`` or ``file``) and its path."""
    if isinstance(node, dict):
        if "quote" in node and ("seed_line" in node or "file" in node):
            yield path, node
        for k, v in node.items():
            yield from citations(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from citations(v, f"{path}/{i}")


def _cited_lines(doc: dict, c: dict) -> tuple[str, int, list[str]]:
    """What a citation names: the text (seed or source file), its 1-based line and that text's lines.

    A source citation (``file``) of a paper without ``paper.sources``, or a seed citation of one without a
    seed, names no text: the name says so and the lines are empty, so the line is reported outside."""
    paper = doc["paper"]
    if "file" in c:
        if not paper.get("sources"):
            return f"{c['file']} (the paper names no sources folder)", c["line"], []
        return c["file"], c["line"], source_lines(paper["sources"], c["file"])
    if not paper.get("seed"):
        return "the seed file (the paper names none)", c["seed_line"], []
    return "the seed file", c["seed_line"], seed_lines(paper["seed"])


def citation_problems(doc: dict) -> list[str]:
    """Each quote stands on its line (``seed_line`` of the seed, or ``line`` of ``file`` in the paper's
    sources folder), inside sentence ``sentence``."""
    out = []
    for path, c in citations(doc):
        text, n, lines = _cited_lines(doc, c)
        if not 1 <= n <= len(lines):
            out.append(f"{path}: line {n} outside {text} ({len(lines)} lines)")
            continue
        line = lines[n - 1]
        if c["quote"] not in line:
            out.append(f"{path}: quote not on line {n} of {text}: {c['quote']!r}")
            continue
        if "sentence" not in c:
            out.append(f"{path}: no sentence number")
        elif c["sentence"] not in sentence_of(line, c["quote"]):
            out.append(f"{path}: quote is in sentence {sentence_of(line, c['quote'])} of line {n}, not {c['sentence']}")
    return out


def _close(a: float, b: float, rel: float = 1e-3) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(b))


def _stated(text: str, value: float) -> bool:
    return any(_close(n, value) for n in numbers_in(text))


def value_problems(doc: dict) -> list[str]:
    """Every published value (and uncertainty) and every claim's expected value is stated by its quote."""
    out = []
    for i, exp in enumerate(doc["experiments"]):
        for j, pub in enumerate(exp.get("published", [])):
            where = f"experiments/{i}/published/{j} ({pub['id']})"
            quote = pub["citation"]["quote"]
            scale = pub.get("value_scale", 1)
            if "value_text" in pub:
                if pub["value_text"] not in quote:
                    out.append(f"{where}: value_text {pub['value_text']!r} not in quote")
                elif not _stated(pub["value_text"], pub["value"] / scale):
                    out.append(f"{where}: value_text {pub['value_text']!r} does not state {pub['value']}")
            elif not _stated(quote, pub["value"] / scale):
                out.append(f"{where}: value {pub['value']} not in quote {quote!r}")
            if "uncertainty" in pub and not _stated(quote, pub["uncertainty"]):
                out.append(f"{where}: uncertainty {pub['uncertainty']} not in quote {quote!r}")
        for j, claim in enumerate(exp.get("claims", [])):
            if "expected" not in claim:
                continue
            where = f"experiments/{i}/claims/{j} ({claim['id']})"
            text = claim["expected_text"]
            if text not in claim["citation"]["quote"]:
                out.append(f"{where}: expected_text {text!r} not in quote")
                continue
            stated = numbers_in(text)
            transform = claim.get("expected_transform")
            if transform == "percent_increase":
                stated = [1 + n / 100 for n in stated]
            elif transform == "percent_decrease":
                stated = [1 - n / 100 for n in stated]
            elif transform == "ratio" and len(stated) >= 2:
                stated = [stated[0] / stated[-1]]
            lo, hi = (min(stated), max(stated)) if stated else (None, None)
            if lo is None:
                out.append(f"{where}: expected_text {text!r} states no number")
            elif not (lo * (1 - 1e-3) <= claim["expected"] <= hi * (1 + 1e-3)):
                out.append(f"{where}: expected {claim['expected']} not stated by {text!r} (reads {stated})")
    return out


def location_problems(doc: dict) -> list[str]:
    """Every published value and claim says which figure, table or passage it belongs to."""
    out = []
    for i, exp in enumerate(doc["experiments"]):
        for kind in ("published", "claims"):
            for j, item in enumerate(exp.get(kind, [])):
                if not item["citation"].get("location", "").strip():
                    out.append(f"experiments/{i}/{kind}/{j} ({item['id']}): citation has no location")
    return out


def _ids(items: list[dict]) -> list[str]:
    return [x["id"] for x in items]


def _dupes(ids: list[str]) -> set[str]:
    return {x for x in ids if ids.count(x) > 1}


def _matches(want: dict, have: dict) -> bool:
    """``want`` params are all equal in ``have`` (missing keys do not match)."""
    return all(k in have and have[k] == v for k, v in want.items())


def structure_problems(doc: dict) -> list[str]:
    """Unique ids, declared switches, variants and parameters that exist, runnable entries complete."""
    out = []
    paper = doc["paper"]
    switches = paper.get("switches", {})
    exps = doc["experiments"]
    by_id = {e["id"]: e for e in exps}
    if _dupes(_ids(exps)):
        out.append(f"duplicate experiment ids: {_dupes(_ids(exps))}")
    for i, exp in enumerate(exps):
        where = f"experiments/{i} ({exp['id']})"
        variants = exp.get("variants", [])
        vids = set(_ids(variants))
        for kind in ("variants", "published", "claims"):
            d = _dupes(_ids(exp.get(kind, [])))
            if d:
                out.append(f"{where}: duplicate {kind} ids {d}")
        if not exp["runnable"] and not exp.get("not_runnable_reason", "").strip():
            out.append(f"{where}: runnable is false but there is no not_runnable_reason")
        if exp["runnable"]:
            scales = exp.get("scales", {})
            for s in ("smoke", "local", "paper"):
                if s not in scales:
                    out.append(f"{where}: runnable but no {s} scale")
            for s in ("smoke", "local"):
                if s in scales and not {"transactions", "duration_s"} & set(scales[s]):
                    out.append(f"{where}: {s} scale gives neither transactions nor duration_s")
            if not any(v.get("runnable", True) for v in variants):
                out.append(f"{where}: runnable but every variant is not")
        for v in variants:
            if v.get("runnable") is False and not v.get("not_runnable_reason", "").strip():
                out.append(f"{where}: variant {v['id']} not runnable without a reason")
            for name, value in v["switches"].items():
                spec = switches.get(name)
                if spec is None:
                    out.append(f"{where}: variant {v['id']} sets undeclared switch {name}")
                elif spec["type"] == "boolean" and not isinstance(value, bool):
                    out.append(f"{where}: variant {v['id']} switch {name} must be boolean")
                elif spec["type"] == "enum" and value not in spec["values"]:
                    out.append(f"{where}: variant {v['id']} switch {name}={value!r} not in {spec['values']}")
        params = exp.get("parameters", {})
        known = set(params.get("fixed", {})) | set(params.get("sweep", {}))
        if "axes" in exp:
            known |= {exp["axes"]["x"]}
        for j, pub in enumerate(exp.get("published", [])):
            if "variant" in pub and pub["variant"] not in vids:
                out.append(f"{where}: published {pub['id']} names unknown variant {pub['variant']}")
            rel = pub.get("relative_to")
            if rel and rel["variant"] not in vids:
                out.append(f"{where}: published {pub['id']} relative to unknown variant {rel['variant']}")
            for k in pub.get("params", {}):
                if k not in known:
                    out.append(f"{where}: published {pub['id']} uses parameter {k} the experiment does not define")
        for claim in exp.get("claims", []):
            for side in ("numerator", "denominator"):
                op = claim.get(side)
                if not op:
                    continue
                target = by_id.get(op.get("experiment", exp["id"]))
                if target is None:
                    out.append(f"{where}: claim {claim['id']} {side} names unknown experiment {op['experiment']}")
                    continue
                if op["variant"] not in _ids(target.get("variants", [])):
                    out.append(f"{where}: claim {claim['id']} {side} names unknown variant {op['variant']}")
            if "variant" in claim and claim["variant"] not in vids:
                out.append(f"{where}: claim {claim['id']} names unknown variant {claim['variant']}")
    return out


def ratio_consistency_problems(doc: dict) -> list[str]:
    """Where a ratio claim's two sides are both published numbers, their ratio is within its tolerance."""
    out = []
    for exp in doc["experiments"]:
        pubs = [p for p in exp.get("published", []) if "relative_to" not in p]
        for claim in exp.get("claims", []):
            if claim["compare"] != "ratio":
                continue
            sides = []
            for side in ("numerator", "denominator"):
                op = claim[side]
                if op.get("experiment", exp["id"]) != exp["id"]:
                    break
                metric = op.get("metric", claim["metric"])
                sides.append([p["value"] for p in pubs
                              if p.get("variant") == op["variant"] and p["metric"] == metric
                              and _matches(op.get("params", {}), p.get("params", {}))])
            if len(sides) != 2 or not sides[0] or not sides[1]:
                continue
            tol = claim["tolerance"].get("relative", 0.0)
            for a in sides[0]:
                for b in sides[1]:
                    r, want = a / b, claim["expected"]
                    band = max(tol, 0.05) * want
                    bound = claim.get("bound", "approx")
                    if (bound == "lower" and r < want - band) or (bound == "upper" and r > want + band) \
                            or (bound in ("approx", "exact") and abs(r - want) > band):
                        out.append(f"{exp['id']}/{claim['id']}: published {a}/{b} = {r:.3f}, claim expects {bound} {want}")
    return out


_CAPTION = re.compile(r"^\s*(?:Figs?\.\s*\d+[a-z]?[.:]|Figure\s+\d+:|TABLE\s+[IVX]+\b|Table\s+\d+:)")


def caption_lines(seed: str) -> list[int]:
    """1-based lines of the seed file that open a figure or table caption."""
    return [i for i, line in enumerate(seed_lines(seed), 1) if _CAPTION.match(line)]


def coverage_problems(doc: dict) -> list[str]:
    """Every figure/table caption of the paper is an experiment or listed as a figure without results.

    A paper of source files (Fabric-X) has no captions: its texts are a proposal and READMEs whose numbers
    stand in prose, each catalogued experiment citing its line."""
    if not doc["paper"].get("seed"):
        return []
    covered = {e["citation"]["seed_line"] for e in doc["experiments"]}
    covered |= {f["caption_line"] for f in doc["paper"].get("figures_without_results", [])}
    lines = seed_lines(doc["paper"]["seed"])
    out = []
    for n in caption_lines(doc["paper"]["seed"]):
        # A caption may be split over two lines ("TABLE I" / "END-TO-END THROUGHPUT").
        if n not in covered and n + 1 not in covered:
            out.append(f"caption on line {n} is not catalogued: {lines[n - 1].strip()[:80]!r}")
    return out
