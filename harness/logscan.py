"""Reading a point's fetched logs: the patterns no healthy component prints, counted up to where each log stood
when teardown began (harness/validity.py fails a point on what this finds; docs/validity.md "Logs").

A log is read up to its length when teardown began (``raw/<host>/log_bytes_at_stop.csv``), and that length
must be consistent with the log: not beyond its end, and past every line the component wrote while the point
ran (``HARNESS_BEFORE_STOP`` and a system's ``before_stop`` lines). A pattern a mutation explains
(``planned_by``) is forgiven only for as many lines as ``mutations.csv`` records mutations of that kind.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from .work import FLOOR_SECTION, TIMED_SECTION, VERIFY_COST

#: Fabric-X's load generator plants these (systems/fabric-x), as a driver of any system may: the core reads them
#: (control_check's planned kinds), so they are the core's parameters (harness/parameters.yaml).
INVALID_SIGNATURE_FRACTION, CONFLICT_FRACTION = "invalid_signature_fraction", "conflict_fraction"
#: The parameter that plans each mutation (harness/parameters.yaml; a pattern's ``planned_by``).
MUTATION_PARAMETERS = {
    "corrupt_creator_fraction": "bad_creator",
    "corrupt_endorsement_fraction": "bad_endorsement",
    "stale_read_fraction": "stale_read",
    INVALID_SIGNATURE_FRACTION: "bad_signature",
    CONFLICT_FRACTION: "conflict",
}

#: Lines no healthy component prints, whatever its system: Go's runtime, the JVM, a taken port, log4j's
#: top level. ``fatal`` ones also end a running point within seconds (harness/watch.py).
COMMON_PATTERNS = [
    {"name": "go_panic", "regex": r"^panic: ", "unexpected": True, "fatal": True,
     "meaning": "a Go program panicked (runtime/panic.go prints 'panic: ' at the start of a line)"},
    {"name": "go_fatal_error", "regex": r"^fatal error: ", "unexpected": True, "fatal": True,
     "meaning": "the Go runtime stopped a program (e.g. a concurrent map write or out of memory)"},
    {"name": "java_uncaught_exception", "regex": r"^Exception in thread \"", "unexpected": True, "fatal": True,
     "meaning": "a Java thread died of an exception nothing caught"},
    # Go's net.Listen: "listen tcp 127.0.0.1:7050: bind: address already in use";
    # Java's java.net.BindException: "Address already in use" (Kafka, ZooKeeper, BFT-SMaRt, CouchDB's Erlang: eaddrinuse).
    {"name": "bind_address_in_use", "regex": r"(?i)bind(?:exception)?: address already in use|eaddrinuse",
     "unexpected": True, "fatal": True,
     "meaning": "a server could not listen: another process holds its port"},
    # log4j's FATAL level: Kafka ("[%d] %p %m (%c)") and ZooKeeper ("%d [myid:] - %-5p [%t] - %m").
    {"name": "log4j_fatal", "regex": r"^\[[^\]]*\] FATAL | - FATAL  ?\[", "unexpected": True, "fatal": True,
     "meaning": "a Java server logged at log4j's FATAL level (Kafka: 'Fatal error during KafkaServer startup')"},
]


#: Lines a component writes only while the point runs, never because it is being stopped, whatever its
#: system: the timed-section and verification-cost lines the work check reads (harness/work.py), printed by
#: a driver before it exits. Each must lie within the log's recorded length at stop; a system adds its own
#: (``before_stop`` in validity.yaml, e.g. a peer's commit lines).
HARNESS_BEFORE_STOP = [
    {"name": "timed_section", "regex": TIMED_SECTION.pattern,
     "meaning": "the driver's timed-section line, printed when its measured section ended"},
    {"name": "verify_cost", "regex": VERIFY_COST.pattern,
     "meaning": "the driver's cost of one verification, printed beside its timed section"},
    {"name": "floor_section", "regex": FLOOR_SECTION.pattern,
     "meaning": "the driver's floor-section line, printed before its timed section began"},
]


def log_bytes_at_stop(point_dir: Path, host: str) -> dict[str, int]:
    """How many bytes each of a host's logs held when teardown began stopping its components
    (``raw/<host>/log_bytes_at_stop.csv``, written by the process role's stop.sh; empty when absent)."""
    try:
        df = pd.read_csv(Path(point_dir) / "raw" / host / "log_bytes_at_stop.csv", dtype={"log": str})
    except (OSError, ValueError):
        return {}
    out: dict[str, int] = {}
    for r in df.itertuples():  # a name listed twice (two files of one name in the work root): the longer hides less
        out[str(r.log)] = max(int(r.bytes), out.get(str(r.log), 0))
    return out


def lines_per_mutation(pattern: dict, parameters: dict | None = None) -> int:
    """The lines of ``pattern`` one mutation explains at a point of ``parameters``: the pattern's number, or
    its ``{by, values, else}`` mapping read at the point's value of parameter ``by`` (``else``: 1)."""
    per = pattern.get("lines_per_mutation", 1)
    if isinstance(per, dict):
        value = str((parameters or {}).get(per["by"], ""))
        return int((per.get("values") or {}).get(value, per.get("else", 1)))
    return int(per)


def _planned_lines(pattern: dict, mutations: pd.DataFrame | None, parameters: dict | None = None) -> int:
    """How many lines of ``pattern`` the recorded mutations explain (0 without a ``planned_by``)."""
    kind = MUTATION_PARAMETERS.get(pattern.get("planned_by") or "")
    if not kind or mutations is None or not len(mutations):
        return 0
    return int((mutations["mutation"] == kind).sum()) * lines_per_mutation(pattern, parameters)


def applies(pattern: dict, component: str) -> bool:
    """Whether a pattern (or a ``before_stop`` line) is read in the logs of ``component`` (its filters)."""
    return component in pattern.get("components", [component]) and component not in pattern.get("components_except", [])


def stop_offset_problems(log: Path, data: bytes, cut: int, markers: list[tuple[dict, re.Pattern]]) -> list[str]:
    """Why a log's recorded length when the stop began (``cut``) cannot be its own: beyond the log's end, or
    before the end of a line its component wrote while the point ran (``markers``: compiled byte patterns of
    ``before_stop`` lines). A length that hid such a line would hide every line after it from the patterns."""
    where = f"logs/{log.parent.name}/{log.name}"
    said = f"raw/{log.parent.name}/log_bytes_at_stop.csv says {log.name} held {cut} bytes when the stop began"
    if cut > len(data):
        return [f"{said}, but {where} holds {len(data)}: the log is shorter than it was at the stop"]
    component = log.name.rsplit(".", 1)[0]
    start = data.rfind(b"\n", 0, cut) + 1  # the line the recorded length falls in (or the one after it)
    for marker, rx in markers:
        if not applies(marker, component):
            continue
        late = next((m for m in rx.finditer(data, start) if m.end() > cut), None)
        if late is not None:
            line = data[data.rfind(b"\n", 0, late.start()) + 1:late.end()].decode("utf-8", errors="replace")[:200]
            return [f"{said}, but its {marker['name']} line ({marker['meaning']}) ends at byte {late.end()}: the "
                    f"recorded length is not the log's, and would hide what the log says before the stop "
                    f"({where}: {line})"]
    return []


def scan_logs(point_dir: Path, patterns: list[dict], mutations: pd.DataFrame | None = None,
              parameters: dict | None = None, before_stop: list[dict] | None = None) -> tuple[dict, list[str]]:
    """Count every pattern's matching lines over the point's fetched logs: (counts, problems).

    Only what a log held when teardown began stopping its host's components counts: what a
    component writes because it, or a component it talks to, is being stopped (a peer that loses
    its chaincode's stream) says nothing about the run. A recorded length of 0 for a log that has
    content hides nothing but the lines of ``stop_effect`` patterns (those a stop itself causes):
    such a log is read whole for every other pattern. A recorded length must be consistent with the
    log (``stop_offset_problems``): not beyond its end, and past every line the component wrote while
    the point ran (``HARNESS_BEFORE_STOP`` and the system's ``before_stop``); else the point fails."""
    compiled = [(p, re.compile(p["regex"], re.M)) for p in [*COMMON_PATTERNS, *patterns]]
    markers = [(m, re.compile(m["regex"].encode(), re.M)) for m in [*HARNESS_BEFORE_STOP, *(before_stop or [])]]
    offset_problems: list[str] = []
    counts = {p["name"]: 0 for p, _ in compiled}
    first: dict[str, str] = {}
    at_stop: dict[str, dict[str, int]] = {}
    for log in sorted(Path(point_dir).glob("logs/*/*")):
        if not log.is_file() or log.name.startswith("ansible-"):
            continue  # the harness's own playbook output quotes commands, not components
        host = log.parent.name
        if host not in at_stop:
            at_stop[host] = log_bytes_at_stop(point_dir, host)
        data = log.read_bytes()
        cut = at_stop[host].get(log.name)
        if cut is not None:
            offset_problems += stop_offset_problems(log, data, cut, markers)
        # A log empty when the stop began is read whole but for the lines a stop itself causes
        # (``stop_effect`` patterns): a recorded length of 0 must not hide what was there.
        text = (data[:cut] if cut else data).decode("utf-8", errors="replace")
        before_stop = cut is None or cut > 0
        component = log.name.rsplit(".", 1)[0]  # <process_name>.log / .out
        for p, rx in compiled:
            if not applies(p, component):
                continue
            if not before_stop and p.get("stop_effect"):
                continue
            for m in rx.finditer(text):
                counts[p["name"]] += 1
                if p["name"] not in first:
                    line = text[text.rfind("\n", 0, m.start()) + 1:text.find("\n", m.end())][:300]
                    first[p["name"]] = f"{log.parent.name}/{log.name}: {line}"
    problems = offset_problems
    for p, _ in compiled:
        n, planned = counts[p["name"]], _planned_lines(p, mutations, parameters)
        if n > planned and p.get("unexpected", True):
            why = f", {planned} explained by the mutations recorded" if planned else ""
            problems.append(f"{n} log line(s) of {p['name']} ({p['meaning']}{why}); first: {first[p['name']]}")
    return counts, problems
