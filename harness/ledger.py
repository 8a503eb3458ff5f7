"""A point's kept ledgers, and the driver's counts held against them block by block.

The second source of every Fabric-family point's count (harness/validity.py
calls this module; docs/validity.md says what each check can and cannot see):

* **Kept ledgers.** ``raw/<host>/blocks/<component>/<channel>/blockfile_*``,
  fetched at teardown, decoded by ``bin/blockfile --txs`` (each
  transaction's code from the block's TRANSACTIONS_FILTER). A file that ends
  in a cut record, a broken chain or a file that does not decode fails the
  point; a ledger is never read "up to where it still makes sense".
* **Every block on both sides, per host.** Each of a driver's per-block rows
  (the peer's block log, the block watcher's deliveries, the recorded
  per-transaction codes), host by host, must name a block the ledger holds,
  with the ledger's transaction and valid counts; a block the ledger holds
  inside the range a host reported must be in that host's rows; a block
  reported twice by one host with different counts fails.
* **Our own verifier.** ``bin/txverify`` re-derives each kept transaction's
  code from its bytes (creator and endorsement signatures against the MSPs of
  the ledger's config block, the endorsement policy, MVCC over the block
  sequence) with this repository's code, not the system's, and must agree
  with the recorded code transaction by transaction. It models Fabric 1.2's
  committer, or v2.x/v3.x's where the ledger's config block carries a V2_0 or
  later capability (and then also checks every block's orderer signatures);
  the section names ``rules: v2`` then.
"""

from __future__ import annotations

import json
import subprocess
import time
import zlib
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pandas as pd

from .errors import HarnessError
from .upstream_source import sha256_file

#: A ledger with more transactions than this is verified on a sample (every transaction the ledger marks
#: invalid, plus a deterministic random share that checks about this many in all).
VERIFY_ALL_UP_TO = 20_000


@dataclass
class Ledger:
    """One kept ledger: where it was, its files and every transaction's code."""
    host: str
    component: str
    channel: str
    files: list[Path]
    codes: pd.DataFrame

    @property
    def key(self) -> str:
        return f"{self.host}/{self.component}/{self.channel}"

    @property
    def validated(self) -> bool:
        """Whether a committer validated it (a peer's); an orderer's blocks carry no codes."""
        return bool(len(self.codes)) and bool((self.codes["validation_code"] != "NOT_VALIDATED").any())


def ledger_files(point_dir: Path) -> dict[tuple[str, str, str], list[Path]]:
    """Each kept ledger's block files in order, by (host, component, channel)."""
    ledgers: dict[tuple[str, str, str], list[Path]] = {}
    for f in sorted(Path(point_dir).glob("raw/*/blocks/*/*/blockfile_*")):
        host, _, component, channel = f.relative_to(Path(point_dir) / "raw").parts[:4]
        ledgers.setdefault((host, component, channel), []).append(f)
    return ledgers


def decode_ledger(files: list[Path], blockfile_bin: Path) -> pd.DataFrame:
    """Every transaction's code in one ledger's block files (``bin/blockfile --txs``); an error names the
    file and what is wrong with it (a cut record, a broken chain, bytes that are not a block)."""
    proc = subprocess.run([str(blockfile_bin), "--txs", *map(str, files)], capture_output=True, text=True,
                          timeout=600, check=False)
    if proc.returncode != 0:
        raise HarnessError(f"bin/blockfile --txs {files[0].parent}: {proc.stderr.strip() or proc.returncode}")
    return pd.read_csv(StringIO(proc.stdout), dtype={"tx_id": "string", "validation_code": "string"},
                       keep_default_na=False)


def kept_ledgers(point_dir: Path, blockfile_bin: Path) -> list[Ledger]:
    """Every kept ledger of the point, decoded."""
    return [Ledger(host, component, channel, files, decode_ledger(files, blockfile_bin))
            for (host, component, channel), files in ledger_files(point_dir).items()]


def agreed_codes(ledgers: list[Ledger]) -> tuple[pd.DataFrame | None, str | None]:
    """The codes of the validated ledgers, which must agree on every transaction they share, as one
    table over the union of their blocks; and a description of the source. None when none validated.

    Several peers' ledgers can be kept (FastFabric's storage server and its endorser, which stores only
    the blocks before its first endorsement): each block's codes come from the ledger holding the most
    transactions that has it."""
    validated = sorted((lg for lg in ledgers if lg.validated), key=lambda lg: (-len(lg.codes), lg.key))
    if not validated:
        return None, None
    codes = validated[0].codes
    for other in validated[1:]:
        merged = codes.merge(other.codes, on=["block_number", "tx_index"], suffixes=("", "_other"))
        differ = merged[(merged["validation_code"] != merged["validation_code_other"])
                        | (merged["tx_id"] != merged["tx_id_other"])]
        if len(differ):
            r = differ.iloc[0]
            raise HarnessError(f"ledgers {validated[0].key} and {other.key} disagree on block {r['block_number']} "
                               f"tx {r['tx_index']}: {r['tx_id']} {r['validation_code']} vs "
                               f"{r['tx_id_other']} {r['validation_code_other']}")
        extra = other.codes[~other.codes["block_number"].isin(codes["block_number"])]
        if len(extra):
            codes = pd.concat([codes, extra], ignore_index=True).sort_values(["block_number", "tx_index"])
    names = ", ".join(lg.key for lg in validated)
    return codes.reset_index(drop=True), f"block files of {names}"


