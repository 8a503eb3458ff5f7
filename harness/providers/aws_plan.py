"""What ``--provider aws`` would create for a layout, what that costs an hour and how long a run takes.

Pure functions over data, so that ``--plan-only`` can say all of it before any
Terraform call that needs the AWS provider or credentials:

* ``instances``: one EC2 instance per host of the layout, named as
  ``infra/terraform/modules/topology`` names it (``<role>-<i>``), with its
  instance type and region. ``tests/infra/test_terraform.py`` runs that module
  with ``terraform test`` on every experiment's layout and asserts the same hosts.
* ``role_regions``: an experiment whose every topology role names an AWS region
  (``infra/aws/regions.json``: ``oregon`` is us-west-2) is geo-distributed.
* ``hourly_cost``: from ``infra/aws/ec2-prices.json``, a hand-kept table with its
  source and date; never live, and each line says so.
* ``wall_estimate``: points x seconds a point (measured by stored runs of the
  experiment at that scale, else ``infra/aws/estimates.json``'s assumption) plus
  the instances' set-up and destroy.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import REPO_ROOT

DATA = REPO_ROOT / "infra" / "aws"
PRICES = DATA / "ec2-prices.json"
REGIONS = DATA / "regions.json"
ESTIMATES = DATA / "estimates.json"
#: The root volume of every instance (infra/terraform/modules/cluster, root_volume_gb's default).
ROOT_VOLUME_GB = 100


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def place_name(text: str) -> str:
    """A place or role name as topology roles spell it: lower case, ``_`` between words."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def region_names(regions: dict | None = None) -> dict[str, str]:
    """``{name: region}``: each region's place names and its own code with ``_`` (``us_west_2``)."""
    doc = regions or load(REGIONS)
    out = {}
    for region, entry in doc["regions"].items():
        for name in [*entry["names"], place_name(region)]:
            out[place_name(name)] = region
    return out


def role_regions(roles, regions: dict | None = None) -> dict[str, str] | None:
    """``{role: region}`` when every role names an AWS region (a geo-distributed topology), else None."""
    names = region_names(regions)
    roles = list(roles)
    if not roles or not all(place_name(r) in names for r in roles):
        return None
    return {r: names[place_name(r)] for r in roles}


def instance_name(role: str, index: int) -> str:
    """The name Terraform gives the ``index``-th instance of ``role`` (modules/topology: ``<role>-<i>``)."""
    return f"{role}-{index}"


@dataclass(frozen=True)
class Instance:
    """One EC2 instance the run would create, for one host of the layout."""
    name: str
    role: str
    index: int
    instance_type: str
    region: str
    host: str = ""          # the layout's host it runs


def instances(layout, default_type: str, instance_types: dict[str, str] | None = None, region: str = "",
              regions: dict[str, str] | None = None) -> list[Instance]:
    """One instance per host of ``layout`` (a ``harness.topology.Layout``), ordered as Terraform orders them
    (by role, then index); ``regions`` (``{role: region}``) for a geo-distributed layout, else all in ``region``."""
    types = instance_types or {}
    out = [Instance(instance_name(h.role, h.index), h.role, h.index, types.get(h.role, default_type),
                    (regions or {}).get(h.role, region), h.name) for h in layout.hosts]
    return sorted(out, key=lambda i: (i.role, i.index))


@dataclass
class Cost:
    """The hourly cost of some instances at the table's prices."""
    total: float                                    # USD an hour, of what is priced
    lines: list[tuple[int, str, str, float]]        # (count, instance type, region, USD an hour each)
    storage: float                                  # USD an hour for the root volumes
    unpriced: list[str] = field(default_factory=list)   # "<type> in <region>" the table lacks
    source: str = ""
    as_of: str = ""


def hourly_cost(chosen: list[Instance], prices: dict | None = None, volume_gb: int = ROOT_VOLUME_GB) -> Cost:
    """What ``chosen`` cost an hour at the table's On-Demand prices, with the root volumes (gp3)."""
    doc = prices or load(PRICES)
    counts: dict[tuple[str, str], int] = {}
    for i in chosen:
        counts[(i.instance_type, i.region)] = counts.get((i.instance_type, i.region), 0) + 1
    lines, unpriced, total, storage = [], [], 0.0, 0.0
    for (itype, region), n in sorted(counts.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        table = doc["regions"].get(region) or {}
        price = (table.get("instance_hour") or {}).get(itype)
        if price is None:
            unpriced.append(f"{itype} in {region}")
        else:
            lines.append((n, itype, region, float(price)))
            total += n * float(price)
        if table.get("gp3_gb_month") is not None:
            storage += n * volume_gb * float(table["gp3_gb_month"]) / float(doc["hours_per_month"])
        elif f"gp3 in {region}" not in unpriced:
            unpriced.append(f"gp3 in {region}")
    return Cost(round(total + storage, 4), lines, round(storage, 4), unpriced, doc["source"], doc["as_of"])


def measured_point_seconds(results: Path, paper: str, experiment: str, scale: str) -> tuple[float, list[str]] | None:
    """Mean ``duration_s`` of the stored points of ``experiment`` at ``scale`` (control points included), and
    the runs they come from; None when no stored run has one."""
    walls, runs = [], []
    for meta in sorted((Path(results) / paper / experiment).glob("*/metadata.json")):
        try:
            if json.loads(meta.read_text(encoding="utf-8")).get("scale") != scale:
                continue
        except (OSError, ValueError):
            continue
        found = []
        for summary in sorted(meta.parent.glob("points/*/summary.json")):
            try:
                wall = json.loads(summary.read_text(encoding="utf-8")).get("duration_s")
            except (OSError, ValueError):
                continue
            if isinstance(wall, (int, float)) and wall > 0:
                found.append(float(wall))
        if found:
            walls += found
            runs.append(meta.parent.name)
    return (sum(walls) / len(walls), runs) if walls else None


@dataclass
class WallTime:
    seconds: float
    how: str


def minutes(seconds: float) -> str:
    """``42 min`` or ``3.5 h``."""
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.0f} min"


