"""Caliper beside our numbers (README "Caliper beside our numbers", lab 07): a smoke-sized point of
table1-today-raft's v3.1 column with ``caliper_transactions``: after our load generator's measured transfers,
Hyperledger Caliper 0.6.0 (binding fabric:2.4, the peer's Gateway service; roles/fabric3_caliper) sends the same
transfers on the same network. Caliper's report is kept in the point, its successes are exactly the valid
transactions the kept ledger holds after our measured window, the transfers beyond the setup's accounts are
Caliper failures that never reach the ledger, our metric is unchanged by its round (the point passes every
validity check), and the report renders the side-by-side table. No control point (the v3.1 end-to-end test
proves the checks); about 1.5 min here, plus npm's install of Caliper into build/ the first time (1.5 min)."""

import json
import shutil

import pytest

from harness.report.caliper import caliper_point
from harness.systems import plugin

plugin("fabric-3.1")  # registers the package fabricrepro_systems.fabric_3_1
from fabricrepro_systems.fabric_3_1.tests.test_end_to_end import TRANSFERS, points, reproduce  # noqa: E402

#: Caliper's round: every pair of accounts our load generator's setup created (2 per transfer), and 20 more
#: transfers naming accounts nobody created (refused at endorsement: Caliper failures, never in a block).
CALIPER = TRANSFERS + 20

pytestmark = [pytest.mark.integration, pytest.mark.network,
              pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None,
                                 reason="node and npm are not installed (invoke setup installs them)")]


def test_caliper_round_beside_our_load_generator_and_the_ledger(fabric31_build, tmp_path):
    run = reproduce(tmp_path, "table1-today-raft", "--variant", "fabric-3.1-raft", "--no-control",
                    "--set", f"caliper_transactions={CALIPER}")
    (name, summary), = points(run).items()
    assert summary["status"] == "complete" and summary["valid"], (summary.get("reason"), summary["validity"])
    point = run / "points" / name
    measured = json.loads((point / "measured.json").read_text())
    # our window is our load generator's alone
    assert measured["transfer_transactions"] == measured["transfer_valid"] == TRANSFERS, measured
    assert summary["metrics"]["delivery_throughput_tps"] > 0
    assert (point / "caliper" / "report.html").stat().st_size > 0

    found = caliper_point(point)
    c, ledger = found["caliper"], found["ledger"]
    assert c["Name"] == "transfer" and c["Succ"] == TRANSFERS and c["Fail"] == CALIPER - TRANSFERS, c
    # what Caliper called a success is what the ledger holds valid after our window, and nothing else is there
    assert ledger["valid"] == ledger["transactions"] == TRANSFERS and ledger["invalid"] == {}, ledger
    assert ledger["blocks"][0] > measured["last_block"]
    # Caliper's throughput counts its failures; the ledger's valid over Caliper's window does not
    assert found["ledger_valid_tps"] == pytest.approx(c["Throughput (TPS)"] * TRANSFERS / CALIPER, rel=0.01)
    # the whole ledger: genesis, approve and commit, 2 creates and 1 transfer per transfer, then Caliper's
    assert summary["validity"]["ledger_valid"] == 1 + 2 + 3 * TRANSFERS + TRANSFERS, summary["validity"]

    report = (tmp_path / "reports" / "fastfabric" / "report.md").read_text()
    assert "**Caliper beside our numbers**" in report and "Caliper: throughput (TPS, as reported)" in report
