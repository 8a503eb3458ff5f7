"""The teaching labs' expected outcomes and ``invoke lab N --check`` (labs/README.md).

Every lab's expectations are data, ``labs/expectations.yaml``: per question the outcome a student should
see (a range of a value the harness computes, or a verdict), why, and the command that produces the run
it is read from. The lab page quotes the same data (harness/lab_pages.py renders it), so the text and
the checker cannot drift apart.

``check(lab)`` reads the student's stored runs (``results/<paper>/<experiment>/<run-id>/``, the
``reports/regress`` pages) and says per expectation **held**, **did not hold** or **not yet run** (with the
command that makes the run). Each expectation is judged on the newest complete run that holds the points it
needs (a ratio of two configurations on one run, unless its sides name different builds), never on a
control point (``control__...``) or an invalid one; the median over the matching points' repetitions.

Kinds of check (``check.kind``):

* ``value``: an expression of point metrics (``vscc_ms / block_latency_ms``), the median over the points
  matching ``points`` (or ``statistic: spread``, max / min), inside ``range``.
* ``ratio``: the median of ``value`` over the ``numerator`` points divided by that over the
  ``denominator`` points, inside ``range``.
* ``claim`` / ``question``: a claim's verdict or a question's answer in the run's ``summary.json``
  (harness/analyze.py), one of ``verdicts`` / ``answers``, its measured value optionally in ``range``.
* ``evidence``: every point of the run complete and ``ledger-proven`` (or of the classes ``evidence`` lists),
  every control point passed.
* ``regress``: a page of ``invoke regress`` (``reports/regress/<page>/regress.json``): the noise pairs
  called (``max_called`` of at least ``min_pairs``), or the bisection's first changed commit and the
  relative change of its ends inside ``range``.
* ``catalogue``: a claim of ``papers/<paper>.yaml`` changed as ``change`` says must be rejected by the
  catalogue's check of trivial bounds (what ``invoke validate`` runs).
* ``refused``: each ``--set`` assignment must be refused before anything starts (harness/config.py).
"""

from __future__ import annotations

import ast
import copy
import functools
import json
import math
import operator
import statistics
from pathlib import Path

import yaml

from . import REPO_ROOT
from .errors import HarnessError
from .lab_pages import HELD, NOT_HELD, NOT_RUN, checked_form, cross_build, lab_of, load, page



# ------------------------------------------------------------------------------------------ the runs

