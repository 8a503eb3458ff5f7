"""Is a point's count of valid transactions proven, and did its driver do the paper's work?

A check fails closed: evidence that is missing, empty or cut short fails the
point, naming what is missing; it never passes as "not measured"
(docs/validity.md says what each check can and cannot see). For every point:

* **Declared evidence.** The point's system declares, per driver and build,
  what a point must leave behind (``evidence`` in ``systems/<system>/validity.yaml``):
  where its per-transaction codes come from (``codes``: the kept ``ledger``,
  the validator's ``recorded`` codes, or ``none`` with what is counted instead
  and the ``independent_check`` that stands for it), the components that
  validate (one must have run), the ledgers, logs and tables that must be
  there and non-empty wherever their component ran (a point's components are
  those the process role started: ``raw/<host>/affinity_<component>.csv``),
  and whether our own verifier re-derives the codes. A driver without a
  declaration fails its points.
* **Counts against the ledger, block by block, host by host**
  (harness/ledger.py): the driver's per-block counts must name exactly the
  blocks the ledger holds with the ledger's counts; our verifier
  (``bin/txverify``) must agree with every recorded code it checks.
* **Mutations.** Transactions a driver corrupted on purpose (``mutations``)
  must carry their expected code, and every other transaction of those
  blocks must be VALID.
* **Logs.** Every fetched log is scanned for the patterns of the point's
  system, up to its length when teardown began (harness/logscan.py); an
  unexpected match, or a recorded length inconsistent with the log, fails the point.
* **Work.** The CPU the validating component spent must cover the signature
  verifications owed for the transactions the *ledger* holds, at the cost of
  one the harness measured on this machine at the run's start, with the margin
  ``min_covered`` that the system's negative control (the validator with its
  signature checks off) stays below. Every system that declares a validating
  component declares that margin; none defaults (harness/work.py).

``check_point`` returns a ``validity`` section for the point's summary and the
problems that fail it; its ``evidence`` says what the count rests on
(``EVIDENCE_CLASSES``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import yaml

from . import REPO_ROOT, cpus, ledger, systems
from .plan import driver_of
from .logscan import COMMON_PATTERNS, MUTATION_PARAMETERS, scan_logs
from .work import floor_owed, work_check
from .errors import HarnessError

SYSTEMS = REPO_ROOT / "systems"
RULES_SCHEMA_VERSION = 1

#: What a point's count rests on, strongest first (the claims table shows the weakest of a claim's points).
#: "ledger-proven": the ledger's codes, every one (or the stated sample) re-derived by our verifier in agreement;
#: "validator's codes": the ledger's codes, which only the peer that wrote them vouches for (no verifier ran).
LEDGER_PROVEN = "ledger-proven"
INDEPENDENT_CHECK = "independent check"
VALIDATOR_CODES = "validator's codes"
DRIVER_ONLY = "driver only"
NO_COUNT = "no transactions counted"
EVIDENCE_CLASSES = (LEDGER_PROVEN, NO_COUNT, INDEPENDENT_CHECK, VALIDATOR_CODES, DRIVER_ONLY)
#: Classes whose counts one source alone vouches for: a claim resting on them cannot be "reproduced".
SELF_VOUCHED = (DRIVER_ONLY, VALIDATOR_CODES)

#: ``codes`` of an evidence declaration.
CODE_SOURCES = ("ledger", "recorded", "none", "not_applicable")

#: Which validation code each mutation must produce (docs/validity.md).
MUTATION_CODES = {
    "bad_creator": {"BAD_CREATOR_SIGNATURE"},
    "bad_endorsement": {"ENDORSEMENT_POLICY_FAILURE"},
    "stale_read": {"MVCC_READ_CONFLICT"},
    # Fabric-X's load generator (our patch 0001 names them; fabric-x-common committerpb/status.proto)
    "bad_signature": {"ABORTED_SIGNATURE_INVALID"},
    "conflict": {"ABORTED_MVCC_CONFLICT"},
}


#: The parameter that turns a peer benchmark into the work check's negative control (its validator skips
#: the signature checks: patches 0005, 0008); such a point is never evidence.
NEGATIVE_CONTROL = "control_skip_signature_checks"

_EVIDENCE_KEYS = {"codes", "counts", "independent_check", "validators", "ledgers", "logs", "tables", "verify",
                  "mutations"}

#: The files the process role writes for a component (``<log name>.log``: a server's stdout and stderr, or
#: the stderr of a command run to completion; ``<log name>.out``: that command's stdout). A declared log
#: without one of these suffixes is its ``.log``.
LOG_SUFFIXES = (".log", ".out")

def _empty_rules() -> dict:
    return {"log_patterns": [], "work": None, "evidence": {}, "before_stop": [], "capacity_limits": [], "sources": []}


def _check_named(path: Path, key: str, i: int, entry, allowed: set | None = None) -> None:
    """A named rule of ``key`` (log_patterns, capacity_limits): its name, regex and meaning given, its regex
    compiles, and (``allowed``) no key beside those."""
    missing = [k for k in ("name", "regex", "meaning") if not isinstance(entry, dict) or entry.get(k) in (None, "")]
    if missing:
        raise HarnessError(f"{path}: {key}[{i}] lacks {', '.join(missing)}")
    unknown = sorted(set(entry) - allowed) if allowed else []
    if unknown:
        raise HarnessError(f"{path}: {key}[{i}] ({entry['name']}): unknown key(s) {', '.join(unknown)}")
    try:
        re.compile(entry["regex"])
    except re.error as e:
        raise HarnessError(f"{path}: {key}[{i}] ({entry['name']}): regex does not compile: {e}") from None


def declared_log(entry: str) -> tuple[str, str]:
    """A declared log (``evidence.<driver>.<build>.logs``): (its component, its file name). ``peer`` is
    ``peer.log``; ``committerbench.out`` names that file of ``committerbench``."""
    for suffix in LOG_SUFFIXES:
        if entry.endswith(suffix):
            return entry[:-len(suffix)], entry
    return entry, entry + ".log"


def load_rules(system: str, systems_dir: Path = SYSTEMS) -> dict:
    """``systems/<system>/validity.yaml`` over that of the system it extends (``system.yaml``): patterns and
    capacity limits (harness/capacity.py; same name replaces), ``work``, and ``evidence`` per driver (a driver the system declares replaces the base's
    declaration of it)."""
    base_system = None
    if (Path(systems_dir) / system / "system.yaml").is_file():
        systems.lineage(system, systems_dir)  # a loop in 'extends' is an error, not a recursion
        base_system = systems.base_of(system, systems_dir)
    path = Path(systems_dir) / system / "validity.yaml"
    if not path.is_file():
        return load_rules(base_system, systems_dir) if base_system else _empty_rules()
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise HarnessError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(doc, dict):
        raise HarnessError(f"{path}: expected a mapping at the top")
    if doc.get("schema_version") != RULES_SCHEMA_VERSION:
        raise HarnessError(f"{path}: schema_version {doc.get('schema_version')!r} is not supported "
                           f"(this harness reads {RULES_SCHEMA_VERSION})")
    if "extends" in doc:
        raise HarnessError(f"{path}: 'extends' belongs in system.yaml, the one declaration of a system's base")
    base = load_rules(base_system, systems_dir) if base_system else _empty_rules()
    patterns = {p["name"]: p for p in base["log_patterns"]}
    for i, p in enumerate(doc.get("log_patterns") or []):
        _check_named(path, "log_patterns", i, p)
        if p.get("planned_by") and p["planned_by"] not in MUTATION_PARAMETERS:
            raise HarnessError(f"{path}: log_patterns[{i}] ({p['name']}): planned_by {p['planned_by']!r} is not one "
                               f"of {', '.join(MUTATION_PARAMETERS)}")
        per = p.get("lines_per_mutation", 1)
        if not (isinstance(per, int) or (isinstance(per, dict) and isinstance(per.get("by"), str)
                                         and isinstance(per.get("values"), dict))):
            raise HarnessError(f"{path}: log_patterns[{i}] ({p['name']}): lines_per_mutation must be a number or "
                               f"{{by: <parameter>, values: {{<value>: n}}, else: n}}, not {per!r}")
        patterns[p["name"]] = p
    markers = {m["name"]: m for m in base["before_stop"]}
    for i, m in enumerate(doc.get("before_stop") or []):
        missing = [k for k in ("name", "regex", "meaning") if not isinstance(m, dict) or k not in m]
        if missing:
            raise HarnessError(f"{path}: before_stop[{i}] lacks {', '.join(missing)}")
        unknown = sorted(set(m) - {"name", "regex", "meaning", "components"})
        if unknown:
            raise HarnessError(f"{path}: before_stop[{i}] ({m['name']}): unknown key(s) {', '.join(unknown)}")
        try:
            re.compile(m["regex"].encode())
        except re.error as e:
            raise HarnessError(f"{path}: before_stop[{i}] ({m['name']}): regex does not compile: {e}") from None
        markers[m["name"]] = m
    # the check problems that mean "this machine is too small" (harness/capacity.py), the base's by name replaced
    limits = {r["name"]: r for r in base["capacity_limits"]}
    entries = doc.get("capacity_limits")
    if entries is not None and not isinstance(entries, list):
        raise HarnessError(f"{path}: capacity_limits must be a list of {{name, regex, meaning}}")
    for i, entry in enumerate(entries or []):
        _check_named(path, "capacity_limits", i, entry, allowed={"name", "regex", "meaning"})
        limits[entry["name"]] = dict(entry)
    evidence = dict(base["evidence"])
    for driver, builds in (doc.get("evidence") or {}).items():
        evidence[driver] = {build: _evidence_declaration(path, driver, build, decl)
                            for build, decl in (builds or {}).items()}
    work = doc.get("work") or base["work"]
    if doc.get("work") is not None:
        _check_work(path, doc["work"])
    validating = sorted(f"{d}.{b}" for d, builds in evidence.items() for b, decl in builds.items()
                        if decl.get("validators"))
    if validating and not work:
        raise HarnessError(f"{path}: evidence {', '.join(validating)} declares validating components, but the "
                           "system declares no 'work' (verifies_per_tx, min_covered): every system with a "
                           "validating component declares the work it owes and its margin")
    return {"log_patterns": list(patterns.values()), "work": work, "evidence": evidence,
            "before_stop": list(markers.values()), "capacity_limits": list(limits.values()),
            "sources": [*base["sources"], str(path.relative_to(Path(systems_dir).parent))]}


def _check_work(path: Path, work) -> None:
    """``work``: the verifications owed per transaction and the margin over them, both declared (none defaults:
    a margin of x1.0 would pass a validator that spent just the owed CPU on anything)."""
    if not isinstance(work, dict):
        raise HarnessError(f"{path}: 'work' must be a mapping (verifies_per_tx, min_covered, why)")
    per = work.get("verifies_per_tx")
    if isinstance(per, bool) or not isinstance(per, int) or per <= 0:
        raise HarnessError(f"{path}: work.verifies_per_tx must be a positive whole number, not {per!r}")
    if "min_covered" not in work:
        raise HarnessError(f"{path}: work declares no margin 'min_covered' (how many times the owed verifications' "
                           "CPU the validator must spend, calibrated against the system's negative control); "
                           "none defaults")
    margin = work["min_covered"]
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or margin < 1:
        raise HarnessError(f"{path}: work.min_covered must be a number of at least 1, not {margin!r}")
    over = work.get("min_over_floor", 1)
    if isinstance(over, bool) or not isinstance(over, (int, float)) or over <= 0:
        raise HarnessError(f"{path}: work.min_over_floor (the share of the owed verifications' cost by which a timed "
                           f"section must exceed its floor, harness/work.py) must be a positive number, not {over!r}")


def _evidence_declaration(path: Path, driver: str, build: str, decl) -> dict:
    where = f"{path}: evidence.{driver}.{build}"
    if build not in ("upstream", "reference"):
        raise HarnessError(f"{where}: the build must be upstream or reference")
    if not isinstance(decl, dict) or decl.get("codes") not in CODE_SOURCES:
        raise HarnessError(f"{where}: 'codes' must be one of {', '.join(CODE_SOURCES)}")
    unknown = sorted(set(decl) - _EVIDENCE_KEYS)
    if unknown:
        raise HarnessError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_EVIDENCE_KEYS))})")
    for key in ("validators", "ledgers", "logs", "tables"):
        if not isinstance(decl.get(key, []), list):
            raise HarnessError(f"{where}: '{key}' must be a list of names")
    for entry in decl.get("logs") or []:
        if not isinstance(entry, str) or "/" in entry or not declared_log(entry)[0]:
            raise HarnessError(f"{where}: logs: {entry!r} is not a component's log (<component>, <component>.log "
                               "or <component>.out)")
    if decl["codes"] in ("none", "not_applicable") and not decl.get("counts"):
        raise HarnessError(f"{where}: a driver without ledger codes must say what it counts ('counts')")
    if decl["codes"] == "ledger" and not decl.get("ledgers"):
        raise HarnessError(f"{where}: codes from the ledger need the components whose ledgers are kept ('ledgers')")
    unknown = sorted(set(decl.get("mutations") or []) - set(MUTATION_CODES))
    if unknown:
        raise HarnessError(f"{where}: unknown mutation kind(s) {', '.join(unknown)} (known: {', '.join(MUTATION_CODES)})")
    if decl.get("mutations") and decl["codes"] not in ("ledger", "recorded"):
        raise HarnessError(f"{where}: 'mutations' need per-transaction codes to be found in")
    if decl["codes"] in ("ledger", "recorded") and not decl.get("validators"):
        raise HarnessError(f"{where}: codes from a validator need the components that validate ('validators')")
    return decl


def fatal_patterns(system: str, systems_dir: Path = SYSTEMS) -> list[dict]:
    """The log patterns that end a running point at once (``fatal: true``): the common ones, then the system's
    (with those of the system it extends), each as ``name``, ``regex``, ``meaning`` and its component filters."""
    keys = ("name", "regex", "meaning", "components", "components_except")
    return [{k: p[k] for k in keys if k in p}
            for p in [*COMMON_PATTERNS, *load_rules(system, systems_dir)["log_patterns"]] if p.get("fatal")]


def _ran(started: dict[str, set[str]], component: str) -> dict[str, set[str]]:
    """The started names (instances included) of a declared component, with their hosts."""
    return {n: h for n, h in started.items() if n == component or n.startswith(component + "_")}


def required_evidence(point_dir: Path, decl: dict, tables: dict[str, pd.DataFrame]) -> list[str]:
    """What the declaration says the point must have and it lacks: a validating component that ran, the
    kept ledgers, logs and tables of the components that ran, non-empty."""
    point_dir = Path(point_dir)
    started = cpus.started_components(point_dir)
    problems = []
    if not started and any(decl.get(k) for k in ("validators", "ledgers", "logs")):
        return ["no record of the components this point started (raw/<host>/affinity_*.csv, cpu_*.csv): "
                "nothing shows what ran where"]
    validators = decl.get("validators") or []
    if validators and not any(_ran(started, c) for c in validators):
        problems.append(f"none of the validating components {', '.join(validators)} was started "
                        f"(started: {', '.join(sorted(started))})")
    kept = ledger.ledger_files(point_dir)
    # Ledgers and logs are required of the component itself; its instances name their files their own way.
    for component in decl.get("ledgers") or []:
        for name, hosts in [(component, started[component])] if component in started else []:
            for host in sorted(hosts):
                files = [f for (h, c, _), fs in kept.items() if h == host and c == component for f in fs]
                if not files:
                    problems.append(f"no kept block files of {name} on host {host} "
                                    f"(raw/{host}/blocks/{component}/<channel>/blockfile_*)")
                elif not any(f.stat().st_size for f in files):
                    problems.append(f"the kept block files of {name} on host {host} are empty")
    # Each declared log is one file (declared_log): another file of the component (its .out beside a deleted
    # .log) stands in for nothing.
    for entry in decl.get("logs") or []:
        component, file = declared_log(entry)
        for host in sorted(started.get(component, ())):
            path = point_dir / "logs" / host / file
            if not path.is_file():
                problems.append(f"the log of {component} on host {host} is missing (logs/{host}/{file})")
            elif not path.stat().st_size:
                problems.append(f"the log of {component} on host {host} is empty (logs/{host}/{file})")
    for table in decl.get("tables") or []:
        if not len(tables.get(table, [])):
            problems.append(f"the point has no {table} rows (raw/<host>/{table}.csv missing or empty)")
    return problems


def refused_at_broadcast(mutations: pd.DataFrame, txs: pd.DataFrame | None) -> pd.DataFrame:
    """The corrupted transactions the orderer refused (the client's ``txs`` status is not SUCCESS): a bad
    creator fails the orderer's signature filter (the channel's Writers policy), so it never reaches a block."""
    if txs is None or not len(txs) or not len(mutations):
        return mutations.iloc[0:0]
    refused = set(txs.loc[txs["status"] != "SUCCESS", "tx_id"])
    return mutations[mutations["tx_id"].isin(refused)]


def mutation_check(mutations: pd.DataFrame, codes: pd.DataFrame, source: str,
                   txs: pd.DataFrame | None = None) -> tuple[dict, list[str]]:
    """Each corrupted transaction has its expected code, and every other one of those blocks is VALID; one
    the orderer refused (``refused_at_broadcast``) must be in no block at all.

    A driver that cannot know where its transactions land (a client) records ``block_number`` -1; those
    rows are found by transaction ID."""
    planned = {k: int(v) for k, v in sorted(mutations["mutation"].value_counts().items())}
    refused = refused_at_broadcast(mutations, txs)
    leaked = refused[refused["tx_id"].isin(codes["tx_id"])]
    mutations = mutations[~mutations.index.isin(refused.index)]
    by_position = mutations[mutations["block_number"] >= 0][["block_number", "tx_index", "mutation"]]
    by_id = mutations[mutations["block_number"] < 0][["tx_id", "mutation"]]
    merged = codes.merge(by_position, on=["block_number", "tx_index"], how="left")
    if len(by_id):
        found = codes.merge(by_id, on="tx_id", how="left")["mutation"]
        merged["mutation"] = merged["mutation"].fillna(found)
    mutated = merged[merged["mutation"].notna()]
    problems = []
    wrong = mutated[[code not in MUTATION_CODES.get(kind, set())
                     for kind, code in zip(mutated["mutation"], mutated["validation_code"])]]
    if len(mutated) != len(mutations):
        problems.append(f"{len(mutations) - len(mutated)} corrupted transaction(s) are not in the {source}")
    if len(wrong):
        r = wrong.iloc[0]
        problems.append(f"{len(wrong)} of {len(mutated)} corrupted transactions have another code than planned in "
                        f"the {source} (first: block {r['block_number']} tx {r['tx_index']} {r['mutation']} -> "
                        f"{r['validation_code']})")
    blocks = merged[merged["block_number"].isin(mutated["block_number"])]
    clean = blocks[blocks["mutation"].isna() & (blocks["validation_code"] != "VALID")]
    if len(clean):
        r = clean.iloc[0]
        problems.append(f"{len(clean)} transaction(s) that were not corrupted are invalid in the {source} "
                        f"(first: block {r['block_number']} tx {r['tx_index']} {r['validation_code']})")
    if len(leaked):
        problems.append(f"{len(leaked)} corrupted transaction(s) the orderer refused are in the {source} "
                        f"(first: {leaked['tx_id'].iloc[0]})")
    return {"planned": planned,
            "invalid_as_planned": int(len(mutated) - len(wrong)),
            "refused_at_broadcast": {k: int(v) for k, v in sorted(refused["mutation"].value_counts().items())}}, \
        problems


def control_check(point: dict, codes: pd.DataFrame | None, mutations: pd.DataFrame | None,
                  txs: pd.DataFrame | None) -> tuple[dict, list[str]]:
    """A control point (plan.add_controls): every kind its parameters planned was corrupted at least once,
    and the ledger marks exactly as many transactions invalid as were corrupted and reached it
    (``mutation_check`` has already required each one's code and the rest of their blocks VALID)."""
    planned = sorted(k for p, k in MUTATION_PARAMETERS.items() if float((point.get("parameters") or {}).get(p) or 0))
    mutations = mutations if mutations is not None else pd.DataFrame(columns=["tx_id", "mutation"])
    recorded = mutations["mutation"].value_counts().to_dict()
    refused = len(refused_at_broadcast(mutations, txs))
    problems = [f"control: the driver recorded no {kind} mutation although the control planned it"
                for kind in planned if not recorded.get(kind)]
    invalid = None
    if codes is not None:
        invalid = int(((codes["validation_code"] != "VALID") & (codes["validation_code"] != "NOT_VALIDATED")).sum())
        if invalid != len(mutations) - refused:
            problems.append(f"control: the ledger marks {invalid} transaction(s) invalid, the driver corrupted "
                            f"{len(mutations)} of which the orderer refused {refused}")
    else:
        problems.append("control: no per-transaction codes to find the corrupted transactions in")
    return {"planned": planned, "corrupted": {k: int(v) for k, v in sorted(recorded.items())},
            "refused_at_broadcast": refused, "ledger_invalid": invalid,
            "status": "failed" if problems else "passed"}, problems


def point_context(point_dir: Path) -> dict:
    """What the checks need from the point's run directory: the experiment's driver as the point's build
    ran it, the build kind, the run's measured verification rates and the folder of its systems."""
    run_dir = Path(point_dir).parent.parent
    try:
        meta = json.loads((run_dir / "metadata.json").read_text())
        experiment = yaml.safe_load((run_dir / "experiment.yaml").read_text(encoding="utf-8"))["experiment"]
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as e:
        raise HarnessError(f"{run_dir}: cannot tell the point's driver and build (metadata.json, experiment.yaml): "
                           f"{e}") from None
    kind = (meta.get("build") or {}).get("kind") or "reference"
    # experiment.yaml stores the experiment as the run's build ran it (plan.for_build): plan.driver_of reads the
    # point's driver from it, the variant's own where it names one
    return {"experiment": experiment, "build": kind,
            "primitives": meta.get("primitives") or {},
            # the run's build prints the work check's floor line (harness/work.py floor_owed): a point without it fails
            "floor_owed": floor_owed(meta.get("build")),
            "build_paths": {v: b.get("path") for v, b in ((meta.get("build") or {}).get("variants") or {}).items()},
            "systems_dir": Path(meta["systems_dir"]) if meta.get("systems_dir") else SYSTEMS}


def check_point(point_dir: Path, point: dict, tables: dict[str, pd.DataFrame], blockfile_bin: Path | None = None,
                context: dict | None = None, txverify_bin: Path | None = None) -> tuple[dict, list[str]]:
    """The point's ``validity`` section and every problem that fails it."""
    point_dir = Path(point_dir)
    context = context if context is not None else point_context(point_dir)
    systems_dir = context.get("systems_dir") or SYSTEMS
    rules = load_rules(point["system"], systems_dir)
    problems: list[str] = []
    driver = driver_of(context["experiment"], point.get("variant"))
    section: dict = {"rules": rules["sources"], "driver": driver, "build": context["build"]}
    mutations = tables.get("mutations")
    decl = (rules["evidence"].get(driver) or {}).get(context["build"])
    if decl is None:
        section.update(evidence=DRIVER_ONLY, counts_from="nothing declared")
        problems.append(f"{systems_dir.name}/{point['system']}/validity.yaml declares no evidence for driver "
                        f"{driver!r} on the {context['build']} build: nothing proves this point's counts")
        decl = {"codes": "none"}
    problems += required_evidence(point_dir, decl, tables)
    if str((point.get("parameters") or {}).get(NEGATIVE_CONTROL, "")).lower() in ("true", "1"):
        problems.append(f"a negative control ({NEGATIVE_CONTROL}): its validator skipped the signature checks on "
                        "purpose, so its numbers are not evidence")

    counts, log_problems = scan_logs(point_dir, rules["log_patterns"], mutations, point.get("parameters"),
                                     rules["before_stop"])
    section["log_counts"] = counts
    problems += log_problems

    codes = None
    if decl["codes"] == "ledger":
        codes, more = _ledger_codes(point_dir, decl, tables, section, blockfile_bin,
                                    txverify_bin or REPO_ROOT / "bin" / "txverify",
                                    point, bool(context.get("fresh_verifier")),
                                    (context.get("build_paths") or {}).get(point.get("variant")))
        problems += more
    elif decl["codes"] == "recorded":
        codes = tables.get("block_txs")
        section["counts_from"] = "the validator's recorded codes (block_txs)"
        if codes is None or not len(codes):
            codes = None
            problems.append("the validator recorded no per-transaction codes (block_txs)")
        else:
            problems += ledger.cross_check(tables.get("blocks"), codes, "driver's block log", "recorded codes")
    else:
        section["counts_from"] = decl.get("counts")
        section["evidence"] = NO_COUNT if decl["codes"] == "not_applicable" else DRIVER_ONLY
    # recorded codes too may have a second source (Fabric-X: its store's codes against the sidecar's blocks)
    if decl.get("independent_check") and decl["codes"] != "ledger":
        check = systems.independent_check(point["system"], decl["independent_check"], systems_dir)
        result, more = check.run(point_dir, tables)
        section["independent_check"] = {"name": check.name, "what": check.what, **result,
                                        "status": "failed" if more else "passed"}
        problems += [f"independent check {check.name}: {p}" for p in more]
        if not more:
            section["evidence"] = INDEPENDENT_CHECK
    if codes is not None:
        section["ledger_valid"] = int((codes["validation_code"] == "VALID").sum())
        section["ledger_invalid"] = {k: int(v) for k, v in
                                     sorted(codes.loc[codes["validation_code"] != "VALID", "validation_code"]
                                            .value_counts().items())}
        if mutations is not None and len(mutations):
            section["mutations"], more = mutation_check(mutations, codes, section["counts_from"], tables.get("txs"))
            problems += more
        verified = section.get("verifier") or []
        section.setdefault("evidence", LEDGER_PROVEN if verified and all(v.get("status") == "agreed" for v in verified)
                           else VALIDATOR_CODES)
    elif mutations is not None and len(mutations):
        problems.append(f"{len(mutations)} transaction(s) were corrupted on purpose, but the point has no "
                        "per-transaction codes to find them in")
    # a control point could prove this point's checks (the driver plants the kinds its validator must catch)
    section["controllable"] = bool(decl.get("mutations"))
    if point.get("control"):
        section["control"], more = control_check(point, codes, mutations, tables.get("txs"))
        problems += more

    if rules["work"] and decl.get("validators"):
        blocks = tables.get("blocks")
        timed = sorted(set(blocks["block_number"])) if blocks is not None and len(blocks) else None
        section["work"], more = work_check(point_dir, rules["work"], decl["validators"], context["primitives"],
                                           codes, timed, floor_required=bool(context.get("floor_owed")))
        problems += more
    section["problems"] = problems
    return section, problems


def _ledger_codes(point_dir: Path, decl: dict, tables: dict, section: dict, blockfile_bin: Path | None,
                  txverify_bin: Path, point: dict, fresh: bool,
                  build_path: str | None) -> tuple[pd.DataFrame | None, list[str]]:
    """Codes from the kept ledgers, every driver table held against them, and our verifier's word."""
    blockfile_bin = blockfile_bin or REPO_ROOT / "bin" / "blockfile"
    if not ledger.ledger_files(point_dir):
        section["counts_from"] = "no kept ledger"
        return None, []  # required_evidence names the missing block files
    if not Path(blockfile_bin).is_file():
        section["counts_from"] = "kept ledger not decoded"
        return None, [f"the point kept block files, but {blockfile_bin} is missing to decode them (invoke build)"]
    try:
        kept = ledger.kept_ledgers(point_dir, blockfile_bin)
        codes, source = ledger.agreed_codes(kept)
    except HarnessError as e:
        section["counts_from"] = "kept ledger unreadable"
        return None, [str(e)]
    if codes is None:
        section["counts_from"] = "kept ledgers hold no validated block"
        return None, ["no kept ledger holds a validated block (every transaction NOT_VALIDATED)"]
    section["counts_from"] = source
    problems = []
    for name, label in (("blocks", "driver's block log"), ("deliveries", "block watcher"),
                        ("block_txs", "point's per-transaction codes")):
        rows = tables.get(name)
        if name == "block_txs" and rows is not None and len(rows):
            rows = ledger.blocks_of(rows)
        problems += ledger.cross_check(rows, codes, label, source)
    if decl.get("verify"):
        msp_dirs = decl["verify"].get("msp_dirs", {}) if isinstance(decl["verify"], dict) else {}
        checked = []
        for lg in kept:
            if lg.validated and lg.component in decl["ledgers"]:
                msp = msp_dirs.get(lg.component)
                if msp:
                    if not build_path or not Path(build_path).is_dir():
                        problems.append(f"our verifier needs the MSP of the build to check the ledger {lg.key} "
                                        f"({msp}), and the point's build is not here ({build_path}): rebuild it "
                                        "(invoke build --upstream <system>)")
                        continue
                    msp = msp.format(build=build_path)
                result, more = ledger.verify(lg, txverify_bin, None, f"{point.get('id')}/{lg.key}",
                                             None if fresh else Path(point_dir) / "verifier.json",
                                             [msp] if msp else [])
                checked.append(result)
                problems += more
        section["verifier"] = checked
    return codes, problems
