"""The teaching labs' expectations as data and as text: ``labs/expectations.yaml`` read and checked for
shape, and each lab page's "Expected outcomes" block rendered from it (harness/labs.py checks a student's
runs against the same data; labs/README.md).

A lab page's section between ``BEGIN`` and ``END`` is ``render(lab)``: ``invoke lab N --write`` rewrites it,
and tests/labs/test_lab_check.py fails when the page and the data differ, so the text and the checker cannot
drift apart.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from . import REPO_ROOT
from .errors import HarnessError

LABS_DIR = REPO_ROOT / "labs"
EXPECTATIONS = LABS_DIR / "expectations.yaml"

HELD, NOT_HELD, NOT_RUN = "held", "did not hold", "not yet run"
KINDS = ("value", "ratio", "claim", "question", "evidence", "regress", "catalogue", "refused")

BEGIN = "<!-- expected outcomes: generated from labs/expectations.yaml by `invoke lab {n} --write`; edit the data, not this block -->"
END = "<!-- end of expected outcomes -->"


# ------------------------------------------------------------------------------------------ the data

def load(path: Path = EXPECTATIONS) -> dict[int, dict]:
    """The labs' expectations by lab number, checked for shape (a broken file fails here, not mid-check)."""
    doc = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    labs = {}
    for lab in doc.get("labs") or []:
        n = int(lab["lab"])
        if not lab.get("paper"):
            raise HarnessError(f"{path}: lab {n} names no paper (the catalogue its runs are of)")
        ids = [e["id"] for e in lab.get("expectations") or []]
        if len(set(ids)) != len(ids):
            raise HarnessError(f"{path}: lab {n} repeats an expectation id")
        for e in lab.get("expectations") or []:
            missing = [k for k in ("id", "question", "expect", "why", "run", "check") if not e.get(k)]
            if missing:
                raise HarnessError(f"{path}: lab {n}, {e.get('id')}: lacks {', '.join(missing)}")
            kind = e["check"].get("kind")
            if kind not in KINDS:
                raise HarnessError(f"{path}: lab {n}, {e['id']}: unknown check kind {kind!r} (one of {', '.join(KINDS)})")
            bounds = e["check"].get("range")
            if bounds is not None and not (len(bounds) == 2 and bounds[0] <= bounds[1]):
                raise HarnessError(f"{path}: lab {n}, {e['id']}: range must be [low, high], got {bounds!r}")
        labs[n] = lab
    return labs


def lab_of(number: int, labs: dict[int, dict] | None = None) -> dict:
    labs = load() if labs is None else labs
    if number not in labs:
        raise HarnessError(f"no lab {number}: the labs are " + ", ".join(str(n) for n in sorted(labs))
                           + " (labs/README.md)")
    return labs[number]


def page(number: int, labs_dir: Path = LABS_DIR) -> Path:
    """The lab's page, ``labs/NN-*.md``."""
    found = sorted(Path(labs_dir).glob(f"{number:02d}-*.md"))
    if len(found) != 1:
        raise HarnessError(f"lab {number}: expected one page labs/{number:02d}-*.md, found {len(found)}")
    return found[0]


# ------------------------------------------------------------------------------------------ the text

def _num(x) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) else str(x)


def _where(sel: dict) -> str:
    text = ", ".join(f"{k} {_num(v)}" if k == "variant" else f"{k}={_num(v)}" for k, v in sel.items() if k != "build")
    return text + (f" ({sel['build']} build)" if sel.get("build") else "")


