"""Is a point's count of valid transactions true, and did its driver do the paper's work?

A driver's own word is never taken (docs/validity.md). For every point:

* **Codes from the ledger.** Each transaction's validation code comes from
  what the peer stored or served: the kept block files of a ledger
  (``raw/<host>/blocks/<component>/<channel>/blockfile_*``, decoded by
  ``bin/blockfile --txs``), else the per-transaction codes the point recorded
  (``block_txs``: the block watcher's deliver stream, or the validator's own
  flags where a driver keeps no ledger, FastFabric's peer benchmark).
  The driver's per-block ``valid_count`` must equal what those codes say for
  every block both know; a mismatch fails the point naming both counts.
* **Mutations.** Where the driver corrupted transactions on purpose
  (``mutations``), each must carry its expected code and every other
  transaction must be VALID.
* **Logs.** Every fetched log is scanned for the patterns of the point's
  system (``systems/<system>/validity.yaml``, with those of the system it
  extends and ``COMMON_PATTERNS``; a pattern may name the ``components`` whose
  logs it applies to, or ``components_except``, by the log's file stem); the
  counts go to ``summary.json``, and an unexpected one fails the point unless
  the point's ``planned_by`` parameter planned it.
* **Work.** The CPU the validating component spent in its timed section must
  cover the signature verifications the paper says each transaction needs,
  at this machine's measured cost of one verification (``run_primitives``).

``check_point`` returns a ``validity`` section for the point's summary and the
problems that fail it.
"""

from __future__ import annotations

import json
import re
import subprocess
from io import StringIO
from pathlib import Path

import pandas as pd
import yaml

from . import REPO_ROOT
from .errors import HarnessError

SYSTEMS = REPO_ROOT / "systems"
RULES_SCHEMA_VERSION = 1

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

#: Which validation code each mutation must produce (docs/validity.md).
MUTATION_CODES = {
    "bad_creator": {"BAD_CREATOR_SIGNATURE"},
    "bad_endorsement": {"ENDORSEMENT_POLICY_FAILURE"},
    "stale_read": {"MVCC_READ_CONFLICT"},
}

#: The line a pre-made-block driver prints after its timed section (FastFabric patch 0006).
_TIMED_SECTION = re.compile(r"^fabricrepro timed_section txs (\d+) wall_ns (\d+) user_ns (\d+) system_ns (\d+)\s*$",
                            re.M)


def load_rules(system: str, systems_dir: Path = SYSTEMS, _seen: tuple = ()) -> dict:
    """``systems/<system>/validity.yaml`` with its base's patterns first; ``{}`` parts when it has none."""
    if system in _seen:
        raise HarnessError(f"systems/{system}/validity.yaml: 'extends' loops through {' -> '.join(_seen)}")
    path = Path(systems_dir) / system / "validity.yaml"
    if not path.is_file():
        return {"log_patterns": [], "work": None, "no_ledger": None, "sources": []}
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise HarnessError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(doc, dict):
        raise HarnessError(f"{path}: expected a mapping at the top")
    if doc.get("schema_version") != RULES_SCHEMA_VERSION:
        raise HarnessError(f"{path}: schema_version {doc.get('schema_version')!r} is not supported "
                           f"(this harness reads {RULES_SCHEMA_VERSION})")
    base = load_rules(doc["extends"], systems_dir, (*_seen, system)) if doc.get("extends") else \
        {"log_patterns": [], "work": None, "no_ledger": None, "sources": []}
    patterns = {p["name"]: p for p in base["log_patterns"]}
    for i, p in enumerate(doc.get("log_patterns") or []):
        missing = [k for k in ("name", "regex", "meaning") if k not in p]
        if missing:
            raise HarnessError(f"{path}: log_patterns[{i}] lacks {', '.join(missing)}")
        try:
            re.compile(p["regex"])
        except re.error as e:
            raise HarnessError(f"{path}: log_patterns[{i}] ({p['name']}): regex does not compile: {e}") from None
        patterns[p["name"]] = p
    return {"log_patterns": list(patterns.values()), "work": doc.get("work") or base["work"],
            "no_ledger": doc.get("no_ledger") or base.get("no_ledger"),
            "sources": [*base["sources"], str(path.relative_to(Path(systems_dir).parent))]}


def fatal_patterns(system: str, systems_dir: Path = SYSTEMS) -> list[dict]:
    """The log patterns that end a running point at once (``fatal: true``): the common ones, then the system's
    (with those of the system it extends), each as ``name``, ``regex``, ``meaning`` and its component filters."""
    keys = ("name", "regex", "meaning", "components", "components_except")
    return [{k: p[k] for k in keys if k in p}
            for p in [*COMMON_PATTERNS, *load_rules(system, systems_dir)["log_patterns"]] if p.get("fatal")]


