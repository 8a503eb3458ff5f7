"""The run loop of ``invoke regress``: each commit's sample, the change test between two, the false-positive
batches of one commit, and bisection."""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

from .. import cpus, machine_lock
from ..errors import HarnessError
from ..gitrepo import describe, first_parent_line
from ..judge import weakest_evidence
from ..rundir import Run, read_json
from ..selection import run_cores
from ..stats import compare, median_interval
from .build import REFERENCE, NotMeasurable, build, pin_of, reference_variants
from .lines import boundary


def network_lock():
    """One network at a time on this machine (harness/machine_lock.py), held across a commit's measurements
    (a re-measurement's alternating points wait once); each point's run takes it again inside, re-entrantly."""
    return machine_lock.machine("invoke regress")


def samples(run_path: Path, metric: str) -> list[float]:
    """The metric of every complete, valid point of a stored run of one configuration, in run order."""
    out, configurations = [], set()
    # run order is repetition order (a name sort puts r10 before r2, and batches must follow time)
    for s in sorted((read_json(p) for p in (run_path / "points").glob("*/summary.json")),
                    key=lambda s: s["repetition"]):
        if s.get("status") == "complete" and s.get("valid", True) and s["metrics"].get(metric) is not None:
            out.append(s["metrics"][metric])
            configurations.add((s["variant"], tuple(sorted(s["sweep"].items()))))
    if len(configurations) > 1:
        raise HarnessError(f"{run_path}: {len(configurations)} configurations; regress compares one: fix each "
                           "swept parameter in the environment (FABRICREPRO_<NAME>=value replaces a sweep)")
    return out


def evidence(run_path: Path) -> str:
    """What a run's measured points rest on (harness/validity.py's classes, the weakest first) and their
    control: ``ledger-proven; control not run``. regress runs no control point, so its measurements are
    never "reproduced"-grade evidence; the page says so per commit."""
    points = [read_json(p) for p in sorted((run_path / "points").glob("*/summary.json"))]
    measured = [s for s in points if not s.get("control") and s.get("status") == "complete"]
    weakest, control = weakest_evidence(measured)
    return (weakest or "no complete point") + (f"; control {control}" if control else "")


def stored_runs(results: Path, paper: str, experiment: str) -> list[Path]:
    """The complete regress runs stored under ``results`` (one commit's store), oldest first."""
    runs = []
    for meta in sorted((results / paper / experiment).glob("*/metadata.json")):
        if not meta.parent.is_symlink() and read_json(meta).get("status") == "complete":
            runs.append(meta.parent)
    return runs


def measure(tracked: dict, commit: dict, bin_dir: Path, paper: str, experiment: dict, scale: str, repeat: int,
            store: Path, fresh: bool = False) -> dict:
    """``repeat`` points of the experiment on the commit's build (docs/regress.md).

    A stored run of the commit's key with enough points is reused unless
    ``fresh``. A run without a value of the metric is NotMeasurable.
    """
    from ..reproduce import reproduce
    results = store / commit["key"]
    metric = experiment["metric"]
    if not fresh:
        for run in reversed(stored_runs(results, paper, experiment["id"])):
            stored = Run.open(run)
            if (stored.metadata.get("regress") or {}).get("build_key") != commit.get("build_key"):
                continue  # built with another patch series (or toolchain): not this build's sample
            if run_cores(stored) != len(cpus.usable()):
                continue  # its points ran on other cores than the harness may use now (e.g. confined to one)
            values = samples(run, metric)
            if len(values) >= repeat:
                return {"values": values, "runs": [str(run)], "seconds": 0.0, "reused": True,
                        "evidence": evidence(run)}
    if tracked["system"] == REFERENCE:
        how = {"build": REFERENCE, "provider_options": {"bin_dir": bin_dir}, "variants": reference_variants(experiment)}
    else:
        how = {"build": "upstream", "source": "git", "variants": [tracked["variant"]],
               "pins": {tracked["system"]: pin_of(tracked, commit)}}
    waited = time.monotonic()
    with network_lock():
        started = time.monotonic()
        # No control point per commit (it would add a point to every measured commit): each point is still
        # checked fail-closed; `invoke reproduce` runs the controls of a build (docs/validity.md).
        try:
            runs = reproduce(paper, experiment["id"], scale=scale, repeat=repeat, results=results,
                             reports=store / "reports", stream=sys.stderr, controls=False, **how)
        except NotMeasurable:
            raise
        except HarnessError as e:  # e.g. its preflight: this commit has no sample, the series goes on
            lines = [line.strip() for line in str(e).strip().splitlines()]
            raise NotMeasurable(f"run refused: {' '.join(lines[:2])}" + (" ..." if len(lines) > 2 else "")) from None
    if not runs:
        raise NotMeasurable(f"no run of {experiment['id']} was made (skipped: see the log above)")
    run = runs[0]
    run.metadata["regress"] = {k: commit.get(k) for k in ("sha", "ref", "key", "build_key", "patches", "subject",
                                                          "message", "diffstat")}
    run.save()
    values = samples(run.path, metric)
    if not values:
        points = [read_json(p) for p in sorted((run.path / "points").glob("*/summary.json"))]
        found = sorted({m for point in points for m in point["metrics"]})
        failed = next((point for point in points if point.get("status") != "complete"), None)
        raise NotMeasurable(f"run {run.path.name} has no {metric} ({run.metadata.get('status')}: "
                            f"{run.metadata.get('reason')}; its points have {', '.join(found) or 'no metric'})"
                            + (f"; point {failed['point']}: {failed.get('reason')}" if failed else ""))
    return {"values": values, "runs": [str(run.path)], "seconds": round(time.monotonic() - started, 1),
            "lock_wait_seconds": round(started - waited, 1), "reused": False, "evidence": evidence(run.path)}


