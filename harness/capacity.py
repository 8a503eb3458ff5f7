"""A known limit of the machine's cores is a verdict, not a crash (issue 48, item 4).

Some of a point's own checks can show that the machine could not carry the experiment: the ordering
service's receivers lagging what node 0 ordered (BFT-SMaRt's ``bft-receivers`` check, with 4 to 7 JVM
replicas, their front-ends and the receivers on 2 cores), a load generator behind its schedule. Such a
point measured nothing false: what it measured is not the paper's experiment. A system declares those
failures in its validity rules (``capacity_limits`` of ``systems/<system>/validity.yaml``)::

    capacity_limits:
      - name: delivery_lags_ordering
        regex: 'independent check bft-receivers: receiver [0-9]+ is short of blocks'
        meaning: "..."

A point whose every validity problem matches one of them (``classify``) keeps its counts and its
reasons (``validity.capacity``), is complete but not valid (left out of the aggregates, as a lagging
generator's point always was: ``LOAD_GENERATOR_LAG``), and does not fail its run. A claim resting on
such a point reads "not comparable on N cores" with the command that would judge it on a bigger host
(``claim_reason``). A point with any other problem still fails, and its run with it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from . import validity

#: What ``summary.json``'s ``invalid_kind`` says of a point whose machine could not carry it.
CAPACITY = "capacity"
#: The harness's own capacity limit: the load generator lagged its schedule by more than ``max_lag_ms``
#: (harness/analyze.py), a limit of the machine, not of the system measured.
LOAD_GENERATOR_LAG = {"name": "load_generator_lag",
                      "meaning": "the load generator fell behind its schedule: the machine could not send at the "
                                 "planned rate beside the components it measures"}

def load(system: str, systems_dir: Path | None = None) -> list[dict]:
    """The capacity limits ``system`` declares (``capacity_limits`` of its validity.yaml, over those of the
    systems it extends), as harness/validity.py's ``load_rules`` reads and checks them."""
    return validity.load_rules(system, Path(systems_dir or validity.SYSTEMS))["capacity_limits"]


def limits_for(point_dir: Path, system: str) -> list[dict]:
    """The capacity limits of a point's system, from the systems folder its run recorded (metadata.json
    ``systems_dir``, as harness/validity.py reads its rules), else this repository's."""
    try:
        meta = json.loads((Path(point_dir).parent.parent / "metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {}
    return load(system, Path(meta["systems_dir"]) if meta.get("systems_dir") else None)


def classify(limits: list[dict], problems: list[str]) -> dict | None:
    """The point's capacity section where every one of ``problems`` is a declared capacity limit (at least
    one problem): the limits that matched, what they mean, and the problems (each with its counts); else
    None, and the problems fail the point as before."""
    if not problems or not limits:
        return None
    matched: dict[str, dict] = {}
    for problem in problems:
        hit = next((r for r in limits if re.search(r["regex"], problem)), None)
        if hit is None:
            return None
        matched[hit["name"]] = hit
    return {"limits": sorted(matched), "meaning": [matched[n]["meaning"] for n in sorted(matched)],
            "problems": list(problems)}


def point_cores(summary: dict, host_cores: int | None = None) -> int | None:
    """The cores a point ran on: the CPUs its processes were allowed, read back, else the host's."""
    effective = (summary.get("cpus") or {}).get("effective")
    return int(effective) if effective else (int(host_cores) if host_cores else None)


def limited(summary: dict) -> bool:
    """Whether a point summary is one the machine could not carry (complete, not valid, ``invalid_kind``)."""
    return summary.get("status") == "complete" and not summary.get("valid", True) \
        and summary.get("invalid_kind") == CAPACITY


def judge_command(paper: str | None, experiment: str | None) -> str:
    """The command that would judge a capacity-limited experiment on a bigger host."""
    exp = f" --experiment {experiment}" if experiment else ""
    return (f"invoke kit --paper {paper or '<paper>'}{exp}, then ./kit/run on a host with more cores and "
            "invoke ingest its run.tar.gz here")


def _why(summary: dict) -> str:
    """A limited point's reason, shortest: its capacity problems without the check's name, else its invalid_reason."""
    problems = ((summary.get("validity") or {}).get("capacity") or {}).get("problems")
    if not problems:
        return str(summary.get("invalid_reason"))
    return " and ".join(re.sub(r"^independent check [\w-]+: ", "", p) for p in problems)


def claim_reason(points: list[dict], host_cores: int | None, paper: str | None, experiment: str | None) -> str | None:
    """"not comparable on N cores" for a claim with capacity-limited points among ``points`` (the summaries of
    the variants and parameters it compares), with each point's reason and the command that would judge it;
    None where none of them is limited."""
    hit = [s for s in points if limited(s)]
    if not hit:
        return None
    cores = sorted({c for c in (point_cores(s, host_cores) for s in hit) if c})
    where = "/".join(str(c) for c in cores) or "these"
    reasons = "; ".join(f"{s['point']}: {_why(s)}" for s in hit)
    return (f"not comparable on {where} cores: {len(hit)} of {len(points)} points could not be carried by this "
            f"machine ({reasons}); judge it on a bigger host: {judge_command(paper, experiment)}")


def run_note(run_path: Path, paper: str | None, experiment: str | None) -> str | None:
    """What a finished run's console line adds where some of its points were more than this machine could carry
    (their ``summary.json``): how many, on how many cores, and the command that would judge them; None if none."""
    summaries = []
    for path in sorted(Path(run_path).glob("points/*/summary.json")):
        try:
            summaries.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    hit = [s for s in summaries if limited(s)]
    if not hit:
        return None
    cores = "/".join(str(c) for c in sorted({c for c in (point_cores(s) for s in hit) if c})) or "these"
    limits = sorted({n for s in hit for n in ((s.get("validity") or {}).get("capacity") or {}).get("limits") or
                     ["load_generator_lag"]})
    return (f"{len(hit)} of {len(summaries)} points were more than this machine could carry ({', '.join(limits)}): "
            f"the claims on them read \"not comparable on {cores} cores\"; judge them on a bigger host: "
            f"{judge_command(paper, experiment)}")