def _planned(pattern: dict, parameters: dict) -> bool:
    name = pattern.get("planned_by")
    return bool(name) and float(parameters.get(name) or 0) > 0


def log_bytes_at_stop(point_dir: Path, host: str) -> dict[str, int]:
    """How many bytes each of a host's logs held when teardown began stopping its components
    (``raw/<host>/log_bytes_at_stop.csv``, written by the process role's stop.sh; empty when absent)."""
    try:
        df = pd.read_csv(Path(point_dir) / "raw" / host / "log_bytes_at_stop.csv", dtype={"log": str})
    except (OSError, ValueError):
        return {}
    return {str(r.log): int(r.bytes) for r in df.itertuples()}


def scan_logs(point_dir: Path, patterns: list[dict], parameters: dict) -> tuple[dict, list[str]]:
    """Count every pattern's matching lines over the point's fetched logs: (counts, problems).

    Only what a log held when teardown began stopping its host's components counts: what a
    component writes because it, or a component it talks to, is being stopped (a peer that loses
    its chaincode's stream) says nothing about the run."""
    compiled = [(p, re.compile(p["regex"], re.M)) for p in [*COMMON_PATTERNS, *patterns]]
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
        if log.name in at_stop[host]:
            data = data[:at_stop[host][log.name]]
        text = data.decode("utf-8", errors="replace")
        component = log.name.rsplit(".", 1)[0]  # <process_name>.log / .out
        for p, rx in compiled:
            if component not in p.get("components", [component]) or component in p.get("components_except", []):
                continue
            for m in rx.finditer(text):
                counts[p["name"]] += 1
                if p["name"] not in first:
                    line = text[text.rfind("\n", 0, m.start()) + 1:text.find("\n", m.end())][:300]
                    first[p["name"]] = f"{log.parent.name}/{log.name}: {line}"
    problems = [f"{counts[p['name']]} log line(s) of {p['name']} ({p['meaning']}); first: {first[p['name']]}"
                for p, _ in compiled
                if counts[p["name"]] and p.get("unexpected", True) and not _planned(p, parameters)]
    return counts, problems


def ledger_files(point_dir: Path) -> dict[str, list[Path]]:
    """Each kept ledger's block files in order, by ``<host>/<component>/<channel>``."""
    ledgers: dict[str, list[Path]] = {}
    for f in sorted(Path(point_dir).glob("raw/*/blocks/*/*/blockfile_*")):
        key = "/".join(f.relative_to(Path(point_dir) / "raw").parts[:-1]).replace("/blocks/", "/", 1)
        ledgers.setdefault(key, []).append(f)
    return ledgers


def decode_ledger(files: list[Path], blockfile_bin: Path) -> pd.DataFrame:
    """Every transaction's code in one ledger's block files (``bin/blockfile --txs``)."""
    proc = subprocess.run([str(blockfile_bin), "--txs", *map(str, files)], capture_output=True, text=True,
                          timeout=600, check=False)
    if proc.returncode != 0:
        raise HarnessError(f"bin/blockfile --txs {files[0].parent}: {proc.stderr.strip() or proc.returncode}")
    return pd.read_csv(StringIO(proc.stdout), dtype={"tx_id": "string", "validation_code": "string"},
                       keep_default_na=False)


def ledger_codes(point_dir: Path, blockfile_bin: Path) -> tuple[pd.DataFrame | None, str | None]:
    """Per-transaction codes from the kept ledgers that validated (peers), else None; and their source.

    A ledger whose blocks carry no filter (an orderer's) is left out. Where
    several peers' ledgers were kept, every one is decoded and they must
    agree on the transactions they share; the one holding the most
    transactions is returned (e.g. FastFabric's storage server over its
    endorser, which stores only the blocks before its first endorsement).
    """
    found = []
    for key, files in ledger_files(point_dir).items():
        df = decode_ledger(files, blockfile_bin)
        if len(df) and (df["validation_code"] != "NOT_VALIDATED").any():
            found.append((key, df))
    if not found:
        return None, None
    found.sort(key=lambda kd: -len(kd[1]))
    key, codes = found[0]
    for other, df in found[1:]:
        merged = codes.merge(df, on=["block_number", "tx_index"], suffixes=("", "_other"))
        differ = merged[merged["validation_code"] != merged["validation_code_other"]]
        if len(differ):
            r = differ.iloc[0]
            raise HarnessError(f"ledgers {key} and {other} disagree on block {r['block_number']} tx {r['tx_index']}: "
                               f"{r['validation_code']} vs {r['validation_code_other']}")
    return codes, f"block files of {key}"


def valid_per_block(codes: pd.DataFrame) -> pd.Series:
    """VALID transactions per block number."""
    return codes.assign(ok=codes["validation_code"] == "VALID").groupby("block_number")["ok"].sum().astype(int)


