"""Re-check a stored run from its raw files, as a third party would check a run someone shared.

``invoke verify RUN_DIR [--point P]`` makes every point's tables anew from
``raw/<host>/`` and the fetched logs (``collect.raw_tables``, not the stored
parquet), runs every validity check on them (harness/validity.py, our
verifier included) and compares the result with what the run stored in the
point's ``summary.json``; the stored tables the metrics come from must equal
the ones the raw files give. A point passes only if it completed, the re-check
finds no problem, and the stored result agrees. Our verifier runs afresh
here; a report's analysis reuses its stored result for block files of the
same content checked by the same verifier (``verifier.json`` of the point).

Every point of the run's plan is accounted for: a point of ``resolved.yaml``
(controls included; for a kit's run, of the plan kept at home when the kit was
built, where it is here) without its folder fails, named, and so does a point
folder the plan does not hold. The run passes only if every point passes.
"""

from __future__ import annotations

from pathlib import Path

from . import validity
from .collect import load_point, raw_tables, tables_differ
from .errors import HarnessError
from .kit import KIT_PLANS, kept_plan, plain
from .plan import expand
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


def planned_points(run: Run, plans: Path | None = None) -> tuple[dict[str, bool], list[str]]:
    """The points the run was to hold, each with whether it is a control point, and problems of the plan itself.

    The plan is the run's ``resolved.yaml``: the points it lists and those it expands to (``plan.expand``,
    controls first), which must be the same. A kit's run (``metadata.json`` ``ingested``) is held against the
    plan kept at home when the kit was built (``kit.kept_plan``) where that is here: the target wrote the run's
    own ``resolved.yaml``."""
    problems = []
    resolved = run.stored("resolved") or {}
    kit_id = (run.metadata.get("ingested") or {}).get("kit_id")
    if kit_id:
        home = kept_plan(kit_id, plans)
        if home is not None:
            if plain(home["resolved"]) != plain(resolved):
                problems.append(f"the run's resolved.yaml is not the plan of kit {kit_id} kept at home "
                                f"({Path(plans or KIT_PLANS) / (kit_id + '.json')}): the kit's plan is held instead")
            resolved = home["resolved"]
    listed = [str(p) for p in resolved.get("points") or []]
    try:
        expanded = {p.id: p.control for p in expand(resolved)}
    except (KeyError, TypeError, ValueError) as e:
        return {p: p.startswith("control__") for p in listed}, \
            problems + [f"resolved.yaml does not expand to points ({type(e).__name__}: {e})"]
    if listed and set(listed) != set(expanded):
        problems.append("resolved.yaml lists other points than its configuration makes: "
                        + ", ".join(sorted(set(listed) ^ set(expanded))))
    return {**expanded, **{p: p.startswith("control__") for p in listed if p not in expanded}}, problems


def _missing(point: str, control: bool) -> dict:
    what = "a control point" if control else "a measured point"
    reason = (f"{what} of the run's plan (resolved.yaml) is missing: the run holds no points/{point}/ "
              "(point.json)")
    return {"point": point, "stored_status": "missing", "problems": [reason], "agrees": False, "passed": False,
            "reasons": [reason]}


def verify_run(run_dir: Path, point: str | None = None, plans: Path | None = None) -> list[dict]:
    """Every point of a stored run's plan (or the one named) re-checked: a planned point the run does not
    hold, and a point folder its plan does not hold, fail; so does a plan that contradicts itself."""
    run = Run.open(run_dir)
    held = sorted(p for p in (run.path / "points").iterdir() if (p / "point.json").is_file()) \
        if (run.path / "points").is_dir() else []
    planned, plan_problems = planned_points(run, plans)
    if point is not None:
        held = [p for p in held if p.name == point]
        if not held and point not in planned:
            raise HarnessError(f"{run.path} has no point {point!r}")
        planned = {k: v for k, v in planned.items() if k == point}
    if not held and not planned:
        raise HarnessError(f"{run.path} has no points to verify")
    results = [_missing(p, control) for p, control in planned.items() if p not in {h.name for h in held}]
    for p in held:
        result = recheck_point(p)
        if p.name not in planned:
            why = "not a point of the run's plan (resolved.yaml): nothing planned it"
            result = {**result, "passed": False, "problems": [why, *result["problems"]],
                      "reasons": [why, *result["reasons"]]}
        results.append(result)
    if plan_problems:
        results.insert(0, {"point": "(the run's plan)", "stored_status": run.metadata.get("status"),
                           "problems": plan_problems, "agrees": False, "passed": False, "reasons": plan_problems})
    order = list(planned)
    return sorted(results, key=lambda r: (r["point"] != "(the run's plan)",
                                          order.index(r["point"]) if r["point"] in order else len(order),
                                          r["point"]))


def render(results: list[dict]) -> str:
    """One line per point and its reasons, then a count."""
    lines = []
    for r in results:
        lines.append(f"{'PASS' if r['passed'] else 'FAIL'} {r['point']} (stored: {r['stored_status']})")
        lines += [f"    - {reason}" for reason in r["reasons"]]
    points = [r for r in results if r["point"] != "(the run's plan)"]
    failed = sum(not r["passed"] for r in points)
    lines.append(f"{len(points) - failed} of {len(points)} point(s) passed, {failed} failed"
                 + ("; the run's plan contradicts itself" if len(points) < len(results) else ""))
    return "\n".join(lines)