def _read(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _complete_runs(results: Path, paper: str, experiment: str, build: str | None) -> list[Path]:
    """Complete runs of an experiment (every planned point stored), newest first; of one build if given."""
    out = []
    for meta_path in Path(results).glob(f"{paper}/{experiment}/*/metadata.json"):
        run = meta_path.parent
        meta = _read(meta_path)
        if run.is_symlink() or not meta or meta.get("status") != "complete":
            continue
        if build and (meta.get("build") or {}).get("kind", "reference") != build:
            continue
        try:
            planned = (yaml.safe_load((run / "resolved.yaml").read_text()) or {}).get("points") or []
        except (OSError, yaml.YAMLError):
            continue
        if any(not (run / "points" / p / "point.json").is_file() for p in planned):
            continue
        out.append((meta.get("started_utc") or "", run.name, run))
    return [run for *_, run in sorted(out, reverse=True)]


def _points(run: Path) -> list[dict]:
    """The run's measured points: complete, valid, not control; each ``{dir, variant, parameters, metrics}``."""
    out = []
    for point_json in sorted((run / "points").glob("*/point.json")):
        point, summary = _read(point_json), _read(point_json.parent / "summary.json")
        if not point or not summary or point.get("control") or summary.get("control"):
            continue
        if summary.get("status") != "complete" or not summary.get("valid", True):
            continue
        out.append({"dir": point_json.parent, "id": point["id"], "variant": point["variant"],
                    "parameters": point.get("parameters") or {}, "metrics": summary.get("metrics") or {}})
    return out


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return str(a) == str(b)


def _matching(points: list[dict], sel: dict) -> list[dict]:
    return [p for p in points
            if all(_same(p["variant"], v) if k == "variant" else _same(p["parameters"].get(k), v)
                   for k, v in sel.items() if k != "build")]


def block_fill(point: dict) -> float:
    """Mean transactions per data block the block watcher received in the measured window, divided by the
    point's ``block_size``: about 1 when the orderer cuts blocks by size, well below when by its timeout."""
    from .collect import load_measured
    deliveries = load_measured(point["dir"]).get("deliveries")
    if deliveries is None or not len(deliveries):
        return math.nan
    data = deliveries[deliveries["tx_count"] > 0]
    size = point["parameters"].get("block_size")
    return float(data["tx_count"].mean() / size) if len(data) and size else math.nan


@functools.lru_cache(maxsize=64)
def _caliper_point(point_dir: str) -> dict | None:
    from .report.caliper import caliper_point  # decodes the kept ledger: once per point and check
    return caliper_point(Path(point_dir))


def _caliper(key: str):
    """A number of the point's Caliper round (harness/report/caliper.py; lab 07): Caliper's own (``Succ``,
    ``Fail``, ``Throughput (TPS)``, ``Avg Latency (s)``), the kept ledger's count of its round (``valid``,
    ``transactions``) or ``ledger_valid_tps``; NaN where the point ran none."""
    def value(point: dict) -> float:
        found = _caliper_point(str(point["dir"])) or {}
        for part in (found.get("caliper") or {}, found.get("ledger") or {}, found):
            if isinstance(part.get(key), (int, float)):
                return float(part[key])
        return math.nan
    return value


#: Values computed from a point's tables rather than read from its summary's metrics.
DERIVED = {"block_fill": block_fill,
           # Caliper beside our numbers (lab 07)
           "caliper_succ": _caliper("Succ"), "caliper_fail": _caliper("Fail"),
           "caliper_throughput_tps": _caliper("Throughput (TPS)"), "caliper_avg_latency_s": _caliper("Avg Latency (s)"),
           "caliper_ledger_valid": _caliper("valid"), "caliper_ledger_transactions": _caliper("transactions"),
           "caliper_ledger_valid_tps": _caliper("ledger_valid_tps")}

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def evaluate(expression: str, point: dict) -> float:
    """An expression of metric names, numbers, + - * / and parentheses over one point (NaN where a metric
    is missing or a division by zero)."""
    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            if node.id in DERIVED:
                return DERIVED[node.id](point)
            value = point["metrics"].get(node.id)
            return math.nan if value is None else float(value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Div) and right == 0:
                return math.nan
            return _OPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        raise HarnessError(f"value {expression!r}: only metric names, numbers, + - * / and parentheses")
    return walk(ast.parse(expression, mode="eval"))


def _median(points: list[dict], expression: str) -> float:
    values = [v for v in (evaluate(expression, p) for p in points) if not math.isnan(v)]
    return statistics.median(values) if values else math.nan



# ------------------------------------------------------------------------------------------ the checks

def _outcome(e: dict, status: str, measured: str = "", evidence: str = "") -> dict:
    return {"id": e["id"], "question": e["question"].strip(), "status": status, "measured": measured,
            "evidence": evidence, "expected": checked_form(e["check"]), "run": e["run"].strip()}


def _in(value: float, rng) -> bool:
    return rng is None or (not math.isnan(value) and rng[0] <= value <= rng[1])


def _check_value(e, check, results, paper):
    need = check.get("min_points", 1)
    for run in _complete_runs(results, paper, check["experiment"], check.get("build")):
        points = _matching(_points(run), check["points"])
        if len(points) < need:
            continue
        values = [v for v in (evaluate(check["value"], p) for p in points) if not math.isnan(v)]
        if len(values) < need:
            continue
        value = (max(values) / min(values) if min(values) > 0 else math.nan) if check.get("statistic") == "spread" \
            else statistics.median(values)
        return _outcome(e, HELD if _in(value, check.get("range")) else NOT_HELD,
                        f"{value:.3g} (n={len(values)})", str(run))
    return _outcome(e, NOT_RUN)


def _check_ratio(e, check, results, paper):
    need = check.get("min_points", 1)
    num_sel, den_sel = check["numerator"], check["denominator"]
    if cross_build(check):  # two builds are two runs: the newest complete run of each
        sides = []
        for sel in (num_sel, den_sel):
            found = next(((run, pts) for run in _complete_runs(results, paper, check["experiment"], sel.get("build"))
                          if len(pts := _matching(_points(run), sel)) >= need), None)
            if found is None:
                return _outcome(e, NOT_RUN)
            sides.append(found)
        (run_n, num), (run_d, den) = sides
        where = f"{run_n} ÷ {run_d}"
    else:
        found = None
        for run in _complete_runs(results, paper, check["experiment"], check.get("build") or num_sel.get("build")):
            points = _points(run)
            num, den = _matching(points, num_sel), _matching(points, den_sel)
            if len(num) >= need and len(den) >= need:
                found = run
                break
        if found is None:
            return _outcome(e, NOT_RUN)
        where = str(found)
    top, bottom = _median(num, check["value"]), _median(den, check["value"])
    value = top / bottom if bottom and not math.isnan(bottom) else math.nan
    return _outcome(e, HELD if _in(value, check.get("range")) else NOT_HELD,
                    f"{value:.3g} ({top:.4g} ÷ {bottom:.4g}, n={len(num)} and {len(den)})", where)


def _repetitions(run: Path) -> int:
    return int((yaml.safe_load((run / "resolved.yaml").read_text()) or {}).get("repetitions") or 0)


def _check_judged(e, check, results, paper):
    kind = check["kind"]
    key = "claims" if kind == "claim" else "questions"
    for run in _complete_runs(results, paper, check["experiment"], check.get("build")):
        reps = _repetitions(run)
        if "repetitions" in check and reps != check["repetitions"]:
            continue
        if reps < check.get("min_repetitions", 0):
            continue
        summary = _read(run / "summary.json") or {}
        item = next((c for c in summary.get(key) or [] if c.get("id") == check[kind]), None)
        if item is None:
            continue
        said = item.get("verdict") if kind == "claim" else item.get("answer")
        allowed = check["verdicts"] if kind == "claim" else check["answers"]
        measured = item.get("measured")
        ok = said in allowed
        if check.get("range") is not None:
            ok = ok and isinstance(measured, (int, float)) and _in(float(measured), check["range"])
        if check.get("reason"):
            ok = ok and check["reason"] in str(item.get("reason") or "")
        text = f"{said}" + (f", measured {measured:.3g}" if isinstance(measured, (int, float)) else "") \
            + (f" (n={item['repetitions']})" if item.get("repetitions") else "") \
            + (f": {item['reason']}" if item.get("reason") else "")
        return _outcome(e, HELD if ok else NOT_HELD, text, str(run))
    return _outcome(e, NOT_RUN)


def _check_evidence(e, check, results, paper):
    runs = _complete_runs(results, paper, check["experiment"], check.get("build"))
    if not runs:
        return _outcome(e, NOT_RUN)
    run, problems, points = runs[0], [], 0
    # a system without ledger codes proves its counts otherwise (Fabric-X: "independent check"); the lab says which
    accepted = check.get("evidence") or ["ledger-proven"]
    for summary_path in sorted((run / "points").glob("*/summary.json")):
        s = _read(summary_path) or {}
        name, validity = summary_path.parent.name, s.get("validity") or {}
        if s.get("status") != "complete":
            problems.append(f"{name} {s.get('status')}")
        elif s.get("control"):
            if (validity.get("control") or {}).get("status") != "passed":
                problems.append(f"{name}: control {(validity.get('control') or {}).get('status')}")
        else:
            points += 1
            if validity.get("evidence") not in accepted:
                problems.append(f"{name}: {validity.get('evidence')}")
    text = f"{points} points" + (": " + "; ".join(problems) if problems else
                                 f", all {' or '.join(accepted)}, controls passed")
    return _outcome(e, NOT_HELD if problems else HELD, text, str(run))


def _check_regress(e, check, reports):
    path = Path(reports) / "regress" / check["page"] / "regress.json"
    doc = _read(path)
    if not doc:
        return _outcome(e, NOT_RUN)
    if "max_called" in check:
        pairs = doc.get("noise_pairs") or []
        if len(pairs) < check["min_pairs"]:
            return _outcome(e, NOT_RUN, f"{len(pairs)} pairs stored, {check['min_pairs']} needed", str(path))
        called = sum(bool(p.get("changed")) for p in pairs)
        flagged = sum(bool(p.get("flagged")) for p in pairs)
        return _outcome(e, HELD if called <= check["max_called"] else NOT_HELD,
                        f"{called} of {len(pairs)} pairs called ({flagged} flagged by the first test)", str(path))
    bisect = doc.get("bisect")
    if bisect is None:
        return _outcome(e, NOT_RUN)
    ends = bisect.get("ends") or {}
    change = ends.get("relative_change")
    if "threshold" in check:
        if not isinstance(change, (int, float)):
            return _outcome(e, NOT_RUN, bisect.get("why") or "", str(path))
        low, high = check["threshold"]
        called = bool(ends.get("changed"))
        ok = abs(change) >= low if called else abs(change) < high
        return _outcome(e, HELD if ok else NOT_HELD,
                        f"ends {change:+.1%}, {'called' if called else 'not called'} (p {ends.get('p', float('nan')):.3g})",
                        str(path))
    first = bisect.get("first_changed")
    ok = bool(first) and isinstance(change, (int, float)) and _in(float(change), check.get("range"))
    text = (f"first changed {str(first)[:10] if first else 'none'}"
            + (f", ends {change:+.1%}" if isinstance(change, (int, float)) else "")
            + (f" ({bisect['why']})" if bisect.get("why") else ""))
    return _outcome(e, HELD if ok else NOT_HELD, text, str(path))


def _check_catalogue(e, check, papers_dir):
    from .catalogue import trivial_bound_problems
    doc = copy.deepcopy(yaml.safe_load((Path(papers_dir) / f"{check['paper']}.yaml").read_text(encoding="utf-8")))
    found = False
    for exp in doc.get("experiments") or []:
        for claim in exp.get("claims") or []:
            if claim.get("id") == check["claim"]:
                claim.update(check["change"])
                found = True
    if not found:
        raise HarnessError(f"lab expectation {e['id']}: no claim {check['claim']!r} in papers/{check['paper']}.yaml")
    problems = [p for p in trivial_bound_problems(doc) if f"/{check['claim']}:" in p]
    return _outcome(e, HELD if problems else NOT_HELD, problems[0] if problems else "accepted", f"papers/{check['paper']}.yaml")


def _check_refused(e, check):
    from .config import check as check_parameter
    from .config import parse_assignments
    said = []
    for assignment in check["set"]:
        try:
            for name, value in parse_assignments([assignment]).items():
                for one in value if isinstance(value, list) else [value]:
                    check_parameter(name, one, "cli")
        except HarnessError as err:
            said.append(f"--set {assignment}: {err}")
            continue
        return _outcome(e, NOT_HELD, f"--set {assignment} accepted")
    return _outcome(e, HELD, "; ".join(said))


def check(number: int, results: Path | None = None, reports: Path | None = None,
          papers_dir: Path | None = None, labs: dict[int, dict] | None = None) -> list[dict]:
    """Each expectation of lab ``number`` against the stored runs: ``{id, question, status, measured,
    evidence, expected, run}`` with status ``held``, ``did not hold`` or ``not yet run``."""
    from .reproduce import REPORTS, RESULTS
    results, reports = Path(results or RESULTS), Path(reports or REPORTS)
    papers_dir = Path(papers_dir or REPO_ROOT / "papers")
    lab = lab_of(number, labs)
    paper = lab["paper"]
    out = []
    for e in lab["expectations"]:
        c, kind = e["check"], e["check"]["kind"]
        p = c.get("paper", paper)
        if kind == "value":
            out.append(_check_value(e, c, results, p))
        elif kind == "ratio":
            out.append(_check_ratio(e, c, results, p))
        elif kind in ("claim", "question"):
            out.append(_check_judged(e, c, results, p))
        elif kind == "evidence":
            out.append(_check_evidence(e, c, results, p))
        elif kind == "regress":
            out.append(_check_regress(e, c, reports))
        elif kind == "catalogue":
            out.append(_check_catalogue(e, c, papers_dir))
        else:
            out.append(_check_refused(e, c))
    return out


def report(number: int, outcomes: list[dict]) -> str:
    """``invoke lab N --check``'s text: one entry per expectation, then the counts."""
    lines = [f"lab {number:02d}: {len(outcomes)} expected outcomes"]
    for i, o in enumerate(outcomes, 1):
        lines.append(f"{i}. {o['status'].upper():<13} {o['id']}: {o['question']}")
        lines.append(f"   expected: {o['expected']}")
        if o["measured"]:
            lines.append(f"   measured: {o['measured']}")
        if o["evidence"]:
            lines.append(f"   from:     {o['evidence']}")
        if o["status"] == NOT_RUN:
            lines.append(f"   run:      {o['run']}")
    counts = {s: sum(o["status"] == s for o in outcomes) for s in (HELD, NOT_HELD, NOT_RUN)}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items()))
    return "\n".join(lines)


