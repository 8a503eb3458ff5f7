"""The driver ordering-bench's evidence (ordering_bench.py): the delivered chain, every envelope exactly once,
the orderers' kept ledger, and Fig. 6's metric; each check with its negative control. Unit tests (under 1 s),
except the last, an ``invoke reproduce`` of fig6-revisit-smartbft's SmartBFT column behind
FABRICREPRO_BUILD_TODAYS_FABRIC=all (about 3 min with its network's start on 2 cores)."""

import hashlib
import importlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def ob():
    from harness import systems
    systems.plugin("fabric-3.1")  # the loader roots the system's package
    return importlib.import_module("fabricrepro_systems.fabric_3_1.ordering_bench")


def h(n: int) -> str:
    return hashlib.sha256(str(n).encode()).hexdigest()


def chain(blocks: int = 4, per_block: int = 3, signatures: int = 3, dt_ns: int = 10**8) -> pd.DataFrame:
    """A well-formed delivered chain: genesis block 0 (one config transaction), then data blocks."""
    rows = [{"block_number": b, "arrival_ns": 10**9 + b * dt_ns, "tx_count": 1 if b == 0 else per_block,
             "data_hash_ok": 1, "previous_hash": "" if b == 0 else h(b - 1), "header_hash": h(b),
             "signatures": 0 if b == 0 else signatures} for b in range(blocks + 1)]
    return pd.DataFrame(rows)


def tables(blocks: int = 4, per_block: int = 3) -> dict:
    c = chain(blocks, per_block)
    bt = [{"block_number": 0, "tx_index": 0, "tx_id": "", "validation_code": "VALID"}]
    bt += [{"block_number": b, "tx_index": i, "tx_id": f"tx{b}-{i}", "validation_code": "VALID"}
           for b in range(1, blocks + 1) for i in range(per_block)]
    block_txs = pd.DataFrame(bt)
    ids = block_txs.loc[block_txs["block_number"] >= 1, "tx_id"].tolist()
    txs = pd.DataFrame({"tx_id": ids, "scheduled_ns": 1, "submitted_ns": 1, "acked_ns": 2, "status": "SUCCESS"})
    deliveries = c[["block_number", "arrival_ns", "tx_count"]].assign(valid_count=c["tx_count"], size_bytes=100)
    return {"ordering_chain": c, "block_txs": block_txs, "txs": txs, "deliveries": deliveries}


def test_a_good_chain_passes(ob):
    section, problems = ob.chain_problems(chain(), 3)
    assert problems == [] and section["blocks"] == 4 and section["min_signatures_seen"] == 3


@pytest.mark.parametrize("spoil, expect", [
    (lambda c: c.assign(previous_hash=c["previous_hash"].where(c["block_number"] != 3, h(99))), "previous hash"),
    (lambda c: c.assign(data_hash_ok=c["data_hash_ok"].where(c["block_number"] != 2, 0)), "data hash"),
    (lambda c: c[c["block_number"] != 2], "missing"),
    (lambda c: pd.concat([c, c[c["block_number"] == 2]]), "more than once"),
    (lambda c: c.assign(signatures=c["signatures"].where(c["block_number"] != 4, 2)), "fewer than 3 signatures"),
    (lambda c: c[c["block_number"] != 0], "not at the genesis block"),
    (lambda c: c.iloc[0:0], "no chain"),
])
def test_a_broken_chain_fails(ob, spoil, expect):
    """Negative controls: a forged link, a block whose envelopes do not hash to its header, a gap, a block
    twice, too few signatures for SmartBFT's quorum, a chain not anchored at the genesis block, none at all."""
    _, problems = ob.chain_problems(spoil(chain()), 3)
    assert any(expect in p for p in problems), problems


def test_every_envelope_exactly_once_passes(ob):
    section, problems = ob.envelope_problems(tables())
    assert problems == [] and section == {"sent": 12, "acknowledged": 12, "delivered": 12, "distinct_delivered": 12}


