"""Open data (``invoke export``): a paper's pooled measurements and its claims as tidy tables.

For each experiment the same runs the report pools (``selection.select_runs``, ``analyze.analyze_pool``)
give two tables, written as parquet (schema version in the metadata) and CSV under ``--out``:

* ``measurements``: one row per point and metric of every pooled run, with the run, its build, the
  host facts, the metric's unit and the point's status and validity (docs/results-format.md, "Export").
* ``claims``: one row per claim with its band, the sides it is computed from, the measured estimate,
  its 95% interval, the number of repetitions, the method and the verdict.
* ``questions``: one row per question of ours (catalogue ``questions``): its sides, threshold, measured
  ratio, 95% interval, repetitions and answer (yes, no, undecided, not answered).

Nested values (a point's sweep, a claim's sides, a build's keys) are JSON text, so both formats carry
them and ``json.loads`` reads them back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from . import SCHEMA_VERSION, cpus
from .analyze import all_metrics, analyze_pool
from .claims import claim_band
from .catalogue import load_paper
from .collect import write_table
from .errors import HarnessError
from .report import conditions
from .rundir import Run, read_json
from .selection import build_identity, select_runs

MEASUREMENT_COLUMNS = ("paper", "experiment", "variant", "sweep", "repetition", "point", "run_id", "build_kind",
                       "build", "commit", "scale", "provider", "host_cpus_online", "host_cpus_usable", "cpu_model",
                       "point_cpus",
                       "metric", "value", "unit", "status", "valid", "invalid_reason", "revisits")
CLAIM_COLUMNS = ("paper", "experiment", "claim", "statement", "compare", "metric", "expected", "tolerance",
                 "bound", "band_low", "band_high", "sides", "aggregate", "every_point", "measured", "interval_low",
                 "interval_high", "intervals", "n", "repetitions_needed", "method", "verdict", "reason",
                 "paper_cores", "verdict_at_paper_cores", "runs")
QUESTION_COLUMNS = ("paper", "experiment", "question_id", "question", "sides", "metric", "threshold", "measured",
                    "interval_low", "interval_high", "intervals", "n", "repetitions_needed", "method", "answer", "reason",
                    "evidence_class", "runs", "revisits")


def _question_row(question: dict, paper_id: str, stored: dict, runs: list[str]) -> dict:
    spec = next(q for q in stored.get("questions") or [] if q["id"] == question["id"])
    # a question over a sweep is answered per configuration: its estimates go to ``intervals``, as a claim's
    measured, interval = question.get("measured"), question.get("interval")
    single = not isinstance(measured, list)
    return {"paper": paper_id, "experiment": stored["id"], "question_id": question["id"],
            "question": question["question"],
            "sides": json.dumps({k: spec[k] for k in ("numerator", "denominator")}, sort_keys=True),
            "metric": question.get("metric"), "threshold": question["threshold"],
            "measured": measured if single else None,
            "interval_low": interval[0] if single and interval else None,
            "interval_high": interval[1] if single and interval else None,
            "intervals": None if single else _text({"configurations": question.get("configurations"),
                                                    "measured": measured, "intervals": interval}),
            "n": question.get("repetitions"),
            "repetitions_needed": question.get("repetitions_needed"), "method": question.get("method"),
            "answer": question["answer"], "reason": question.get("reason"),
            "evidence_class": question.get("evidence_class"), "runs": json.dumps(runs)}


def _text(value) -> str | None:
    """JSON text of a nested value (keys sorted); None stays None."""
    return None if value is None else json.dumps(value, sort_keys=True)


def _point_rows(run: Run, paper: str, experiment: str, units: dict[str, str]) -> list[dict]:
    """The measurement rows of one pooled run: every metric of every point summary (written by analyze_pool)."""
    meta, host = run.metadata, run.metadata.get("host") or {}
    identity = build_identity(meta)
    facts = {"paper": paper, "experiment": experiment, "run_id": run.id, "build_kind": identity["kind"],
             "build": _text(identity.get("keys") or identity.get("source")),
             "commit": (meta.get("git") or {}).get("sha"), "scale": meta.get("scale"),
             "provider": meta.get("provider"), "host_cpus_online": host.get("cpus_online", host.get("cores")),
             "host_cpus_usable": cpus.host_usable(host), "cpu_model": host.get("cpu_model")}
    rows = []
    for summary_path in sorted((run.path / "points").glob("*/summary.json")):
        summary = read_json(summary_path)
        if "metrics" not in summary:  # a point that never ran to a summary
            continue
        point = {"variant": summary["variant"], "sweep": _text(summary["sweep"]),
                 "repetition": summary["repetition"], "point": summary["point"],
                 "point_cpus": (summary.get("cpus") or {}).get("effective"), "status": summary["status"],
                 "valid": summary["valid"], "invalid_reason": summary.get("invalid_reason")}
        for name, value in sorted(summary["metrics"].items()):
            rows.append({**facts, **point, "metric": name, "value": value,
                         "unit": units[name].unit if name in units else None})
    return rows


def _claim_row(claim: dict, paper: str, experiment: dict, runs: list[str]) -> dict:
    """One claim's row: its band, sides, estimate, interval and verdict (judge.evaluate_claim's result)."""
    spec = next(c for c in experiment.get("claims") or [] if c["id"] == claim["id"])
    low = high = None
    if spec.get("expected") is not None:
        low, high, _ = claim_band(spec)
    sides = ({s: spec[s] for s in ("numerator", "denominator")} if spec["compare"] == "ratio"
             else {"value": {"variant": spec.get("variant"), "params": spec.get("params")}})
    measured, interval = claim.get("measured"), claim.get("interval")
    single = not isinstance(measured, list)
    cores = claim.get("cores") or {}
    return {"paper": paper, "experiment": experiment["id"], "claim": claim["id"], "statement": claim.get("statement"),
            "compare": claim["compare"], "metric": claim.get("metric"), "expected": claim.get("expected"),
            "tolerance": _text(claim.get("tolerance")), "bound": spec.get("bound"),
            "band_low": low, "band_high": high, "sides": _text(sides), "aggregate": spec.get("aggregate"),
            "every_point": _text(spec.get("every_point")),
            "measured": measured if single else None,
            "interval_low": interval[0] if single and interval else None,
            "interval_high": interval[1] if single and interval else None,
            "intervals": None if single else _text({"configurations": claim.get("configurations"),
                                                    "measured": measured, "intervals": interval}),
            "n": claim.get("repetitions"), "repetitions_needed": claim.get("repetitions_needed"),
            "method": claim.get("method"), "verdict": claim["verdict"], "reason": claim.get("reason"),
            "paper_cores": cores.get("paper"), "verdict_at_paper_cores": cores.get("verdict"), "runs": _text(runs)}


def export_paper(paper_id: str, results: Path, out: Path, papers_dir: Path | None = None,
                 runs: list[Path] | None = None, since: str | None = None) -> dict[str, pd.DataFrame]:
    """Write ``measurements``, ``claims`` and ``questions`` (``.parquet`` and ``.csv``) of ``paper_id`` under
    ``out`` from the runs the report would pool (``runs``: only these run directories; ``since``: started at or
    after), and return the tables."""
    paper = load_paper(paper_id, papers_dir)
    for path in runs or []:
        named = Run.open(path)  # refuses a directory that is not a run
        if named.metadata["paper"] != paper_id:
            raise HarnessError(f"--run {path}: a run of paper {named.metadata['paper']!r}, not {paper_id!r}")
    units = all_metrics()
    measurements, claims, questions = [], [], []
    for experiment in paper.experiments:
        selection = select_runs(results, paper_id, experiment["id"], named=runs, since=since,
                                judged_when=experiment.get("judged_when") or None)
        if selection is None:
            continue
        summary = analyze_pool(selection.pooled)
        stored = selection.shown.stored("experiment")["experiment"]
        # an experiment of ours re-running the paper's on today's Fabric: the paper's experiments it re-runs
        revisits = json.dumps(experiment["revisits"]) if experiment.get("revisits") else None
        for run in selection.pooled:
            measurements += [{**row, "revisits": revisits} for row in _point_rows(run, paper_id, experiment["id"], units)]
        # the catalogue's conditions for judging, as the report applies them (harness/report/conditions.py)
        judged = conditions.apply(summary["claims"], {**stored, "judged_when": experiment.get("judged_when")},
                                  selection.configuration.get("parameters") or {}, selection.configuration.get("scale"))
        claims += [_claim_row(c, paper_id, stored, summary["runs"]) for c in judged]
        questions += [{**_question_row(q, paper_id, stored, summary["runs"]), "revisits": revisits}
                      for q in summary.get("questions") or []]
    if not measurements:
        raise HarnessError(f"no stored runs of paper {paper_id!r} to export (invoke reproduce --paper {paper_id})")
    tables = {"measurements": pd.DataFrame(measurements, columns=list(MEASUREMENT_COLUMNS)),
              "claims": pd.DataFrame(claims, columns=list(CLAIM_COLUMNS)),
              "questions": pd.DataFrame(questions, columns=list(QUESTION_COLUMNS))}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        write_table(df, out / f"{name}.parquet", name)
        df.to_csv(out / f"{name}.csv", index=False)
    (out / "README.txt").write_text(
        f"Export of paper {paper_id} (schema version {SCHEMA_VERSION}): measurements, claims and questions, as parquet and "
        "CSV; columns and a pandas snippet that recomputes every verdict: docs/results-format.md, \"Export\".\n",
        encoding="utf-8")
    return tables
