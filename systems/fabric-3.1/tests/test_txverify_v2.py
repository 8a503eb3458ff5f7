"""Our verifier (bin/txverify, its v2 rules: internal/txverify/v2.go) on real Fabric v3.1.5 ledgers, as
harness/ledger.py runs it for every kept peer ledger of a fabric-3.1/fabric-2.5 point (validity.yaml
``verify: true``).

The ledgers are the Go tests' testdata (internal/txverify/testdata): blocks 0-4 of the peer's kept ledger of a
table1-today-bft smoke run's SmartBFT and Raft control points (2026-12-07: the genesis config block, the
_lifecycle approve and commit, money transfers), and its block 44, which holds two planted forged endorsements
and a planted stale read (the Go tests use it). A few seconds; the full smoke ledgers are checked by test_end_to_end.py's runs
(every point ledger-proven)."""

import csv
import gzip
import io
import json
import subprocess
from pathlib import Path

import pytest

from harness import ledger

REPO = Path(__file__).resolve().parents[3]
TXVERIFY = REPO / "bin" / "txverify"
TESTDATA = REPO / "internal" / "txverify" / "testdata"

pytestmark = pytest.mark.skipif(not TXVERIFY.is_file(), reason="bin/txverify is not built (invoke build)")


def run(*args) -> tuple[int, list[dict], dict, str]:
    proc = subprocess.run([str(TXVERIFY), *map(str, args)], capture_output=True, text=True, timeout=300)
    lines = proc.stderr.strip().splitlines()
    return proc.returncode, list(csv.DictReader(io.StringIO(proc.stdout))), json.loads(lines[-1]), proc.stderr


def unpack(name: str, tmp_path: Path) -> Path:
    out = tmp_path / name.removesuffix(".gz")
    out.write_bytes(gzip.decompress((TESTDATA / name).read_bytes()))
    return out


@pytest.mark.parametrize("name,txs,consensus", [("v31-bft-blocks0-4.gz", 187, "BFT"),
                                                ("v31-raft-blocks0-4.gz", 203, "etcdraft")])
def test_v2_rules_agree_with_the_v31_peer_on_every_transaction(name, txs, consensus, tmp_path):
    code, rows, summary, err = run(unpack(name, tmp_path))
    assert code == 0, err
    assert summary["rules"] == "v2" and summary["txs"] == summary["checked"] == summary["agree"] == txs, summary
    assert f"BlockValidation ({consensus})" in summary["source"], summary
    assert "_lifecycle definitions (money-transfer)" in summary["policy"], summary
    assert {(r["recorded_code"], r["derived_code"]) for r in rows} == {("VALID", "VALID")}
    # Fabric 1.2's rules do not model these ledgers: forced, they disagree (why v2's were needed)
    code, _, summary, _ = run("--rules", "v1", unpack(name, tmp_path))
    assert code == 3 and summary["disagree"] > 0 and "rules" not in summary


def test_a_changed_block_is_refused(tmp_path):
    """One byte of the last block's transactions changed: the block no longer matches its header (nor its
    orderers' signatures), and the verifier refuses the ledger (exit 1) rather than deriving codes for it. The
    planted forged endorsements and stale read of block 44 are found by the Go tests (the command checks the
    hash chain, which a prefix followed by block 44 breaks)."""
    prefix = unpack("v31-raft-blocks0-4.gz", tmp_path)
    raw = bytearray(prefix.read_bytes())
    raw[len(raw) - 60_000] ^= 0x01  # inside block 4's data (its record is the last ~120 KB)
    changed = tmp_path / "changed"
    changed.write_bytes(bytes(raw))
    code, _, summary, err = run(changed)
    assert code == 1 and summary.get("error"), err


def test_the_harness_verifies_a_v31_ledger_as_ledger_proven_input(tmp_path):
    """harness/ledger.py's verify on the Raft prefix: status agreed, the rules named in its section."""
    import pandas as pd
    path = unpack("v31-raft-blocks0-4.gz", tmp_path)
    codes = pd.DataFrame({"validation_code": ["VALID"] * 203})
    lg = ledger.Ledger(host="localhost", component="fabric3_peer", channel="mychannel", files=[path], codes=codes)
    section, problems = ledger.verify(lg, TXVERIFY, None, "test")
    assert problems == [] and section["status"] == "agreed" and section["rules"] == "v2", section
    assert section["checked"] == section["txs"] == 203