def _drop_one(t):
    t["block_txs"] = t["block_txs"].drop(index=5)


def _twice(t):
    t["block_txs"] = pd.concat([t["block_txs"], t["block_txs"].iloc[[5]].assign(tx_index=3)], ignore_index=True)


def _foreign(t):
    t["block_txs"].loc[5, "tx_id"] = "not-sent"


def _refused(t):
    t["txs"].loc[0, "status"] = "FORBIDDEN"


def _miscounted(t):
    t["deliveries"].loc[2, "tx_count"] = 4


def _no_txs(t):
    del t["txs"]


@pytest.mark.parametrize("spoil, expect", [
    (_drop_one, "never delivered"), (_twice, "more than once"), (_foreign, "never sent"),
    (_refused, "not acknowledged"), (_miscounted, "deliveries counts 4"), (_no_txs, "no txs table"),
])
def test_a_missing_duplicated_or_foreign_envelope_fails(ob, spoil, expect):
    t = tables()
    spoil(t)
    _, problems = ob.envelope_problems(t)
    assert any(expect in p for p in problems), problems


def fake_blockfile(tmp_path: Path, body: str) -> Path:
    """A TEST DOUBLE of bin/blockfile: prints ``body`` (the --txs CSV) or, for an 'ERROR' body, fails as the
    real one does on a broken chain."""
    path = tmp_path / "blockfile"
    if body == "ERROR":
        path.write_text("#!/bin/sh\necho 'chain: block 2: previous hash is not block 1' >&2\nexit 1\n")
    else:
        path.write_text("#!/bin/sh\ncat <<'EOF'\n" + body + "EOF\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def ledger_csv(t: dict) -> str:
    return t["block_txs"][["block_number", "tx_index", "tx_id"]].assign(validation_code="NOT_VALIDATED") \
        .to_csv(index=False)


def point_with_ledger(tmp_path: Path, ordering: str = "BFT") -> Path:
    point = tmp_path / "point"
    ledger = point / "raw" / "localhost" / "blocks" / "ordering_bench_ledger" / "ch"
    ledger.mkdir(parents=True)
    (ledger / "blockfile_000000").write_bytes(b"x")
    (point / "logs").mkdir()
    (point / "logs" / "ansible-run.vars.json").write_text(json.dumps({"fabric3_network_consensus": ordering}))
    return point


def test_the_kept_ledger_is_held_against_the_delivered_blocks(ob, tmp_path):
    t = tables()
    point = point_with_ledger(tmp_path)
    section, problems = ob.ledger_problems(point, t["block_txs"], fake_blockfile(tmp_path, ledger_csv(t)))
    assert problems == [] and section["ledgers"][0]["transactions"] == 13
    # negative controls: the ledger holds another transaction; it ends early; it does not decode; none was kept
    other = t["block_txs"].copy()
    other.loc[7, "tx_id"] = "else"
    _, problems = ob.ledger_problems(point, t["block_txs"], fake_blockfile(tmp_path, ledger_csv({"block_txs": other})))
    assert any("differ at 1 place" in p for p in problems), problems
    short = t["block_txs"][t["block_txs"]["block_number"] <= 2]
    _, problems = ob.ledger_problems(point, t["block_txs"], fake_blockfile(tmp_path, ledger_csv({"block_txs": short})))
    assert any("ends at block 2" in p for p in problems), problems
    _, problems = ob.ledger_problems(point, t["block_txs"], fake_blockfile(tmp_path, "ERROR"))
    assert any("previous hash" in p for p in problems), problems
    _, problems = ob.ledger_problems(tmp_path / "empty", t["block_txs"], fake_blockfile(tmp_path, ledger_csv(t)))
    assert any("no kept block files" in p for p in problems), problems


def test_the_check_needs_the_ordering_service(ob, tmp_path):
    t = tables()
    point = point_with_ledger(tmp_path, ordering="BFT")
    bf = fake_blockfile(tmp_path, ledger_csv(t))
    section, problems = ob.check(point, t, bf)
    assert problems == [] and section["chain"]["min_signatures_required"] == 3
    (point / "logs" / "ansible-run.vars.json").write_text("{}")
    _, problems = ob.check(point, t, bf)
    assert any("ordering service" in p for p in problems), problems


def test_fig6_metric_from_the_delivered_blocks(ob):
    # 4 data blocks of 3 envelopes, 0.1 s apart: blocks 2-4's 9 envelopes over 0.3 s
    # (the genesis block 0 opens nothing)
    c = chain(blocks=4, per_block=3)
    assert ob.throughput(c) == pytest.approx(30.0)
    assert ob.blocks_per_s(c) == pytest.approx(10.0)
    assert pd.isna(ob.throughput(c[c["block_number"] <= 1]))


def test_the_chain_table_is_read_whole_and_its_header_checked(ob, tmp_path):
    raw = tmp_path / "raw" / "localhost"
    raw.mkdir(parents=True)
    assert ob.parse_chain(tmp_path) is None
    chain().to_csv(raw / "ordering_chain.csv", index=False)
    t = ob.parse_chain(tmp_path)
    assert list(t["block_number"]) == [0, 1, 2, 3, 4] and t.loc[0, "previous_hash"] == "" and t.loc[0, "host"] == "localhost"
    chain().rename(columns={"signatures": "sigs"}).to_csv(raw / "ordering_chain.csv", index=False)
    from harness.plugin_api import HarnessError
    with pytest.raises(HarnessError):
        ob.parse_chain(tmp_path)


def test_the_plugin_declares_table_metric_and_check():
    from harness import analyze, systems
    assert "ordering_chain" in systems.tables()
    assert systems.independent_check("fabric-3.1", "ordering-chain").name == "ordering-chain"
    assert "delivered_envelopes_tps@ordering_chain" in analyze.all_metrics()


@pytest.mark.integration
@pytest.mark.network
@pytest.mark.skipif(os.environ.get("FABRICREPRO_BUILD_TODAYS_FABRIC") not in ("1", "all"),
                    reason="a SmartBFT ordering-bench point with its network's start takes about 3 min on 2 cores, "
                           "over CI's budget: set FABRICREPRO_BUILD_TODAYS_FABRIC=all")
def test_smartbft_ordering_bench_points_pass_validity(fabric31_build, tmp_path):
    env = {**os.environ, "FABRICREPRO_RESULTS": str(tmp_path / "results"),
           "FABRICREPRO_REPORTS": str(tmp_path / "reports")}
    r = subprocess.run([sys.executable, "-m", "invoke", "reproduce", "--paper", "bftsmart-orderer", "--experiment",
                        "fig6-revisit-smartbft", "--build", "upstream", "--variant", "smartbft",
                        "--set", "block_size=10", "--set", "envelope_bytes=200", "--set", "transactions=1000"],
                       capture_output=True, text=True, timeout=900, cwd=REPO, env=env)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    (run,) = [d for d in (tmp_path / "results" / "bftsmart-orderer" / "fig6-revisit-smartbft").iterdir()
              if not d.is_symlink()]
    (point,) = list((run / "points").iterdir())
    s = json.loads((point / "summary.json").read_text())
    assert s["status"] == "complete" and s["valid"], (s.get("reason"), s["validity"])
    check = s["validity"]["independent_check"]
    assert s["validity"]["evidence"] == "independent check" and check["status"] == "passed", check
    assert check["envelopes"]["delivered"] == check["envelopes"]["distinct_delivered"] == 1000, check
    assert check["chain"]["min_signatures_seen"] >= 3 and check["kept_ledger"]["ledgers"], check
    assert s["metrics"]["delivered_envelopes_tps"] > 0
