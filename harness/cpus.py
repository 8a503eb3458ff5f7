"""CPUs, one name per idea (docs/results-format.md, "CPUs").

- **usable**: the CPUs the harness may use on this machine (its own affinity). A point on the local or
  netns provider without a ``cpus`` parameter is to run on all of them; with ``cpus=N``, the process
  role pins each component to the first N of the host's allowed CPUs.
- **ran on**: the CPUs a point's processes were allowed, read back from each host when they started
  (``raw/<host>/affinity_<name>.csv`` of the process role). Read once, when the point ends, and stored
  in its ``summary.json`` (``cpus``); everything after reads the stored value (``of_point``).
- **online**: ``os.cpu_count()`` of the machine, a fact about the host recorded in ``metadata.json``
  (``host.cpus_online``) beside ``host.cpus_usable``; neither is what a point ran on.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import os
from pathlib import Path


def usable() -> list[int]:
    """The CPUs the harness may use on this machine, sorted."""
    return sorted(os.sched_getaffinity(0))


def cpu_set(text: str) -> set[int]:
    """The CPUs of a kernel CPU list (``/proc/<pid>/status`` Cpus_allowed_list), e.g. ``0-2,5`` -> {0, 1, 2, 5}."""
    out: set[int] = set()
    for part in filter(None, str(text).strip().split(",")):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def started_components(point_dir: Path, pattern: str = "*") -> dict[str, set[str]]:
    """The hosts each component of the point was started on, for names matching ``pattern`` (fnmatch): the
    process role records every start in ``raw/<host>/affinity_<component>.csv`` (an instance as
    ``<component>_<instance>``), and its stop the component's CPU in ``cpu_<component>.csv``. The one reader
    of those names (validity's declared components, the systems' independent checks)."""
    out: dict[str, set[str]] = {}
    for f in sorted(Path(point_dir).glob("raw/*/*.csv")):
        for prefix in ("affinity_", "cpu_"):
            name = f.stem.removeprefix(prefix)
            if f.stem.startswith(prefix) and fnmatch.fnmatchcase(name, pattern):
                out.setdefault(name, set()).add(f.parent.name)
    return out


def read_back(point_dir: Path) -> dict | None:
    """The CPUs each process a point started was allowed (``processes``), and the point's ``effective``
    CPUs: the most CPUs the processes of any one host could use together. None when nothing was recorded
    (a point run before the record existed, or a test double's)."""
    processes, per_host = {}, {}
    for path in sorted(Path(point_dir).glob("raw/*/affinity_*.csv")):
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                processes[f"{path.parent.name}/{row['component']}"] = row["cpus_allowed_list"]
                per_host.setdefault(path.parent.name, set()).update(cpu_set(row["cpus_allowed_list"]))
    if not per_host:
        return None
    return {"effective": max(len(c) for c in per_host.values()), "processes": processes}


def of_point(point_dir: Path) -> dict | None:
    """The CPUs a point ran on as its ``summary.json`` stored them (``read_back`` at its end); read back
    only for a point whose summary predates the stored value."""
    summary = Path(point_dir) / "summary.json"
    if summary.is_file():
        stored = json.loads(summary.read_text(encoding="utf-8"))
        if "cpus" in stored:
            return stored["cpus"]
    return read_back(point_dir)


def host_usable(host: dict) -> int | None:
    """The CPUs the harness could use on a run's host (``metadata.json`` ``host``). Runs recorded before
    the two were told apart stored only ``cores`` (``os.cpu_count()``)."""
    return host.get("cpus_usable", host.get("cores"))