def summary_text(number: int, labs: dict[int, dict] | None = None) -> str:
    """``invoke lab N``: the lab's page and its expectations, in short."""
    lab = lab_of(number, labs)
    lines = [f"lab {number:02d}: {page(number).relative_to(REPO_ROOT)}"]
    for i, e in enumerate(lab["expectations"], 1):
        lines += [f"{i}. {e['question'].strip()} ({e['id']})", f"   expected: {e['expect'].strip()}",
                  f"   run:      {e['run'].strip()}"]
    lines.append(f"check your stored runs: invoke lab {number} --check")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ the plot

def plot(number: int, results: Path | None = None, reports: Path | None = None,
         labs: dict[int, dict] | None = None) -> Path:
    """Draw the lab's ``plot`` (e.g. lab 01: block latency and VSCC against block size) from the newest complete
    run that swept its ``x``: the median of each metric per value of ``x``, the bars from the smallest to the
    largest repetition. Writes ``reports/labs/<file>`` and returns its path."""
    from .figure_png import FIGURE_RC, plt, png_bytes
    from .reproduce import REPORTS, RESULTS
    results, reports = Path(results or RESULTS), Path(reports or REPORTS)
    lab = lab_of(number, labs)
    spec = lab.get("plot")
    if not spec:
        raise HarnessError(f"lab {number} has no plot")
    chosen = None
    for run in _complete_runs(results, lab["paper"], spec["experiment"], spec.get("build")):
        points = _matching(_points(run), spec.get("points") or {})
        xs = sorted({p["parameters"].get(spec["x"]) for p in points} - {None})
        if len(xs) >= 2:
            chosen = (run, points, xs)
            break
    if chosen is None:
        raise HarnessError(f"lab {number}'s plot needs a complete run with two values of {spec['x']} or more; "
                           f"run: {spec['run']}")
    run, points, xs = chosen
    with plt.rc_context(FIGURE_RC):
        fig, ax = plt.subplots(figsize=(6.4, 3.8))
        for metric in spec["y"]:
            per = [[evaluate(metric, p) for p in points if _same(p["parameters"].get(spec["x"]), x)] for x in xs]
            mid = [statistics.median(v) for v in per]
            ax.errorbar(xs, mid, yerr=[[m - min(v) for m, v in zip(mid, per)], [max(v) - m for m, v in zip(mid, per)]],
                        marker="o", capsize=3, label=f"{metric} (median, min-max of {max(map(len, per))})")
        ax.set_xlabel(spec["x"])
        ax.set_ylabel(spec.get("y_label", "ms"))
        ax.set_title(f"Lab {number:02d}: {spec['what']}\n{run.name}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend()
        data = png_bytes(fig)
    out = reports / "labs" / spec["file"]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return out