class Sampler:
    """Each commit's sample of the experiment's metric on the tracked system, and the change test between two.

    Commits of one store key built identical binaries: one sample (or one
    reason it is not measurable) serves them all. ``route(commit)`` is the
    commit's tracked system (across release lines, ``lines.Router``: the
    system that covers its release; else ``tracked`` for every commit), which
    raises NotMeasurable where none covers it. Runs are stored under
    ``store / <the commit's system>``.
    """

    def __init__(self, tracked: dict, paper: str, experiment: dict, scale: str, repeat: int, fresh: bool,
                 root: Path, store: Path, log, route=None):
        self.tracked, self.paper, self.experiment = tracked, paper, experiment
        self.scale, self.repeat, self.fresh = scale, repeat, fresh
        self.root, self.store, self.log = root, store, log
        self.route = route or (lambda commit: tracked)
        self.by_key: dict[str, dict] = {}

    def segment(self, commit: dict) -> dict | None:
        """The commit's segment (system, variant, driver, ordering service; ``lines.segment``), None where
        no system covers it."""
        try:
            return self.route(commit).get("segment")
        except NotMeasurable:
            return None

    def measured(self, commit: dict, again: bool = False, repeat: int | None = None) -> dict:
        """The commit's row: its sample with the median's interval, or why it is not measurable.
        ``again``: a fresh sample even where its key has one."""
        if commit["key"] in self.by_key and not again:
            return {**self.by_key[commit["key"]], **commit, "reused": True}
        where = {}
        try:
            tracked = self.route(commit)
            where = {k: tracked[k] for k in ("segment", "release") if tracked.get(k)}
            bin_dir, build_s = build(tracked, commit, self.root, self.log)
            m = measure(tracked, commit, bin_dir, self.paper, self.experiment, self.scale,
                        repeat or self.repeat, self.store / tracked["system"], fresh=again or self.fresh)
        except NotMeasurable as e:
            self.log(f"regress: {commit['short']} not measurable: {e}")
            row = {**commit, **where, "not_measurable": str(e), "values": [], "runs": []}
            self.by_key[commit["key"]] = row
            return row
        row = {**commit, **where, **m, "build_seconds": round(build_s, 1), **median_interval(m["values"])}
        self.by_key[commit["key"]] = row
        self.log(f"regress: {commit['short']} {self.experiment['metric']} median {row['median']:.4g} over "
                 f"{len(m['values'])} points (build {build_s:.0f} s, run {m['seconds']:.0f} s, waited "
                 f"{m.get('lock_wait_seconds', 0):.0f} s for the network lock{', stored' if m['reused'] else ''})")
        return row

    def alternating(self, a: dict, b: dict) -> tuple[list[float], list[float], list[str]]:
        """``repeat`` fresh points of each of a and b, in the order ab ba ab ...: drift hits both alike."""
        values, runs = {0: [], 1: []}, []
        tracked = [self.route(commit) for commit in (a, b)]
        bin_dirs = [build(t, commit, self.root, self.log)[0] for t, commit in zip(tracked, (a, b))]
        with network_lock():
            for i in range(self.repeat):
                for side in (0, 1) if i % 2 == 0 else (1, 0):
                    m = measure(tracked[side], (a, b)[side], bin_dirs[side], self.paper, self.experiment,
                                self.scale, 1, self.store / tracked[side]["system"], fresh=True)
                    values[side] += m["values"]
                    runs += m["runs"]
        return values[0], values[1], runs

    def tested(self, a: dict, b: dict) -> dict:
        """compare(a, b); a flagged change stands only if the alternating re-measurement flags it the same way."""
        first = compare(a["values"], b["values"])
        if not first["changed"]:
            return {**first, "against": a["sha"]}
        self.log(f"regress: {a['short']} -> {b['short']} flagged (p {first['p']:.3g}, "
                 f"{first['relative_change']:+.1%}); re-measuring both alternately, {self.repeat} points each")
        try:
            va, vb, runs = self.alternating(a, b)
        except NotMeasurable as e:  # e.g. a run of the re-measurement failed: the flag stays unconfirmed
            self.log(f"regress: re-measurement failed: {e}")
            return {**first, "against": a["sha"], "flagged": True, "changed": False,
                    "confirmation": {"not_measurable": str(e)}}
        again = compare(va, vb)
        same_way = again["changed"] and (again["relative_change"] > 0) == (first["relative_change"] > 0)
        self.log(f"regress: re-measured p {again['p']:.3g}, {again['relative_change']:+.1%}: "
                 f"{'confirmed' if same_way else 'not confirmed'}")
        return {**first, "against": a["sha"], "flagged": True, "changed": same_way,
                "confirmation": {**again, "values_before": va, "values_after": vb, "runs": runs}}