def cross_check(driver_blocks: pd.DataFrame, codes: pd.DataFrame, driver: str, source: str) -> list[str]:
    """The driver's ``valid_count`` per block against the codes; one problem line when any block differs."""
    if driver_blocks is None or not len(driver_blocks):
        return []
    counted = valid_per_block(codes)
    rows = driver_blocks[driver_blocks["block_number"].isin(counted.index) & (driver_blocks["tx_count"] > 0)]
    rows = rows.drop_duplicates("block_number")
    if rows.empty:
        return [f"none of the {driver}'s blocks is in the {source}: its valid count cannot be checked"]
    ledger = counted.loc[rows["block_number"]].to_numpy()
    differ = rows[rows["valid_count"].to_numpy() != ledger]
    if differ.empty:
        return []
    r = differ.iloc[0]
    return [f"the {driver} counts {int(rows['valid_count'].sum())} valid transactions in blocks "
            f"{int(rows['block_number'].min())}-{int(rows['block_number'].max())}, the {source} "
            f"{int(ledger.sum())} ({len(differ)} block(s) differ, first block {int(r['block_number'])}: "
            f"{int(r['valid_count'])} vs {int(counted[r['block_number']])})"]


def mutation_check(mutations: pd.DataFrame, codes: pd.DataFrame, source: str) -> tuple[dict, list[str]]:
    """Each corrupted transaction has its expected code, and every other one of those blocks is VALID."""
    merged = codes.merge(mutations[["block_number", "tx_index", "mutation"]], on=["block_number", "tx_index"],
                         how="left")
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
    blocks = merged[merged["block_number"].isin(mutations["block_number"])]
    clean = blocks[blocks["mutation"].isna() & (blocks["validation_code"] != "VALID")]
    if len(clean):
        r = clean.iloc[0]
        problems.append(f"{len(clean)} transaction(s) that were not corrupted are invalid in the {source} "
                        f"(first: block {r['block_number']} tx {r['tx_index']} {r['validation_code']})")
    kinds = mutations["mutation"].value_counts().to_dict()
    return {"planned": {k: int(v) for k, v in sorted(kinds.items())},
            "invalid_as_planned": int(len(mutated) - len(wrong))}, problems


def timed_sections(point_dir: Path, components: list[str]) -> list[dict]:
    """The timed-section CPU lines the components printed (``fabricrepro timed_section ...``)."""
    out = []
    for c in components:
        for log in sorted(Path(point_dir).glob(f"logs/*/{c}.*")):
            for txs, wall, user, system in _TIMED_SECTION.findall(log.read_text(encoding="utf-8", errors="replace")):
                out.append({"component": c, "host": log.parent.name, "txs": int(txs), "wall_s": int(wall) / 1e9,
                            "cpu_s": (int(user) + int(system)) / 1e9})
    return out


def process_cpu(point_dir: Path, components: list[str]) -> list[dict]:
    """The life-time CPU of each stopped component process (``cpu_<name>.csv``, playbooks/roles/process stop)."""
    out = []
    for f in sorted(Path(point_dir).glob("raw/*/cpu_*.csv")):
        name = f.stem.removeprefix("cpu_")
        if any(name == c or name.startswith(c + "_") for c in components):
            for row in pd.read_csv(f).itertuples():
                out.append({"component": name, "host": f.parent.name, "cpu_s": float(row.user_s + row.system_s)})
    return out


def work_check(point_dir: Path, work: dict | None, primitives: dict | None,
               owed_txs: int | None = None) -> tuple[dict | None, list[str]]:
    """CPU spent against ``verifies_per_tx`` verifications per transaction.

    The CPU is the timed section's where the component printed it (the
    pre-made-block drivers), else the components' whole life (set-up
    included, so a weaker bound) for ``owed_txs`` transactions. The bound uses
    the fastest per-core verification rate measured in the run (the cheapest
    a verification can be here), so a point that passes spent at least that
    CPU on every transaction.
    """
    if not work:
        return None, []
    components = list(work.get("components") or [])
    result = {"verifies_per_tx": work["verifies_per_tx"], "why": work.get("why"), "components": components}
    sections = timed_sections(point_dir, components)
    if sections:
        txs = sum(s["txs"] for s in sections)
        cpu = sum(s["cpu_s"] for s in sections)
        result.update({"basis": "timed section", "wall_s": round(sum(s["wall_s"] for s in sections), 4)})
    else:
        procs = process_cpu(point_dir, components)
        if not procs or not owed_txs:
            return {**result, "status": "not measured",
                    "reason": "no timed-section CPU line and no stopped component's CPU record"
                    if not procs else "no transaction count to hold the CPU against"}, []
        txs, cpu = int(owed_txs), sum(p["cpu_s"] for p in procs)
        result["basis"] = "whole life of " + ", ".join(sorted({p["component"] for p in procs})) + " (set-up included)"
    rates = [p.get("per_core_verifies_per_s") for p in (primitives or {}).values() if isinstance(p, dict)]
    rates = [r for r in rates if r]
    if not rates:
        return {**result, "status": "not measured", "reason": "this run has no measured ECDSA verification rate"}, []
    rate = max(rates)
    needed = txs * work["verifies_per_tx"] / rate
    result.update({"txs": txs, "cpu_s": round(cpu, 4), "verify_us": round(1e6 / rate, 2),
                   "needed_cpu_s": round(needed, 4), "cpu_us_per_tx": round(cpu / txs * 1e6, 1) if txs else None,
                   "covered": round(cpu / needed, 3) if needed else None})
    if cpu < needed:
        result["status"] = "failed"
        return result, [f"work check: {txs} transactions need at least {needed:.3f} CPU-s of signature "
                        f"verification ({work['verifies_per_tx']} x {1e6 / rate:.1f} us), {result['basis']} "
                        f"spent {cpu:.3f} CPU-s"]
    result["status"] = "passed"
    return result, []