def per_block(codes: pd.DataFrame) -> pd.DataFrame:
    """Transactions and VALID transactions per block number of per-transaction codes."""
    return (codes.assign(ok=codes["validation_code"] == "VALID").groupby("block_number")
            .agg(tx_count=("ok", "size"), valid_count=("ok", "sum")).astype(int))


def cross_check(driver_blocks: pd.DataFrame | None, codes: pd.DataFrame, driver: str, source: str) -> list[str]:
    """A driver's per-block rows against the codes, host by host; one problem line per kind of difference,
    naming the first block and host it concerns."""
    if driver_blocks is None or not len(driver_blocks):
        return []
    ledger = per_block(codes)
    rows = driver_blocks if "host" in driver_blocks else driver_blocks.assign(host="-")
    problems = []
    for host, mine in rows.groupby("host", sort=True):
        mine = mine.drop_duplicates(["block_number", "tx_count", "valid_count"])
        twice = mine[mine["block_number"].duplicated(keep=False)]
        if len(twice):
            b = int(twice["block_number"].iloc[0])
            problems.append(f"the {driver} on host {host} reports block {b} {int((twice['block_number'] == b).sum())} "
                            f"times with different counts ({len(twice['block_number'].unique())} block(s) so)")
            mine = mine.drop_duplicates("block_number")
        absent = mine[~mine["block_number"].isin(ledger.index)]
        if len(absent):
            problems.append(f"{len(absent)} block(s) the {driver} on host {host} reports are not in the {source} "
                            f"(first: block {int(absent['block_number'].iloc[0])}, "
                            f"{int(absent['valid_count'].iloc[0])} valid by the {driver})")
        both = mine[mine["block_number"].isin(ledger.index)]
        if len(both):
            want = ledger.loc[both["block_number"]]
            differ = both[(both["valid_count"].to_numpy() != want["valid_count"].to_numpy())
                          | (both["tx_count"].to_numpy() != want["tx_count"].to_numpy())]
            if len(differ):
                r = differ.iloc[0]
                w = ledger.loc[r["block_number"]]
                problems.append(
                    f"the {driver} on host {host} counts {int(both['valid_count'].sum())} valid of "
                    f"{int(both['tx_count'].sum())} transactions in blocks {int(both['block_number'].min())}-"
                    f"{int(both['block_number'].max())}, the {source} {int(want['valid_count'].sum())} of "
                    f"{int(want['tx_count'].sum())} ({len(differ)} block(s) differ, first block "
                    f"{int(r['block_number'])}: {int(r['valid_count'])}/{int(r['tx_count'])} vs "
                    f"{int(w['valid_count'])}/{int(w['tx_count'])} valid/transactions)")
            low, high = int(mine["block_number"].min()), int(mine["block_number"].max())
            inside = ledger.index[(ledger.index >= low) & (ledger.index <= high)]
            missing = sorted(set(inside) - set(mine["block_number"]))
            if missing:
                problems.append(f"{len(missing)} block(s) of the {source} inside blocks {low}-{high} are missing "
                                f"from the {driver} on host {host} (first: block {missing[0]})")
    return problems


def blocks_of(txs: pd.DataFrame) -> pd.DataFrame:
    """Per-block rows of per-transaction codes (keeping ``host``), in the driver's block-log columns."""
    keys = ["host", "block_number"] if "host" in txs else ["block_number"]
    return (txs.assign(ok=txs["validation_code"] == "VALID").groupby(keys)
            .agg(tx_count=("ok", "size"), valid_count=("ok", "sum")).reset_index())


def owed_transactions(codes: pd.DataFrame, blocks: list[int] | None = None) -> int:
    """How many transactions the ledger says a committer validated (all blocks, or the given ones)."""
    validated = codes[codes["validation_code"] != "NOT_VALIDATED"]
    if blocks is not None:
        validated = validated[validated["block_number"].isin(blocks)]
    return int(len(validated))


