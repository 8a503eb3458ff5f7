"""Whether a kit's target can hold its plan, and how long the plan will take there (issue 48, item 3).

When a kit is built (harness/kit.py), ``plan_needs`` writes into ``kit.json`` (``needs``) what its plans ask
of a host: Linux on x86-64 with a kernel the kit's Go binaries run on (``KERNEL_AT_LEAST``), the C library
its Java runtime was linked against, the Python its wheels are for, the most CPUs a point is pinned to, the
free disk, and each point's cost as measured on this machine: the wall seconds and measured window of the
same configuration (variant, parameters; a control point as a control) in this machine's run store, with the
CPUs it ran on. On the target, ``./kit/run`` runs this module with the target's own ``python3`` before it
unpacks anything (``main``): it refuses, naming each reason, a host that cannot hold the plan (``problems``)
and prints how long the plan will take there (``estimate``): each measured point's time outside its window
as here, its window scaled by the CPUs it had here over those it will have there (a point pinned to
``cpus=N`` has N on a host with N or more). Standard library only: it runs before the kit's venv exists.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
from pathlib import Path

#: The oldest Linux kernel the kit's binaries run on: Go >= 1.24's (its release notes), which builds them.
KERNEL_AT_LEAST = (3, 2)
#: What a target needs beyond the plan's points: the kit's venv made from its wheels (about 60 MB).
VENV_BYTES = 100 * 2**20


# ---------------------------------------------------------------- when the kit is built (here)

def _key(point: dict) -> str:
    """What makes two points the same configuration for their cost: variant, control, parameters (not the seed)."""
    params = {k: v for k, v in (point.get("parameters") or {}).items() if k != "seed"}
    return json.dumps([point.get("variant"), bool(point.get("control")), params], sort_keys=True, default=str)


def measured_here(results: Path, paper: str, experiment: str) -> dict[str, list[dict]]:
    """This machine's complete points of ``paper``/``experiment`` in the run store ``results``, by
    configuration (``_key``): each one's wall seconds, measured window, the CPUs it ran on and its bytes."""
    out: dict[str, list[dict]] = {}
    for point_json in sorted(Path(results, paper, experiment).glob("*/points/*/point.json")):
        if point_json.parent.parent.parent.is_symlink() or not (point_json.parent / "summary.json").is_file():
            continue  # ``latest``: the same run again
        try:
            point = json.loads(point_json.read_text(encoding="utf-8"))
            summary = json.loads((point_json.parent / "summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        wall = summary.get("duration_s") or (summary.get("timing") or {}).get("wall_s")
        if summary.get("status") != "complete" or not isinstance(wall, (int, float)):
            continue
        window = (summary.get("timing") or {}).get("measured_window_s")
        out.setdefault(_key(point), []).append({
            "wall_s": float(wall), "window_s": float(window) if isinstance(window, (int, float)) else 0.0,
            "ran_on_cpus": (summary.get("cpus") or {}).get("effective"),
            "bytes": sum(f.stat().st_size for f in point_json.parent.rglob("*") if f.is_file())})
    return out


def plan_needs(plans: list[tuple[str, str, list[dict], int | None]], results: Path, python: tuple[int, int],
               glibc: str | None, min_free_gib: float) -> dict:
    """``kit.json`` ``needs``: what the kit's plans (``(paper, experiment, points as point.json holds them,
    the most CPUs a point asks for)``) ask of a target, with each point's cost measured here (``results``:
    this machine's run store), or ``measured: false`` where no run here has its configuration."""
    points, measured_bytes = [], 0
    for paper, experiment, plan_points, _ in plans:
        here = measured_here(results, paper, experiment)
        for point in plan_points:
            runs = here.get(_key(point), [])
            cost = {"experiment": experiment, "point": point["id"], "cpus": (point.get("parameters") or {}).get("cpus")}
            if runs:
                cost.update(measured=True, runs=len(runs), **{k: round(sum(r[k] or 0 for r in runs) / len(runs), 1)
                                                               for k in ("wall_s", "window_s", "bytes")},
                            ran_on_cpus=max((r["ran_on_cpus"] or 0) for r in runs) or None)
                measured_bytes += cost["bytes"]
            else:
                cost["measured"] = False
            points.append(cost)
    return {"system": "Linux", "machine": "x86_64", "kernel_at_least": ".".join(map(str, KERNEL_AT_LEAST)),
            "python": f"{python[0]}.{python[1]}", "glibc_at_least": glibc,
            "cpus_at_least": max([c for *_, c in plans if c] or [1]),
            "disk_bytes": int(min_free_gib * 2**30 + measured_bytes + VENV_BYTES),
            "measured_on": {"cpus_usable": len(os.sched_getaffinity(0)), "host": platform.node()},
            "points": points}


# ---------------------------------------------------------------- on the target

def _version(text: str | None) -> tuple[int, ...]:
    digits = []
    for part in str(text or "").replace("-", ".").split("."):
        if not part.isdigit():
            break
        digits.append(int(part))
    return tuple(digits)


def facts(where: Path) -> dict:
    """This host as the check reads it: system, kernel, machine, the CPUs this process may use, free bytes
    where the kit is, the C library's version and the Python running this."""
    libc = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else ""
    return {"system": platform.system(), "kernel": platform.release(), "machine": platform.machine(),
            "cpus": len(os.sched_getaffinity(0)), "free_bytes": shutil.disk_usage(where).free,
            "glibc": libc.split()[-1] if libc.startswith("glibc") else None,
            "python": f"{sys.version_info[0]}.{sys.version_info[1]}"}


def problems(needs: dict, host: dict) -> list[str]:
    """Why ``host`` (``facts``) cannot hold the plans ``needs`` describes, one line each; empty: it can."""
    found = []
    if host["system"] != needs["system"] or host["machine"] != needs["machine"]:
        found.append(f"this host is {host['system']} on {host['machine']}; the kit's binaries are for "
                     f"{needs['system']} on {needs['machine']}")
    elif _version(host["kernel"]) < _version(needs["kernel_at_least"]):
        found.append(f"kernel {host['kernel']}: the kit's Go binaries need Linux {needs['kernel_at_least']} or newer")
    if needs.get("glibc_at_least") and _version(host.get("glibc")) < _version(needs["glibc_at_least"]):
        found.append(f"C library {host.get('glibc') or 'not glibc'}: the kit's Java runtime needs glibc "
                     f"{needs['glibc_at_least']} or newer (the JDK it was made from)")
    if host["python"] != needs["python"]:
        found.append(f"Python {host['python']}: the kit's wheels are for Python {needs['python']} (give "
                     f"./kit/run --python with a Python {needs['python']}, or build the kit with --python "
                     f"{host['python']})")
    if host["cpus"] < needs["cpus_at_least"]:
        found.append(f"{host['cpus']} CPUs usable here; a point of the plan is pinned to cpus="
                     f"{needs['cpus_at_least']}")
    if host["free_bytes"] < needs["disk_bytes"]:
        found.append(f"{host['free_bytes'] / 2**30:.1f} GiB free where the kit is; its plan needs "
                     f"{needs['disk_bytes'] / 2**30:.1f} GiB (the scale's working room, the points' results as "
                     "measured where the kit was built, the kit's venv)")
    return found


def estimate(needs: dict, host: dict) -> tuple[float | None, int, str]:
    """(seconds, points without a measured cost, one line saying so) the plan takes on ``host``: each measured
    point's time outside its window as where the kit was built, its window times the CPUs it ran on there over
    those it gets here (``cpus=N``: N where the host has them)."""
    here_cpus = needs["measured_on"]["cpus_usable"]
    total, unmeasured = 0.0, 0
    for p in needs["points"]:
        if not p.get("measured"):
            unmeasured += 1
            continue
        had = p.get("ran_on_cpus") or here_cpus
        gets = min(int(p["cpus"]), host["cpus"]) if p.get("cpus") else host["cpus"]
        total += (p["wall_s"] - p["window_s"]) + p["window_s"] * had / max(gets, 1)
    n = len(needs["points"])
    if unmeasured == n:
        return None, unmeasured, (f"no estimate of the plan's time: none of its {n} points was measured on the "
                                  f"machine that built the kit ({needs['measured_on']['host']})")
    text = (f"the plan's {n - unmeasured} measured points take about {total / 60:.1f} min here (as measured on "
            f"{needs['measured_on']['host']}, {here_cpus} CPUs, their windows scaled to this host's {host['cpus']})")
    if unmeasured:
        text += f"; {unmeasured} more points were not measured there and are not counted"
    return total, unmeasured, text


def main(argv: list[str] | None = None) -> int:
    """``./kit/run``'s first step, with the target's own Python: refuse a host that cannot hold the kit's
    plans (exit 2, each reason named), else say how long they will take and exit 0."""
    kit_dir = Path(__file__).resolve().parent.parent
    needs = json.loads((kit_dir / "kit.json").read_text(encoding="utf-8")).get("needs")
    if not needs:
        return 0  # a kit built before its needs were written
    host = facts(kit_dir)
    found = problems(needs, host)
    if found:
        print("error: this host cannot hold the kit's plan:\n  - " + "\n  - ".join(found), file=sys.stderr)
        return 2
    print(f"kit: {estimate(needs, host)[2]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