def checked_form(check: dict) -> str:
    """What the checker computes and accepts, in words (the page shows it beside the expectation)."""
    kind, rng = check["kind"], check.get("range")
    within = f" in [{_num(rng[0])}, {_num(rng[1])}]" if rng else ""
    exp = check.get("experiment")
    build = f", {check['build']} build" if check.get("build") else ""
    need = f", at least {check['min_points']} points" if check.get("min_points", 1) > 1 else ""
    if kind == "value":
        stat = "max ÷ min" if check.get("statistic") == "spread" else "median"
        return f"`{exp}`{build}, {_where(check['points'])}{need}: {stat} of `{check['value']}`{within}"
    if kind == "ratio":
        return (f"`{exp}`{build}{need}: median `{check['value']}` at {_where(check['numerator'])} ÷ at "
                f"{_where(check['denominator'])}{within}" + ("" if cross_build(check) else ", same run"))
    if kind in ("claim", "question"):
        what = "verdict" if kind == "claim" else "answer"
        allowed = " or ".join(f"*{v}*" for v in check["verdicts" if kind == "claim" else "answers"])
        reps = ""
        if "repetitions" in check:
            reps = f", a run of {check['repetitions']} repetition(s)"
        elif check.get("min_repetitions"):
            reps = f", a run of at least {check['min_repetitions']} repetitions"
        measured = f", measured{within}" if rng else ""
        reason = f", its reason saying \"{check['reason']}\"" if check.get("reason") else ""
        return f"`{exp}`{build}{reps}: {kind} `{check[kind]}` {what} {allowed}{measured}{reason}"
    if kind == "evidence":
        proven = " or ".join(check.get("evidence") or ["ledger-proven"])
        return f"`{exp}`{build}: every point complete and {proven}, every control point passed"
    if kind == "regress":
        if "max_called" in check:
            return (f"`reports/regress/{check['page']}`: at most {check['max_called']} of at least "
                    f"{check['min_pairs']} pairs of batches of one commit called a change")
        if "threshold" in check:
            low, high = check["threshold"]
            return (f"`reports/regress/{check['page']}`: the ends of the range, if called, changed by at least "
                    f"{low:.0%}; if not called, by less than {high:.0%}")
        return (f"`reports/regress/{check['page']}`: bisection names a first changed commit; "
                f"relative change of the ends{within}")
    if kind == "catalogue":
        return (f"`papers/{check['paper']}.yaml` with claim `{check['claim']}` changed to "
                + ", ".join(f"{k}: {v}" for k, v in check["change"].items()) + ": rejected by the catalogue check")
    if kind == "refused":
        return "refused before anything starts: " + ", ".join(f"`--set {a}`" for a in check["set"])
    raise HarnessError(f"unknown check kind {kind!r}")


def render(number: int, labs: dict[int, dict] | None = None) -> str:
    """The lab page's "Expected outcomes" block (between ``BEGIN`` and ``END``) from the data."""
    lab = lab_of(number, labs)
    lines = [BEGIN.format(n=number), "",
             f"Check your stored runs against these with `invoke lab {number} --check`: each says *{HELD}*, "
             f"*{NOT_HELD}* or *{NOT_RUN}* (with the command to run)."
             + (f" `invoke lab {number} --plot` draws {lab['plot']['what']} (`reports/labs/{lab['plot']['file']}`) from "
                f"the run of `{lab['plot']['run']}`." if lab.get("plot") else ""), ""]
    for i, e in enumerate(lab["expectations"], 1):
        lines += [f"{i}. **{e['question'].strip()}** (`{e['id']}`)",
                  f"   - Expected: {e['expect'].strip()}",
                  f"   - Checked: {checked_form(e['check'])}.",
                  f"   - Why: {' '.join(e['why'].split())}",
                  f"   - Run: `{e['run'].strip()}`", ""]
    lines.append(END)
    return "\n".join(lines) + "\n"


def page_block(text: str, number: int) -> str | None:
    """The generated block a lab page holds now (None without its markers)."""
    start = text.find(BEGIN.format(n=number))
    end = text.find(END)
    if start < 0 or end < start:
        return None
    return text[start:end + len(END)] + "\n"


def write_page(number: int, labs_dir: Path = LABS_DIR, labs: dict[int, dict] | None = None) -> bool:
    """Rewrite the page's generated block from the data (the block must exist); True when it changed."""
    path = page(number, labs_dir)
    text = path.read_text(encoding="utf-8")
    old = page_block(text, number)
    if old is None:
        raise HarnessError(f"{path}: no expected-outcomes block (its first line must be: {BEGIN.format(n=number)})")
    new = render(number, labs)
    if new == old:
        return False
    path.write_text(text.replace(old, new), encoding="utf-8")
    return True


def cross_build(check: dict) -> bool:
    """Whether a ratio's two sides name different builds (then they need not share a run)."""
    return (check.get("numerator") or {}).get("build") != (check.get("denominator") or {}).get("build")