def series(sampler: Sampler, commits: list[dict]) -> list[dict]:
    """Each commit's row, tested against the last one before it that was measured (``vs_previous``) where
    both are of one segment; across a boundary (another system, variant, driver or ordering service) the row
    says so instead (``boundary``: not compared)."""
    rows = [sampler.measured(c) for c in commits]
    before = None
    for row in rows:
        if row.get("not_measurable"):
            continue
        if before is not None:
            crossed = boundary(before.get("segment"), row.get("segment"))
            if crossed:
                row["boundary"] = {**crossed, "after": before["sha"]}
                sampler.log(f"regress: {before.get('ref') or before['short']} -> {row.get('ref') or row['short']} "
                            f"{crossed['why']}")
            else:
                row["vs_previous"] = sampler.tested(before, row)
        before = row
    return rows


def boundaries(rows: list[dict]) -> list[dict]:
    """regress.json's ``boundaries``: each boundary between measured commits (the one before it, the one
    after it, what changes)."""
    return [{"before": r["boundary"]["after"], "after": r["sha"], "why": r["boundary"]["why"],
             "changes": r["boundary"]["changes"]} for r in rows if r.get("boundary")]


def false_positives(sampler: Sampler, commit: dict, batches: int) -> dict:
    """One commit measured ``batches`` x ``repeat`` times, cut in run order into batches, every pair tested
    as two commits would be: the rows, the pairs, and the shares flagged and called."""
    # One run of all the points (each a fresh deployment): one lock hold instead of one per batch on a
    # machine others share.
    repeat = sampler.repeat
    whole = sampler.measured(commit, again=True, repeat=batches * repeat)
    if whole.get("not_measurable"):
        raise HarnessError(f"--batches: {commit['short']} is not measurable: {whole['not_measurable']}")
    rows = []
    for i in range(batches):
        values = whole["values"][i * repeat:(i + 1) * repeat]
        rows.append({**whole, "values": values, "batch": i, **median_interval(values)})
    pairs = [{"a": i, "b": j, **sampler.tested(rows[i], rows[j])} for i, j in itertools.combinations(range(batches), 2)]
    flagged, called = sum(p.get("flagged", False) for p in pairs), sum(p["changed"] for p in pairs)
    sampler.log(f"regress: {flagged} of {len(pairs)} pairs of batches of one commit flagged by the first test, "
                f"{called} after the re-measurement")
    return {"commits": rows, "noise_pairs": pairs, "flagged_rate": flagged / len(pairs),
            "false_positive_rate": called / len(pairs)}


