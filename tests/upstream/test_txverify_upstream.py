"""Our own verifier (cmd/txverify) on a ledger the published Fabric v1.2.0 code made.

Our Fabric 1.2 peer benchmark (systems/fabric-1.2 patches 0003, 0004: Fabric v1.2.0's own
TxValidator and ledger) commits a channel's genesis block (configtxtest.MakeGenesisBlock: the
sample MSP SampleOrg), the chaincode definition (lscc, policy: any member of SampleOrg), one block of
account creations and 4 blocks of 100 transfers with 3 bad creator signatures, 3 forged
endorsements and 3 stale reads, then (patch 0005) its floor section's creations and transfers. bin/txverify must derive, from the block files alone and with
none of the upstream code, the code v1.2.0 recorded for every transaction; one byte of a recorded
TRANSACTIONS_FILTER changed must make it exit 3 naming that transaction.

The benchmark is run directly (no Ansible): what a peer-bench point keeps under
raw/<host>/blocks/ are these same block files. Skipped with the reason when the v1.2.0 source
snapshot (../shared/upstream) or Go is not at hand, or bin/txverify is not built.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from harness import REPO_ROOT, upstream

from tests.upstream import needs

TXVERIFY = REPO_ROOT / "bin" / "txverify"
BLOCKS, BLOCK_SIZE, FRACTION = 4, 100, 0.0075  # 3 of each mutation in 400 transfers
CODE = {"bad_creator": "BAD_CREATOR_SIGNATURE", "bad_endorsement": "ENDORSEMENT_POLICY_FAILURE",
        "stale_read": "MVCC_READ_CONFLICT"}

REASON = needs.missing(("go",), "fabric-1.2", "Fabric 1.2") or (
    None if TXVERIFY.is_file() else "bin/txverify is not built (invoke build)")
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def peerbench_ledger(work: Path) -> tuple[list[Path], dict[str, str]]:
    """Run the upstream peer benchmark with mutations; its block files and mutations (tx ID -> kind)."""
    build = upstream.build("fabric-1.2", "snapshot").path
    env = dict(os.environ, GOPATH=str(build / "gopath"), CORE_PEER_FILESYSTEMPATH=str(work / "ledger"))
    out = subprocess.run([str(build / "bin" / "peerbench"), "-channel=mychannel", f"-blocksize={BLOCK_SIZE}",
                          f"-blocks={BLOCKS}", f"-outdir={work}", f"-mutationlog={work / 'mutations.csv'}",
                          f"-corrupt-creator={FRACTION}", f"-corrupt-endorsement={FRACTION}",
                          f"-stale-read={FRACTION}"],
                         env=env, cwd=work, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "All transactions successfully committed" in out.stdout
    files = sorted((work / "ledger").glob("**/chains/mychannel/blockfile_*"))
    assert files, f"no block files under {work / 'ledger'}"
    with open(work / "mutations.csv") as f:
        mutations = {r["tx_id"]: r["mutation"] for r in csv.DictReader(f)}
    return files, mutations


def txverify(*args) -> tuple[int, list[dict], dict, str]:
    """Run bin/txverify; exit status, CSV rows, the stderr JSON summary, stderr."""
    p = subprocess.run([str(TXVERIFY), *map(str, args)], capture_output=True, text=True, timeout=600)
    summary = json.loads(p.stderr.strip().splitlines()[-1])
    return p.returncode, list(csv.DictReader(io.StringIO(p.stdout))), summary, p.stderr


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    x = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        x |= (b & 0x7F) << shift
        if b < 0x80:
            return x, pos
        shift += 7


def filter_offset(data: bytes, block_number: int) -> int:
    """Where the TRANSACTIONS_FILTER (metadata entry 2) of a block starts in a Fabric 1.x block file:
    each record is a varint length and Fabric's own encoding (block number, data hash, previous hash,
    envelopes, metadata entries; common/ledger/blkstorage/fsblkstorage/block_serialization.go)."""
    pos = 0
    while pos < len(data):
        length, pos = _uvarint(data, pos)
        end = pos + length
        number, p = _uvarint(data, pos)
        for _ in range(2):  # data hash, previous hash
            n, p = _uvarint(data, p)
            p += n
        count, p = _uvarint(data, p)
        for _ in range(count):
            n, p = _uvarint(data, p)
            p += n
        entries, p = _uvarint(data, p)
        for i in range(entries):
            n, p = _uvarint(data, p)
            if number == block_number and i == 2:
                return p
            p += n
        pos = end
    raise ValueError(f"block {block_number} not found")


def test_txverify_derives_every_code_fabric_v120_recorded(tmp_path):
    files, mutations = peerbench_ledger(tmp_path)
    code, rows, summary, err = txverify(*files)
    assert code == 0, err[-3000:]
    timed = BLOCKS * 2 * BLOCK_SIZE // BLOCK_SIZE + BLOCKS * BLOCK_SIZE  # the creations and the transfers
    # genesis, lscc, the timed section's creations and transfers, then patch 0005's floor section: as many of its
    # own, validated with the signature checks answered (never mutated: all VALID)
    total = 1 + 1 + 2 * timed
    assert summary["txs"] == summary["checked"] == summary["agree"] == total, summary
    assert summary["disagree"] == 0
    assert summary["source"] == "config block 0" and summary["msps"] == ["SampleOrg"], summary
    assert "lscc definitions (PaymentApp)" in summary["policy"], summary
    assert all(r["recorded_code"] == r["derived_code"] for r in rows)
    assert Counter(r["derived_code"] for r in rows) == {
        "VALID": total - 9, "BAD_CREATOR_SIGNATURE": 3, "ENDORSEMENT_POLICY_FAILURE": 3, "MVCC_READ_CONFLICT": 3}
    assert len(mutations) == 9
    for r in rows:
        assert r["derived_code"] == CODE.get(mutations.get(r["tx_id"], ""), "VALID"), r

    # A sample agrees too and checks every recorded-invalid transaction.
    code, rows, summary, err = txverify("--sample", "0.1", "--seed", "1", *files)
    assert code == 0, err[-3000:]
    assert Counter(r["recorded_code"] for r in rows if r["recorded_code"] != "VALID") == {
        "BAD_CREATOR_SIGNATURE": 3, "ENDORSEMENT_POLICY_FAILURE": 3, "MVCC_READ_CONFLICT": 3}
    assert summary["checked"] < total

    # Negative control: one transfer of the last block recorded MVCC_READ_CONFLICT instead of VALID.
    last = 2 + BLOCKS  # blocks: genesis, lscc, creations, then the transfers
    copy = tmp_path / "flipped" / files[-1].name
    copy.parent.mkdir()
    shutil.copyfile(files[-1], copy)
    data = bytearray(copy.read_bytes())
    start = filter_offset(bytes(data), last)
    victim = next(i for i in range(BLOCK_SIZE) if data[start + i] == 0)
    data[start + victim] = 11  # MVCC_READ_CONFLICT
    copy.write_bytes(bytes(data))
    code, rows, summary, err = txverify(*files[:-1], copy)
    assert code == 3, err[-3000:]
    assert summary["disagree"] == 1
    (row,) = [r for r in rows if r["recorded_code"] != r["derived_code"]]
    assert (int(row["block_number"]), int(row["tx_index"]), row["recorded_code"], row["derived_code"]) == (
        last, victim, "MVCC_READ_CONFLICT", "VALID")
    assert f"disagree: block {last} tx {victim}" in err