def wall_estimate(points: int, scale: str, measured: tuple[float, list[str]] | None = None,
                  estimates: dict | None = None, controls: int = 0) -> WallTime:
    """The run's expected wall time: set-up + (``points`` + at most ``controls`` control points) x seconds a point
    + destroy, and how it was estimated."""
    doc = estimates or load(ESTIMATES)
    if measured:
        per, runs = measured
        basis = (f"{per:.0f} s a point, the mean of {len(runs)} stored run(s) of this experiment at scale {scale} "
                 f"({', '.join(runs[:3])}{', ...' if len(runs) > 3 else ''}; measured on the hosts that made "
                 "them, not EC2)")
    else:
        per = float(doc["point_s"][scale])
        basis = (f"{per:.0f} s a point at scale {scale} (assumed, infra/aws/estimates.json: no stored run of this "
                 "experiment at this scale to measure it by)")
    total = doc["setup_s"] + (points + controls) * per + doc["destroy_s"]
    how = (f"{points} point(s) of the run's plan"
           + (f" + at most {controls} control point(s), one a variant," if controls else "") + f" x {basis}, "
           f"+ {minutes(doc['setup_s'])} to create and prepare the instances and {minutes(doc['destroy_s'])} to "
           "destroy them (assumed, infra/aws/estimates.json); builds on this machine not counted")
    return WallTime(total, how)


def host_ranges(names: list[str]) -> str:
    """``kafka-0, kafka-1, kafka-2`` as ``kafka-0..kafka-2`` when they run in a row."""
    if len(names) > 2:
        m = [re.fullmatch(r"(.*)-(\d+)", n) for n in names]
        if all(m) and len({x.group(1) for x in m}) == 1:
            idx = [int(x.group(2)) for x in m]
            if idx == list(range(idx[0], idx[0] + len(idx))):
                return f"{names[0]}..{names[-1]}"
    return ", ".join(names)


def plan_lines(chosen: list[Instance], cost: Cost, wall: WallTime | None, root: str,
               wall_unknown: str = "") -> list[str]:
    """What ``--provider aws`` prints before it asks to create ``chosen`` (and what ``--plan-only`` prints)."""
    by_role: dict[tuple[str, str, str], list[str]] = {}
    for i in chosen:
        by_role.setdefault((i.role, i.instance_type, i.region), []).append(i.name)
    regions = sorted({i.region for i in chosen})
    out = [f"aws: {len(chosen)} instance(s) to create in {', '.join(regions)} (Terraform root {root}):"]
    for (role, itype, region), names in by_role.items():
        out.append(f"  {role}: {len(names)} x {itype}" + (f" in {region}" if len(regions) > 1 else "")
                   + f"  ({host_ranges(names)})")
    types: dict[str, int] = {}
    for i in chosen:
        types[i.instance_type] = types.get(i.instance_type, 0) + 1
    out.append("  in all: " + ", ".join(f"{n} x {t}" for t, n in sorted(types.items())))
    priced = " + ".join(f"{n} x {t} at ${p:.3f}" + (f" ({r})" if len(regions) > 1 else "")
                        for n, t, r, p in cost.lines)
    line = (f"aws: cost: about ${cost.total:.2f} an hour = {priced or 'nothing priced'} + "
            f"{len(chosen)} x {ROOT_VOLUME_GB} GiB gp3 (${cost.storage:.2f}); On-Demand prices as of {cost.as_of}, "
            "transcribed from AWS's price pages into infra/aws/ec2-prices.json: not live, check before a large run")
    if cost.unpriced:
        line += f"; NOT PRICED (not in the table): {', '.join(cost.unpriced)}, so the total is too low"
    out.append(line)
    if wall is not None:
        out.append(f"aws: expected wall time: about {minutes(wall.seconds)}, so about "
                   f"${cost.total * wall.seconds / 3600:.2f} for the run ({wall.how})")
    else:
        out.append(f"aws: expected wall time: unknown ({wall_unknown})")
    return out