def run_primitives(run_dir: Path) -> dict:
    """The ECDSA verification rates measured in the run (``metadata.json`` ``primitives``)."""
    path = Path(run_dir) / "metadata.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text()).get("primitives") or {}


def measure_primitives(bin_dir: Path, duration: str = "1s") -> dict:
    """This machine's ECDSA-P256 verification rate (``bin/committerbench --ecdsa-verify-rate``)."""
    try:
        proc = subprocess.run([str(Path(bin_dir) / "committerbench"), "--ecdsa-verify-rate", "--ecdsa-duration",
                               duration], capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)[:300]}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip() or f"exit {proc.returncode}")[:300]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_point(point_dir: Path, point: dict, tables: dict[str, pd.DataFrame],
                blockfile_bin: Path | None = None) -> tuple[dict, list[str]]:
    """The point's ``validity`` section and every problem that fails it."""
    point_dir = Path(point_dir)
    rules = load_rules(point["system"])
    problems: list[str] = []
    section: dict = {"rules": rules["sources"]}

    counts, log_problems = scan_logs(point_dir, rules["log_patterns"], point.get("parameters") or {})
    section["log_counts"] = counts
    problems += log_problems

    codes, source = None, None
    blockfile_bin = blockfile_bin or REPO_ROOT / "bin" / "blockfile"
    if ledger_files(point_dir):
        if not blockfile_bin.is_file():
            problems.append(f"the point kept block files, but {blockfile_bin} is missing to decode them (invoke build)")
        else:
            codes, source = ledger_codes(point_dir, blockfile_bin)
    if codes is None and len(tables.get("block_txs", [])):
        codes = tables["block_txs"]
        source = "per-transaction codes the point recorded (block_txs)"
    if codes is None:
        # a system without validation codes says what its counts are (its validity.yaml `no_ledger`)
        section["counts_from"] = rules["no_ledger"] or "driver only: no ledger or per-transaction codes kept"
    else:
        section["counts_from"] = source
        section["ledger_valid"] = int((codes["validation_code"] == "VALID").sum())
        section["ledger_invalid"] = {k: int(v) for k, v in
                                     sorted(codes.loc[codes["validation_code"] != "VALID", "validation_code"]
                                            .value_counts().items())}
        for name, label in (("blocks", "driver's block log"), ("deliveries", "block watcher")):
            problems += cross_check(tables.get(name), codes, label, source)
        if len(tables.get("block_txs", [])) and source.startswith("block files"):
            problems += cross_check(_blocks_of(tables["block_txs"]), codes, "point's per-transaction codes", source)
        if len(tables.get("mutations", [])):
            section["mutations"], more = mutation_check(tables["mutations"], codes, source)
            problems += more

    # Without a timed section, the work owed is what the ledger says was validated (a driver's own
    # block log may list blocks it discarded unvalidated, FastFabric's Fig. 3/4 deliver client).
    owed = int((codes["validation_code"] != "NOT_VALIDATED").sum()) if codes is not None else None
    work, more = work_check(point_dir, rules["work"], run_primitives(point_dir.parent.parent), owed)
    if work:
        section["work"] = work
    problems += more
    section["problems"] = problems
    return section, problems


def _blocks_of(txs: pd.DataFrame) -> pd.DataFrame:
    """Per-block transaction and valid counts of per-transaction codes, in the driver's block-log columns."""
    return (txs.assign(ok=txs["validation_code"] == "VALID").groupby("block_number")
            .agg(tx_count=("ok", "size"), valid_count=("ok", "sum")).reset_index())
