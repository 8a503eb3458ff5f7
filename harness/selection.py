"""Which stored runs of an experiment a report pools: every complete run of the strongest configuration
stored (``select_runs``), what must be equal for runs to be pooled (``configuration``), and how strongly a
configuration can judge the claims (``strength``). Runs themselves are harness/rundir.py's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path


from . import cpus
from .errors import HarnessError
from .rundir import Run, pid_alive, iso, missing_reason


#: plan.make_plan's reason for a variant that ``--variant`` did not choose: such a run is restricted.
LEFT_OUT = "left out of this run"


def build_identity(meta: dict) -> dict:
    """What identifies a run's build: for upstream builds each variant's build key (commit, patches,
    flavours, toolchain; and its companions'), for the reference build this repository's commit (and
    whether the tree had changes)."""
    build = meta.get("build") or {}
    if build.get("kind") == "upstream":
        per = build.get("variants") or build.get("systems") or {}
        return {"kind": "upstream",
                "keys": {name: {"key": b.get("key") or b.get("built_commit"),
                                **({"companions": {c: x.get("key") for c, x in sorted(b["companions"].items())}}
                                   if b.get("companions") else {})}
                         for name, b in sorted(per.items())}}
    return {"kind": build.get("kind", "reference"),
            "source": str(build.get("source")) + ("-dirty" if (meta.get("git") or {}).get("dirty") else "")}


def configuration(run: "Run") -> dict:
    """What must be equal for runs of one experiment to be pooled: scale, build, provider, the cores its
    points ran on (``run_cores``) and the host's CPU model, the values of the parameters the run did
    not sweep (``cpus`` counts through the cores), and whether it planned control points (a run made with
    ``--no-control`` never pools with controlled ones)."""
    host = run.metadata.get("host") or {}
    resolved = run.stored("resolved")
    return {"scale": run.metadata.get("scale"), "controlled": bool(resolved.get("control")),
            "build": build_identity(run.metadata),
            "provider": run.metadata.get("provider"), "cores": run_cores(run, resolved),
            "cpu_model": host.get("cpu_model"),
            "parameters": {k: v.get("value") if isinstance(v, dict) else v
                           for k, v in sorted((resolved.get("parameters") or {}).items()) if k != "cpus"}}


def run_cores(run: "Run", resolved: dict | None = None) -> int | list[int] | None:
    """The cores a run's points ran on: the effective CPUs their processes were allowed, read back from
    the hosts (``cpus.of_point``; one value, or the sorted values where points differ, e.g. a ``cpus``
    sweep). Where no point recorded them: the ``cpus`` parameter's values, else the host's usable CPUs.

    Read back even without the ``cpus`` parameter: a process can be confined by something the harness
    did not ask for (Mitogen's strategy pinned every component to one CPU of two), and such a run must
    not be pooled with runs that had both."""
    resolved = resolved if resolved is not None else run.stored("resolved")
    fixed = (resolved.get("parameters") or {}).get("cpus")
    asked = (resolved.get("sweep") or {}).get("cpus") or (fixed.get("value") if isinstance(fixed, dict) else fixed)
    effective = sorted({ran["effective"] for point in sorted((run.path / "points").iterdir())
                        if (ran := cpus.of_point(point))}) if (run.path / "points").is_dir() else []
    if not effective and asked is None:
        return cpus.host_usable(run.metadata.get("host") or {})
    values = effective or (asked if isinstance(asked, list) else [asked])
    return values[0] if len(values) == 1 else values


def _build_difference(a: dict, b: dict) -> str:
    """``another build of fastfabric (0123abcd, not 4567ef01)`` from two ``build_identity`` values."""
    if a.get("kind") != b.get("kind"):
        return f"{a.get('kind')} build, not {b.get('kind')}"
    if "keys" not in a:
        return f"build of commit {a.get('source', '')[:12]}, not {b.get('source', '')[:12]}"
    keys_a, keys_b = a["keys"], b.get("keys") or {}
    changed = sorted(n for n in {**keys_a, **keys_b} if keys_a.get(n) != keys_b.get(n))
    return "another build of " + ", ".join(
        f"{n} ({str((keys_a.get(n) or {}).get('key'))[:8]}, not {str((keys_b.get(n) or {}).get('key'))[:8]})"
        if (keys_a.get(n) or {}).get("key") != (keys_b.get(n) or {}).get("key") else f"{n} (its companions)"
        for n in changed)


def configuration_difference(a: dict, b: dict) -> str:
    """Which facts of configuration ``a`` differ from ``b``, in words (``cores 16, not 2``)."""
    out = []
    for key in a:
        if a[key] == b.get(key):
            continue
        if key == "parameters":
            names = sorted(k for k in {**a[key], **b[key]} if a[key].get(k) != b[key].get(k))
            out += [f"{k}={a[key].get(k)}, not {b[key].get(k)}" for k in names]
        elif key == "build":
            out.append(_build_difference(a[key], b[key]))
        elif key == "controlled":
            out.append("made without control points (--no-control)" if not a[key] else "made with control points")
        else:
            out.append(f"{key.replace('_', ' ')} {a[key]}, not {b.get(key)}")
    return "; ".join(out)


@dataclass
class Selection:
    """The runs of one experiment a report shows, and every other run it saw.

    ``pooled``: complete runs of one configuration (the strongest stored: ``strength``), oldest first, whose
    repetitions are pooled; when no run is complete, the newest run alone (``complete`` False).
    ``listed``: every run considered, newest first, each ``{run_id, path, status, started_utc,
    pooled, why}`` (why: the reason it is not pooled).
    ``configurations``: every configuration with complete runs, strongest first, each ``{configuration, runs,
    repetitions, unmet, pooled, strength}`` (``unmet``: the ``judged_when`` conditions it falls short of;
    ``strength``: in words, why it ranks where it does).
    """

    pooled: list[Run]
    listed: list[dict]
    complete: bool
    configuration: dict
    configurations: list[dict] = field(default_factory=list)

    @property
    def shown(self) -> Run:
        """The newest pooled run (its figures and resources are shown)."""
        return self.pooled[-1]


def _since(value: str) -> str:
    """A ``--since`` date or time as the run ids' UTC form (``2025-01-31`` or ``2025-01-31T12:00:00Z``)."""
    for form in ("%Y-%m-%d", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"):
        try:
            return iso(datetime.strptime(value, form))
        except ValueError:
            continue
    raise HarnessError(f"--since {value!r}: give a UTC date or time, e.g. 2025-01-31 or 2025-01-31T12:00:00Z")


#: Scales from the smallest: a larger scale is stronger evidence (more transactions a point).
SCALES = ("smoke", "local", "paper")


def _value(parameters: dict, name: str):
    value = (parameters or {}).get(name)
    return value.get("value") if isinstance(value, dict) and "value" in value else value


def unmet_conditions(judged_when: list[dict] | None, parameters: dict) -> list[dict]:
    """The ``judged_when`` conditions (papers/schema.json) that ``parameters`` (a configuration's resolved
    parameters) do not meet, each with the ``value`` measured; a condition whose parameters are unknown is
    left out (nothing to say it fails)."""
    out = []
    for cond in judged_when or []:
        value = _value(parameters, cond["parameter"])
        divisor = _value(parameters, cond["divided_by"]) if cond.get("divided_by") else 1
        if not isinstance(value, (int, float)) or not isinstance(divisor, (int, float)) or not divisor:
            continue
        if value / divisor < cond["min"]:
            out.append({**cond, "value": value / divisor})
    return out


def _core_counts(cores) -> list[int]:
    return sorted({int(c) for c in (cores if isinstance(cores, list) else [cores]) if isinstance(c, (int, float))})


def strength(config: dict, repetitions: int, unmet: list[dict], paper_cores: int | None) -> tuple:
    """How strongly a configuration's complete runs can judge an experiment's claims, as a key to sort by
    (larger is stronger): the ``judged_when`` conditions it meets (fewer unmet), its control points, its scale (``SCALES``), its
    cores (the paper's core count measured; then several core counts, which give a trend to the paper's; then
    the most cores), then the repetitions pooled."""
    counts = _core_counts(config.get("cores"))
    scale = SCALES.index(config.get("scale")) if config.get("scale") in SCALES else -1
    return (-len(unmet), bool(config.get("controlled")), scale, bool(paper_cores) and paper_cores in counts,
            len(counts) > 1, max(counts, default=0), repetitions)


def strength_text(config: dict, repetitions: int, unmet: list[dict]) -> str:
    """``scale local, cores [1, 2], 3 repetition(s), meets its judging conditions`` (``strength`` in words)."""
    counts = _core_counts(config.get("cores"))
    cores = ", ".join(map(str, counts)) or "unknown"
    return (f"scale {config.get('scale')}, {cores} core(s), {repetitions} repetition(s), "
            + (("falls short of " + ", ".join(c["what"] for c in unmet)) if unmet else "meets its judging conditions"))


def _stored_judging(run: Run) -> tuple[list[dict], int | None]:
    """The ``judged_when`` and the paper's cores a run's stored experiment.yaml states."""
    stored = run.stored("experiment") or {}
    experiment = stored.get("experiment") or {}
    cores = None
    for hardware in (experiment.get("hardware"), (stored.get("paper") or {}).get("hardware")):
        if isinstance(hardware, dict) and hardware.get("cores"):
            cores = int(hardware["cores"])
            break
    return experiment.get("judged_when") or [], cores


def select_runs(results: Path, paper: str, experiment: str, *, named: list[Path] | None = None,
                since: str | None = None, build_kind: str | None = None,
                judged_when: list[dict] | None = None) -> Selection | None:
    """The runs of an experiment to show: every complete run of the strongest configuration stored
    (``configuration``, ranked by ``strength``: the one whose scale and cores can judge the claims, then the
    most repetitions; the newest among equals), pooled, whatever ran last. Failed, interrupted, incomplete (a
    point of its plan missing: ``missing_points``), still running, abandoned and ``--variant``-restricted
    runs and complete runs of other configurations are listed, never shown instead of a complete run; with
    no complete run the newest run is shown alone. ``named`` (run directories) or ``since`` (a UTC date or
    time) restrict the runs considered; ``build_kind`` keeps only runs of that build. ``judged_when``: the
    catalogue's conditions for judging (else those of the newest run's stored experiment). None without runs.
    """
    named_paths = {Path(p).resolve() for p in named} if named is not None else None
    since = _since(since) if since else None
    runs, unreadable = [], []
    for meta_path in sorted(Path(results).glob(f"{paper}/{experiment}/*/metadata.json")):
        if meta_path.parent.is_symlink() or (named_paths is not None and meta_path.parent.resolve() not in named_paths):
            continue
        try:
            run = Run.open(meta_path.parent)
        except (HarnessError, json.JSONDecodeError) as e:
            unreadable.append({"run_id": meta_path.parent.name, "path": str(meta_path.parent), "status": "unreadable",
                               "started_utc": None, "pooled": False, "why": str(e)})
            continue
        if since and run.metadata["started_utc"] < since:
            continue
        if build_kind and (run.metadata.get("build") or {}).get("kind", "reference") != build_kind:
            continue
        runs.append(run)
    if not runs:
        return None
    runs.sort(key=lambda r: (r.metadata["started_utc"], r.id), reverse=True)

    missing = {r.id: r.missing_points() if r.metadata["status"] == "complete" else [] for r in runs}

    def status(run):
        s = run.metadata["status"]
        if s == "running" and not pid_alive(run.metadata.get("harness_pid")):
            return "abandoned"
        return "incomplete" if missing[run.id] else s

    def left_out(run):
        return sorted(v for v, why in (run.stored("resolved").get("not_runnable_variants") or {}).items()
                      if str(why).startswith(LEFT_OUT))

    complete = [r for r in runs if status(r) == "complete" and not left_out(r)]
    configs = {r.id: configuration(r) for r in runs}
    stored_when, paper_cores = _stored_judging(runs[0])
    judged_when = stored_when if judged_when is None else judged_when
    # every configuration with complete runs (newest first, as ``complete``), ranked by its strength
    groups: list[dict] = []
    for run in complete:
        group = next((g for g in groups if g["configuration"] == configs[run.id]), None)
        if group is None:
            group = {"configuration": configs[run.id], "runs": [], "repetitions": 0,
                     "unmet": unmet_conditions(judged_when, configs[run.id]["parameters"])}
            groups.append(group)
        group["runs"].append(run.id)
        group["repetitions"] += int(run.stored("resolved").get("repetitions") or 0)
    for g in groups:
        g["strength"] = strength_text(g["configuration"], g["repetitions"], g["unmet"])
    order = sorted(range(len(groups)), key=lambda i: (strength(groups[i]["configuration"], groups[i]["repetitions"],
                                                               groups[i]["unmet"], paper_cores), -i), reverse=True)
    groups = [groups[i] for i in order]
    for i, g in enumerate(groups):
        g["pooled"] = i == 0
        g["runs"] = g["runs"][::-1]  # oldest first
    shown = groups[0]["configuration"] if groups else configs[runs[0].id]
    pooled, listed = [], []
    for run in runs:
        why = None
        if missing[run.id]:
            why = "incomplete: " + missing_reason(missing[run.id])
        elif status(run) != "complete":
            why = f"{status(run)}" + (f": {run.metadata['reason']}" if run.metadata.get("reason") else "")
        elif left_out(run):
            why = f"restricted to some variants ({', '.join(left_out(run))} left out)"
        elif configs[run.id] != shown:
            why = "another configuration: " + configuration_difference(configs[run.id], shown)
        if why is None or (not complete and run is runs[0]):
            pooled.append(run)
        listed.append({"run_id": run.id, "path": str(run.path), "status": status(run),
                       "started_utc": run.metadata["started_utc"], "pooled": run in pooled, "why": why})
    return Selection(pooled=pooled[::-1], listed=listed + unreadable, complete=bool(complete), configuration=shown,
                     configurations=groups)