def _search(line: list[dict], first: dict, sampler: Sampler, rows: list[dict]) -> tuple[int, int, list[str]]:
    """Binary search of one line for its first commit that differs from ``first``: the bounds (the last
    unchanged, the first changed; more than one apart when every commit between them is not measurable)
    and the commits skipped as not measurable or across a boundary from ``first`` (never compared with it).
    Each row measured is appended to ``rows``."""
    lo, hi = 0, len(line) - 1
    skipped = []
    while hi - lo > 1:
        mid = (lo + hi) // 2
        # the midpoint, or if it is not measurable the nearest untested commit between the bounds
        for at in sorted(range(lo + 1, hi), key=lambda i: (abs(i - mid), i)):
            if line[at]["sha"] in skipped:
                continue
            crossed = boundary(first.get("segment"), sampler.segment(line[at]))
            if crossed:
                sampler.log(f"regress: {line[at]['short']} skipped: {crossed['why']}")
                skipped.append(line[at]["sha"])
                continue
            row = sampler.measured(line[at])
            rows.append(row)
            if row.get("not_measurable"):
                skipped.append(line[at]["sha"])
                continue
            row["vs_first"] = sampler.tested(first, row)
            if row["vs_first"]["changed"]:
                hi = at
            else:
                lo = at
            break
        else:  # every commit between the bounds is not measurable
            break
    return lo, hi, skipped


def bisected(commits: list[dict], sampler: Sampler, repo: Path, keyed) -> tuple[dict, list[dict]]:
    """Binary search of ``commits`` (one first-parent line) for the first commit that differs from its first.

    A commit that is not measurable is skipped (the nearest untested one
    between the bounds is measured instead); if every commit between the
    bounds is, the change lies in that range and the result says so. Where
    the first changed commit is a merge, its second parent's line since the
    first parent (the merged branch) is searched the same way.
    """
    log = sampler.log
    rows, order = [], [c["sha"] for c in commits]  # order: history, a merged branch's commits before its merge

    def ordered() -> list[dict]:
        """One row per commit (what each measurement of it added kept), in history order."""
        unique = {}
        for row in rows:
            unique[row["sha"]] = {**unique.get(row["sha"], {}), **row}
        return sorted(unique.values(), key=lambda r: order.index(r["sha"]))

    ends = [sampler.segment(commits[0]), sampler.segment(commits[-1])]
    crossed = boundary(*ends)
    if crossed:  # bisection never crosses a boundary: name the first commit past it
        past = next(c for c in commits if boundary(ends[0], sampler.segment(c)))
        why = (f"{commits[0]['short']} and {commits[-1]['short']} lie across a boundary ({crossed['why']}; the "
               f"first commit past it: {past['short']}): bisection never crosses one; bisect each side of it")
        log(f"regress: {why}")
        return {"first_changed": None, "why": why, "boundary": {**crossed, "at": past["sha"]}}, []
    first, last = sampler.measured(commits[0]), sampler.measured(commits[-1])
    rows += [first, last]
    for end in (first, last):
        if end.get("not_measurable"):
            return {"first_changed": None, "why": f"{end['short']} is not measurable: nothing to compare"}, ordered()
    last["vs_first"] = sampler.tested(first, last)
    result = {"ends": last["vs_first"], "lines": []}
    if not last["vs_first"]["changed"]:
        log(f"regress: {commits[-1]['short']} does not differ from {commits[0]['short']}: nothing to bisect")
        return {**result, "first_changed": None}, ordered()
    line = commits
    while True:
        lo, hi, skipped = _search(line, first, sampler, rows)
        result["lines"].append({"from": line[0]["sha"], "to": line[-1]["sha"], "commits": len(line),
                                "skipped": skipped})
        if hi - lo > 1:
            result.update(first_changed=None, between=[line[lo]["sha"], line[hi]["sha"]],
                          why=f"every commit after {line[lo]['short']} and before {line[hi]['short']} is not "
                              "measurable: the change is one of them or the latter")
            log(f"regress: {result['why']}")
            return result, ordered()
        found = line[hi]
        if len(found["parents"]) < 2:
            break
        # A merge: the change came with the merged branch (its last commit differs) or with the merge itself.
        branch = [found["parents"][0]] + first_parent_line(repo, found["parents"][0], found["parents"][1])
        branch_rows = [describe(repo, sha, keyed(sha)) for sha in branch]
        if boundary(first.get("segment"), sampler.segment(branch_rows[-1])):
            break  # the merged branch is of another segment: the merge itself is the change found
        tip = sampler.measured(branch_rows[-1])
        rows.append(tip)
        if tip.get("not_measurable"):
            break
        tip["vs_first"] = sampler.tested(first, tip)
        if not tip["vs_first"]["changed"]:
            break
        log(f"regress: {found['short']} is a merge; searching the merged branch ({len(branch) - 1} commits)")
        at = order.index(found["sha"])
        order[at:at] = [sha for sha in branch[1:] if sha not in order]
        # the first parent is the last commit found unchanged: the lower bound of the merged branch's search
        line = branch_rows[:-1] + [tip]
    result["first_changed"] = found["sha"]
    log(f"regress: first changed commit {found['short']}: {found['subject']}")
    return result, ordered()