def fingerprint(ledger: Ledger, txverify_bin: Path, policy: str | None, msp_dirs: list[str]) -> dict:
    """What a stored verifier result was computed from: each block file's name and content (SHA-256: a file
    changed with its size and time restored is another file), the verifier's version (the SHA-256 of
    ``bin/txverify``: a rebuilt verifier checks anew), the policy and the MSP directories."""
    return {"files": [[f.name, sha256_file(f)] for f in ledger.files],
            "verifier": sha256_file(txverify_bin) if Path(txverify_bin).is_file() else None,
            "policy": policy, "msp_dirs": list(msp_dirs)}


def verify(ledger: Ledger, txverify_bin: Path, policy: str | None, seed_text: str,
           cache: Path | None = None, msp_dirs: list[str] = ()) -> tuple[dict, list[str]]:
    """Our verifier's codes for one kept ledger against the codes it recorded: (section, problems).

    A ledger above ``VERIFY_ALL_UP_TO`` transactions is verified on a sample: every transaction it marks
    invalid and a random share seeded by ``seed_text`` (the point's id), stated in the section.
    ``msp_dirs`` (``MSPID=DIR``) give the MSPs where the ledger holds no config block. With
    ``cache`` (a JSON file of the point) a result stored for the same block files' content, the same
    verifier and the same policy is reused (``fingerprint``): a report re-renders without re-verifying;
    ``invoke verify`` passes none and always verifies."""
    try:
        stored = json.loads(cache.read_text()) if cache is not None and cache.is_file() else {}
    except json.JSONDecodeError:
        stored = {}
    stored = stored if isinstance(stored, dict) else {}
    key = fingerprint(ledger, txverify_bin, policy, list(msp_dirs)) if cache is not None else None
    entry = stored.get(ledger.key)
    if key is not None and key["verifier"] is not None and isinstance(entry, dict) and entry.get("fingerprint") == key:
        return entry["section"], entry["problems"]
    section, problems = _run_verifier(ledger, txverify_bin, policy, seed_text, list(msp_dirs))
    if cache is not None and section.get("status") in ("agreed", "failed"):
        stored[ledger.key] = {"fingerprint": key, "section": section, "problems": problems}
        cache.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
    return section, problems


def _run_verifier(ledger: Ledger, txverify_bin: Path, policy: str | None, seed_text: str,
                  msp_dirs: list[str]) -> tuple[dict, list[str]]:
    if not Path(txverify_bin).is_file():
        return {"status": "not run"}, [f"{txverify_bin} is missing to verify the ledger {ledger.key} (invoke build)"]
    cmd = [str(txverify_bin)]
    if policy:
        cmd += ["--policy", policy]
    for msp in msp_dirs:
        cmd += ["--msp-dir", msp]
    n = len(ledger.codes)
    sample = None if n <= VERIFY_ALL_UP_TO else round(VERIFY_ALL_UP_TO / n, 6)
    if sample:
        cmd += ["--sample", str(sample), "--seed", str(zlib.crc32(seed_text.encode()))]
    started = time.monotonic()
    proc = subprocess.run([*cmd, *map(str, ledger.files)], capture_output=True, text=True, timeout=1800,
                          check=False)
    wall = time.monotonic() - started
    lines = proc.stderr.strip().splitlines()
    try:
        summary = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        summary = {}
    section = {"ledger": ledger.key, "sample": sample, "seconds": round(wall, 3),
               **{k: summary.get(k) for k in ("txs", "checked", "agree", "disagree")},
               # the committer's rules it modelled (txverify --rules auto: "v2" for a v2.x/v3.x ledger); a
               # Fabric 1.2 ledger's summary names none
               **({"rules": summary["rules"]} if summary.get("rules") else {})}
    if proc.returncode not in (0, 3) or not summary:
        return {**section, "status": "failed"}, [
            f"our verifier could not check the ledger {ledger.key}: "
            f"{(proc.stderr.strip().splitlines() or [f'exit {proc.returncode}'])[-1][:300]}"]
    rows = pd.read_csv(StringIO(proc.stdout), dtype={"tx_id": "string"}, keep_default_na=False)
    differ = rows[rows["recorded_code"] != rows["derived_code"]]
    problems = []
    if proc.returncode == 3 or len(differ):
        r = differ.iloc[0] if len(differ) else None
        problems.append(f"our verifier disagrees with the ledger {ledger.key} on {len(differ)} of {len(rows)} "
                        "checked transactions" + (f" (first: block {r['block_number']} tx {r['tx_index']} recorded "
                                                  f"{r['recorded_code']}, derived {r['derived_code']})"
                                                  if r is not None else ""))
    elif not len(rows) or int(summary.get("checked") or 0) != len(rows):
        problems.append(f"our verifier checked {summary.get('checked')} transactions of the ledger {ledger.key} "
                        f"but listed {len(rows)}")
    section["status"] = "failed" if problems else "agreed"
    if summary.get("txs"):
        section["seconds_per_10k_txs"] = round(wall / int(summary["checked"] or 1) * 10_000, 3)
    return section, problems
