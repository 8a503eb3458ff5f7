"""Re-check a stored run from its raw files, as a third party would check a run someone shared.

``invoke verify RUN_DIR [--point P]`` makes every point's tables anew from
``raw/<host>/`` and the fetched logs (``collect.raw_tables``, not the stored
parquet), runs every validity check on them (harness/validity.py, our
verifier included) and compares the result with what the run stored in the
point's ``summary.json``; the stored tables the metrics come from must equal
the ones the raw files give. A point passes only if it completed, the re-check
finds no problem, and the stored result agrees. Our verifier runs afresh
here; a report's analysis reuses its stored result for unchanged block
files (``verifier.json`` of the point).
"""

from __future__ import annotations

from pathlib import Path

from . import validity
from .collect import load_point, raw_tables, tables_differ
from .errors import HarnessError
from .rundir import Run, read_json


def recheck_point(point_dir: Path) -> dict:
    """One point re-checked from its raw files: ``point``, ``stored_status``, ``problems`` (the re-check's),
    ``agrees`` (whether the stored status says the same) and ``passed``."""
    point_dir = Path(point_dir)
    point = read_json(point_dir / "point.json")
    summary_path = point_dir / "summary.json"
    stored = read_json(summary_path) if summary_path.is_file() else {}
    stored_status = stored.get("status", "no summary")
    try:
        tables = raw_tables(point_dir)
        context = {**validity.point_context(point_dir), "fresh_verifier": True}
        _, problems = validity.check_point(point_dir, point, tables, context=context)
        # the metrics come from the stored tables: they must be what the raw files give
        problems = tables_differ(tables, load_point(point_dir)) + problems
    except HarnessError as e:
        problems = [f"validity check: {e}"]
    stored_failed_validity = stored_status == "failed" and str(stored.get("reason") or "").startswith("validity:")
    if stored_status == "complete":
        agrees = not problems
    elif stored_failed_validity:
        agrees = bool(problems)
    else:
        agrees = True  # a point that never completed: the re-check has nothing to disagree with
    reasons = list(problems)
    if stored_status != "complete" and not stored_failed_validity:
        reasons.insert(0, f"the point did not complete: {stored.get('reason') or stored_status}")
    if not agrees:
        reasons.insert(0, f"stored result '{stored_status}' disagrees with the re-check")
    return {"point": point["id"], "stored_status": stored_status, "problems": problems, "agrees": agrees,
            "passed": stored_status == "complete" and not problems and agrees, "reasons": reasons}


def verify_run(run_dir: Path, point: str | None = None) -> list[dict]:
    """Every point of a stored run (or the one named) re-checked."""
    run = Run.open(run_dir)
    points = sorted(p for p in (run.path / "points").iterdir() if (p / "point.json").is_file()) \
        if (run.path / "points").is_dir() else []
    if point is not None:
        points = [p for p in points if p.name == point]
        if not points:
            raise HarnessError(f"{run.path} has no point {point!r}")
    if not points:
        raise HarnessError(f"{run.path} has no points to verify")
    return [recheck_point(p) for p in points]


def render(results: list[dict]) -> str:
    """One line per point and its reasons, then a count."""
    lines = []
    for r in results:
        lines.append(f"{'PASS' if r['passed'] else 'FAIL'} {r['point']} (stored: {r['stored_status']})")
        lines += [f"    - {reason}" for reason in r["reasons"]]
    failed = sum(not r["passed"] for r in results)
    lines.append(f"{len(results) - failed} of {len(results)} point(s) passed, {failed} failed")
    return "\n".join(lines)
